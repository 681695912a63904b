// The viewer: the hierarchy as a tree (from the root's consolidated metadata) and, for a
// chosen product and field, a map of its HEALPix cells coloured by value (plate carrée, or
// azimuthal about a pole: projection.js), over Natural Earth's coastlines, with a locator
// of the view on the world when the view is small. It draws one order of the product whole
// (overview(): as fine as a map of the world shows, within the budget), else the coverage
// (the nodes of the finest order), and for the view reads only the blocks of rows of the
// finest order whose cells are at least MIN_CELL_PX wide and whose visible blocks hold at
// most budget() cells (levels.js: by Range requests where the chunks are plain bytes, else
// whole chunks); at most MAX_IN_FLIGHT requests are in flight.
import * as zarr from "zarrita";
import { landRings } from "./coast.js";
import { cellAt, centre } from "./healpix.js";
import { PROJECTIONS, azimuthalBounds, projectionOf } from "./projection.js";
import {
  blocksFor, cellBox, continuousOutline, coveredNodes, limitedFetch, openLevel, readBlocks, rowOfCell,
  visibleNodes,
} from "./levels.js";

const params = new URLSearchParams(location.search);
const MIN_CELL_PX = 4; // refine while a cell of the finer order is at least this wide
const LIMIT = Number(params.get("max_cells")) || Infinity; // ?max_cells= lowers the budget

/** The most cells one view reads of one order: 4 times as many as the canvas holds at
 * MIN_CELL_PX wide (chunks rarely fit the view), at least 50,000, at most ?max_cells=. */
function budget() {
  return Math.min(LIMIT, Math.max(50_000, (4 * canvas.width * canvas.height) / MIN_CELL_PX ** 2));
}
const BINS = 64; // colours per frame
const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962",
  "#addc30", "#fde725"].map((h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)));
const CELL_KINDS = /^(u?int(8|16|32|64)|float(16|32|64))$/;
const COAST = "#404040";
const LAND = "#f3f1ea";
const SEA = "#e8edf2";
const LOCATOR_SPAN = 90; // a view narrower than this (degrees of longitude) has a locator
const MIN_SPAN = 20; // the first view spans at least this many degrees: coastlines to place it
const $ = (id) => document.getElementById(id);

const net = limitedFetch();
const started = performance.now();
const opened = await net.fetch(new Request("zarr.json"));
const openedTag = opened.headers.get("etag"); // the hierarchy this page shows
const rootBytes = new Uint8Array(await opened.arrayBuffer());
const meta = JSON.parse(new TextDecoder().decode(rootBytes));
const nodes = new Map(Object.entries(meta.consolidated_metadata?.metadata ?? {})); // path -> metadata
const fetchStore = new zarr.FetchStore(new URL(".", location.href).href, { fetch: net.fetch });
const rootStore = { // the root document already read, the rest through the limited fetch
  get: (key, options) => (key === "/zarr.json" ? Promise.resolve(rootBytes) : fetchStore.get(key, options)),
  getRange: (key, range, options) => fetchStore.getRange(key, range, options),
};
const root = zarr.root(await zarr.withConsolidatedMetadata(rootStore, { format: "v3" }));
const land = landRings("./.static/vendor/world-atlas/land-110m.json");

const state = {
  product: null, field: null, order: null, window: 0, view: null, drawn: 0, mode: null,
  legend: null, read: [], unit: null, first: null, complete: null, ticket: 0, levels: new Map(),
  plan: null, land: [],
};
const canvas = $("map");
const ctx = canvas.getContext("2d");
let controller = new AbortController();

function status(text) { $("status").textContent = text; }

/** The orders of `product` whose group holds `field`, ascending. */
function ordersOf(product, field) {
  const orders = [];
  for (const path of nodes.keys()) {
    const m = path.match(/^(.*)\/o(\d+)\/([^/]+)$/);
    if (m && m[1] === product && m[3] === field) orders.push(Number(m[2]));
  }
  return orders.sort((a, b) => a - b);
}

/** Why the map cannot draw array `path` (null: it can: numeric along "cells"). */
function undrawable(path, node) {
  const dims = node.dimension_names ?? [];
  const name = path.split("/").pop();
  if (["morton", "cell_ids"].includes(name)) return "a coordinate (the cells' ids)";
  if (dims.at(-1) !== "cells" || dims.length > 2 || (dims.length === 2 && dims[0] !== "window")) {
    return `its dimensions (${dims.join(", ") || "none"}) are not (window,) cells`;
  }
  if (!CELL_KINDS.test(node.data_type)) {
    const kind = typeof node.data_type === "string" ? node.data_type : node.data_type?.name;
    return `its values (${kind}) are not numbers: variable-length and ragged fields are not drawn`;
  }
  return null;
}

// -- the tree ---------------------------------------------------------------------------

function buildTree() {
  const tree = new Map();
  for (const path of [...nodes.keys()].sort()) {
    if (!path) continue;
    let level = tree;
    for (const part of path.split("/")) {
      if (!level.has(part)) level.set(part, new Map());
      level = level.get(part);
    }
  }
  const render = (level, prefix) => {
    const ul = document.createElement("ul");
    for (const [name, children] of level) {
      const path = prefix ? `${prefix}/${name}` : name;
      const node = nodes.get(path);
      const li = ul.appendChild(document.createElement("li"));
      if (node?.node_type !== "array") {
        const details = li.appendChild(document.createElement("details"));
        details.dataset.path = path;
        details.open = !/\/o\d+$/.test(path);
        details.appendChild(document.createElement("summary")).textContent = name;
        details.appendChild(render(children, path));
        continue;
      }
      const button = li.appendChild(document.createElement("button"));
      const why = undrawable(path, node);
      button.textContent = name;
      button.dataset.path = path;
      button.title = `${JSON.stringify(node.data_type)} ${JSON.stringify(node.shape)}` +
        (why ? ` — not drawn: ${why}` : "");
      button.classList.toggle("undrawable", Boolean(why));
      button.onclick = () => choose(path.replace(/\/o\d+\/[^/]+$/, ""), name).catch(fail);
    }
    return ul;
  };
  $("tree").replaceChildren(render(tree, ""));
}

// -- data -----------------------------------------------------------------------------

/** Throws unless the server still presents the hierarchy this page opened (the root
 * document's entity tag, asked again): restarted on a grown hive, the server may map the
 * chunk indices of the metadata held here to other nodes. One conditional request (a 304
 * while nothing changed). */
async function sameHierarchy() {
  const now = await net.fetch(new Request("zarr.json", { cache: "no-cache" }));
  if (!now.ok || now.headers.get("etag") !== openedTag) {
    throw new Error("the hive on the server changed since this page opened it: reload the page");
  }
}

function levelOf(order) {
  const key = `${state.product}/o${order}/${state.field}`;
  if (!state.levels.has(key)) {
    state.levels.set(key, openLevel(nodes, root, state.product, order, state.field));
  }
  return state.levels.get(key);
}

/** The order read whole, drawn under every view, as { level, blocks } (null: no placed
 * order fits budget()): of the placed `levels` (ascending) whose whole read fits, the
 * finest whose cells are at least MIN_CELL_PX wide on the map of the whole world (finer
 * shows no more there), else the coarsest. One order, not the coarsest and then the
 * view's: a computed order costs the fold of every leaf beneath it, whatever its order. */
function overview(levels) {
  const world = fit([]).scale;
  let best = null;
  for (const level of levels) {
    if (best && (58.6 / 2 ** level.order) * world < MIN_CELL_PX) break;
    const blocks = blocksFor(level, null, budget());
    if (!blocks) break; // a finer order holds more cells
    best = { level, blocks };
  }
  return best;
}

/** What to read for the current view: the overview order whole, and the finest order
 * whose cells are at least MIN_CELL_PX wide with at most budget() cells in the blocks
 * covering the view (null: none; the coverage is drawn). */
function plan() {
  const all = ordersOf(state.product, state.field).map(levelOf);
  const levels = all.filter((level) => level.placed);
  const first = overview(levels);
  const coarse = first?.level;
  const box = bounds(state.view);
  let target = null;
  let blocks = [];
  for (const level of [...levels].reverse()) {
    if (level !== coarse && (58.6 / 2 ** level.order) * state.view.scale < MIN_CELL_PX) continue;
    const bs = blocksFor(level, box, budget());
    if (bs) { [target, blocks] = [level, bs]; break; }
  }
  return {
    coarse: first,
    target: first && target === coarse ? first : target && { level: target, blocks },
    source: all.at(-1), // its nodes are the coverage
  };
}

/** The blocks of `part` read so far (by the current window), in block order. */
function loadedOf(part) {
  return part ? part.blocks.map((b) => part.level.loaded.get(`${state.window}/${b}`)).filter(Boolean) : [];
}

async function readAll(part, signal, ticket) {
  await readBlocks(part.level, part.blocks, state.window, signal, () => ticket === state.ticket && later());
}

/** Reads what the view needs (dropping what earlier views queued) and draws as it goes;
 * checks the hierarchy is the one opened before (unless `checked`) and after reading. */
async function refresh(checked = false) {
  controller.abort();
  controller = new AbortController();
  const { signal } = controller;
  const ticket = ++state.ticket;
  const begun = performance.now();
  document.body.dataset.state = "loading";
  const p = plan();
  state.plan = p;
  status(`reading ${state.product}/${state.field}…`);
  try {
    if (!checked) await sameHierarchy();
    if (p.coarse) await readAll(p.coarse, signal, ticket);
    if (ticket !== state.ticket) return;
    draw();
    state.first ??= {
      ms: Math.round(performance.now() - started), requests: net.stats.requests, bytes: net.stats.bytes,
    };
    if (p.target && p.target !== p.coarse) await readAll(p.target, signal, ticket);
    await sameHierarchy();
  } catch (err) {
    if (ticket !== state.ticket) return; // a later view reads what it needs
    throw err;
  }
  if (ticket !== state.ticket) return;
  draw();
  const now = performance.now();
  state.complete = { // the view drawn whole: when, how long it took, what was sent until then
    ms: Math.round(now - started), view_ms: Math.round(now - begun), requests: net.stats.requests,
    ranged: net.stats.ranged, bytes: net.stats.bytes,
  };
  const shown = p.target ?? p.coarse;
  const orders = ordersOf(state.product, state.field);
  const unplaced = `order ${p.source.order}'s rows cannot be placed: it has more nodes than its ` +
    "group's coverage_moc lists (a coarser one stands for them), so its values are not read; " +
    "serve with --geometry sphere to read them";
  status(shown
    ? `${state.product}/o${state.order}/${state.field}: ${state.drawn} cells drawn, order ${state.order} of ${orders.join(", ")}; ${net.stats.requests} requests` +
      (p.source.placed || state.order === p.source.order ? "" : `; ${unplaced}`)
    : `${state.product}/${state.field}: coverage of ${p.source.nodes} nodes (order ${p.source.moc.order}); ` +
      (p.source.placed ? "zoom in to read values" : unplaced));
  document.body.dataset.state = "drawn";
}

let scheduled = false;
function later() { // one draw per frame while chunks arrive
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => { scheduled = false; draw(); });
}

// -- drawing ----------------------------------------------------------------------------

function colour(t) {
  const x = Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - i;
  const rgb = VIRIDIS[i].map((c, k) => Math.round(c + f * (VIRIDIS[i + 1][k] - c)));
  return `rgb(${rgb.join(",")})`;
}

function resize() {
  const { width, height } = canvas.getBoundingClientRect();
  canvas.width = Math.max(1, Math.round(width));
  canvas.height = Math.max(1, Math.round(height));
}

// A view is { lon, lat, scale, projection }: the point at the canvas's centre, pixels per
// degree of the projection's plane, and the projection's name (projection.js).

/** The canvas point of (lon, lat) in `view`. */
function project(view, lon, lat) {
  const p = projectionOf(view.projection);
  const [x, y] = p.forward(lon, lat);
  const [cx, cy] = p.forward(view.lon, view.lat);
  return [canvas.width / 2 + (x - cx) * view.scale, canvas.height / 2 - (y - cy) * view.scale];
}

/** The (lon, lat) at canvas point (x, y) of `view`. */
function unproject(view, x, y) {
  const p = projectionOf(view.projection);
  const [cx, cy] = p.forward(view.lon, view.lat);
  return p.inverse(cx + (x - canvas.width / 2) / view.scale, cy - (y - canvas.height / 2) / view.scale);
}

/** Moves `view` so that the plane point now at canvas point (x, y) is at (tx, ty). */
function moveView(view, x, y, tx, ty) {
  const p = projectionOf(view.projection);
  const [cx, cy] = p.forward(view.lon, view.lat);
  [view.lon, view.lat] = p.inverse(cx + (x - tx) / view.scale, cy - (y - ty) / view.scale);
}

/** The view's [west, east] × [south, north] in degrees (longitudes possibly past ±180). */
function bounds(view) {
  const p = projectionOf(view.projection);
  if (p.wraps) {
    const [w, n] = unproject(view, 0, 0);
    const [e, s] = unproject(view, canvas.width, canvas.height);
    return { w, e, s, n };
  }
  const [cx, cy] = p.forward(view.lon, view.lat);
  const [hw, hh] = [canvas.width / 2 / view.scale, canvas.height / 2 / view.scale];
  return azimuthalBounds(p, cx - hw, cx + hw, cy - hh, cy + hh);
}

/** The multiples of 360 degrees to add to longitudes in [west, east] so that they meet
 * `box` (the view's bounds): one copy of the world per 360 degrees on the map; [0] on a
 * projection that does not repeat. */
function copies(view, box, west, east) {
  if (!projectionOf(view.projection).wraps) return [0];
  const shifts = [];
  for (let k = Math.ceil((box.w - east) / 360); k <= Math.floor((box.e - west) / 360); k++) shifts.push(360 * k);
  return shifts;
}

/** Meridians and parallels every 30° or finer (at least ~80 px apart), labelled. */
function graticule(view) {
  const step = [30, 10, 5, 2, 1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01].find((d) => d * view.scale < 160) ?? 0.01;
  const b = bounds(view);
  ctx.strokeStyle = "#d5d9de";
  ctx.fillStyle = "#78838c";
  ctx.lineWidth = 1;
  ctx.font = "11px system-ui, sans-serif";
  ctx.beginPath();
  const p = projectionOf(view.projection);
  if (!p.wraps) { // parallels are circles about the pole, meridians lines from it
    const [px, py] = project(view, 0, p.pole);
    const every = b.e - b.w >= 360 ? Math.max(step, 15) : step; // meridians meet at the pole
    for (let lon = Math.ceil(b.w / every) * every; lon <= b.e; lon += every) {
      ctx.moveTo(...project(view, lon, Math.max(-89.999, Math.min(89.999, b.n))));
      ctx.lineTo(...project(view, lon, b.s));
    }
    for (let lat = Math.max(-90, Math.ceil(b.s / step) * step); lat <= Math.min(90, b.n); lat += step) {
      const r = Math.abs(p.pole - lat) * view.scale;
      if (!r) continue;
      ctx.moveTo(px + r, py);
      ctx.arc(px, py, r, 0, 2 * Math.PI);
      const [x, y] = project(view, view.lon, lat);
      ctx.fillText(`${+lat.toFixed(2)}°`, x + 3, y - 3);
    }
    ctx.stroke();
    return;
  }
  for (let lon = Math.ceil(b.w / step) * step; lon <= b.e; lon += step) { // every copy
    const [x] = project(view, lon, 0);
    ctx.moveTo(x, project(view, 0, 90)[1]);
    ctx.lineTo(x, project(view, 0, -90)[1]);
    ctx.fillText(`${+((((lon + 180) % 360) + 360) % 360 - 180).toFixed(2)}°`, x + 3, canvas.height - 4);
  }
  for (let lat = Math.max(-90, Math.ceil(b.s / step) * step); lat <= Math.min(90, b.n); lat += step) {
    const [, y] = project(view, 0, lat);
    ctx.moveTo(0, y);
    ctx.lineTo(canvas.width, y);
    ctx.fillText(`${+lat.toFixed(2)}°`, 3, y - 3);
  }
  ctx.stroke();
}

/** Adds the outline of cell `id` at `order` to `shapes` (canvas points [x0, y0, x1, ...]),
 * at every copy of the world (±360°) meeting `box` (the view's bounds); false when no copy
 * is on the canvas. On the plate carrée, pole vertices widen to the map's edge. */
function addCell(shapes, view, id, order, box) {
  const pts = continuousOutline(id, order, order < 4 ? 2 ** (4 - order) : 1);
  const n = pts.length / 2;
  let on = false;
  let [west, east] = [Infinity, -Infinity];
  for (let i = 0; i < pts.length; i += 2) [west, east] = [Math.min(west, pts[i]), Math.max(east, pts[i])];
  const wraps = projectionOf(view.projection).wraps;
  for (const shift of copies(view, box, west, east)) {
    let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
    const xy = [];
    for (let i = 0; i < n; i++) {
      const lat = pts[2 * i + 1];
      if (wraps && Math.abs(lat) >= 90 - 1e-9) { // the pole: from the previous to the next vertex's longitude
        xy.push(project(view, pts[2 * ((i + n - 1) % n)] + shift, lat), project(view, pts[2 * ((i + 1) % n)] + shift, lat));
      } else xy.push(project(view, pts[2 * i] + shift, lat));
    }
    for (const [x, y] of xy) [x0, x1, y0, y1] = [Math.min(x0, x), Math.max(x1, x), Math.min(y0, y), Math.max(y1, y)];
    if (x1 < 0 || x0 > canvas.width || y1 < 0 || y0 > canvas.height) continue;
    on = true;
    shapes.push(x1 - x0 < 2 && y1 - y0 < 2 ? [x0, y0, Math.max(1, x1 - x0), Math.max(1, y1 - y0)] : xy.flat());
  }
  return on;
}

/** Fills (and strokes, closing the hairline gaps between neighbours) `shapes` in `style`:
 * a shape of 4 numbers is a rectangle (a cell under 2 px), else a polygon. One path per
 * cell: a single path of many thousand subpaths is slow to build in Chromium. */
function fillShapes(shapes, fill, stroke = fill) {
  ctx.fillStyle = fill;
  ctx.strokeStyle = stroke;
  ctx.lineWidth = 1;
  for (const s of shapes) {
    if (s.length === 4) { ctx.fillRect(s[0], s[1], s[2], s[3]); continue; }
    ctx.beginPath();
    ctx.moveTo(s[0], s[1]);
    for (let i = 2; i < s.length; i += 2) ctx.lineTo(s[i], s[i + 1]);
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
  }
}

/** The range of the values in `chunks` ([min, max]; min > max when none). */
function range(chunks) {
  let [min, max] = [Infinity, -Infinity];
  for (const c of chunks) for (const v of c.values) if (v === v) { if (v < min) min = v; if (v > max) max = v; }
  return [min, max];
}

function drawCells(chunks, order, [min, max]) {
  const bins = Array.from({ length: BINS }, () => []);
  const span = max > min ? max - min : 0;
  const box = bounds(state.view);
  let drawn = 0;
  for (const c of chunks) {
    for (let i = 0; i < c.n; i++) {
      const v = c.values[i];
      if (v !== v) continue;
      const bin = span ? Math.min(BINS - 1, Math.floor(((v - min) / span) * BINS)) : BINS >> 1;
      if (addCell(bins[bin], state.view, c.ids[i], order, box)) drawn++;
    }
  }
  bins.forEach((shapes, bin) => fillShapes(shapes, colour((bin + 0.5) / BINS)));
  return drawn;
}

function drawCoverage(level) {
  const shapes = [];
  const box = bounds(state.view);
  for (const [, node] of visibleNodes(level, box)) addCell(shapes, state.view, node, level.moc.order, box);
  fillShapes(shapes, "#b0bec5", "#90a4ae");
}

/** The land as one path: each ring at each of `shifts(west, east)` (degrees added to its
 * longitudes), through `to` (lon, lat) -> canvas point; its coast only (open along a
 * pole) when `coastOnly`. Filled even-odd, an inner ring (the Caspian) is water wherever
 * its outer ring is drawn: both are drawn at every copy that meets the view. */
function landPath(to, shifts, coastOnly = false) {
  const path = new Path2D();
  for (const { points, coast, west, east } of state.land) {
    const end = coastOnly ? 2 * coast : points.length;
    for (const shift of shifts(west, east)) {
      for (let i = 0; i < end; i += 2) {
        const [x, y] = to(points[i] + shift, points[i + 1]);
        if (i) path.lineTo(x, y); else path.moveTo(x, y);
      }
      if (end === points.length) path.closePath();
    }
  }
  return path;
}

function drawLand(path, fill, width = 1.5) {
  if (fill) {
    ctx.fillStyle = LAND;
    ctx.fill(path, "evenodd");
  } else {
    ctx.strokeStyle = COAST;
    ctx.lineWidth = width;
    ctx.stroke(path);
  }
}

/** The sea: every copy of the world on the plate carrée, the disc of the whole sphere
 * about the pole. */
function drawSea(view) {
  ctx.fillStyle = SEA;
  const p = projectionOf(view.projection);
  if (!p.wraps) {
    const [x, y] = project(view, 0, p.pole);
    ctx.beginPath();
    ctx.arc(x, y, 180 * view.scale, 0, 2 * Math.PI);
    ctx.fill();
    return;
  }
  for (const shift of copies(view, bounds(view), -180, 180)) {
    const [x0, y0] = project(view, -180 + shift, 90);
    const [x1, y1] = project(view, 180 + shift, -90);
    ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
  }
}

/** A small plate carrée of the world in the map's lower left corner, with the view's
 * bounds outlined in red, when the view spans less than LOCATOR_SPAN degrees of longitude;
 * its box is state.locator (null when not drawn). */
function drawLocator(view) {
  const box = bounds(view);
  state.locator = null;
  if (box.e - box.w >= LOCATOR_SPAN || canvas.width < 400) return;
  const [w, h] = [200, 100];
  const [x0, y0] = [8, canvas.height - h - 24];
  const to = (lon, lat) => [x0 + ((lon + 180) / 360) * w, y0 + ((90 - lat) / 180) * h];
  ctx.save();
  ctx.beginPath();
  ctx.rect(x0, y0, w, h);
  ctx.clip();
  ctx.fillStyle = SEA;
  ctx.fillRect(x0, y0, w, h);
  const world = (west, east) => {
    const shifts = [];
    for (let k = Math.ceil((-180 - east) / 360); k <= Math.floor((180 - west) / 360); k++) shifts.push(360 * k);
    return shifts;
  };
  drawLand(landPath(to, world), true);
  drawLand(landPath(to, world, true), false, 0.5);
  ctx.strokeStyle = "#d32f2f";
  ctx.lineWidth = 1.5;
  const west = ((box.w + 180) % 360 + 360) % 360 - 180; // the view's box, wrapped onto the world
  const [bx0, by0] = to(west, Math.min(90, box.n));
  const [bx1, by1] = to(west + (box.e - box.w), Math.max(-90, box.s));
  for (const shift of [0, -w]) ctx.strokeRect(bx0 + shift, by0, Math.max(bx1 - bx0, 2), Math.max(by1 - by0, 2));
  if (bx1 - bx0 < 6 && by1 - by0 < 6) { // a small view: ringed
    ctx.beginPath();
    ctx.arc((bx0 + bx1) / 2, (by0 + by1) / 2, 7, 0, 2 * Math.PI);
    ctx.stroke();
  }
  ctx.restore();
  ctx.strokeStyle = "#78838c";
  ctx.lineWidth = 1;
  ctx.strokeRect(x0 - 0.5, y0 - 0.5, w + 1, h + 1);
  state.locator = { x: x0, y: y0, width: w, height: h };
}

function draw() {
  const { view, plan: p } = state;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  if (!view) return;
  drawSea(view);
  const box = bounds(view);
  const to = (lon, lat) => project(view, lon, lat);
  const shifts = (west, east) => copies(view, box, west, east);
  drawLand(landPath(to, shifts), true);
  graticule(view);
  if (p) {
    const coarse = loadedOf(p.coarse);
    const target = p.target && p.target !== p.coarse ? loadedOf(p.target) : [];
    const complete = p.target && target.length === p.target.blocks.length;
    const top = p.target && (complete || !p.coarse) ? p.target : p.coarse; // the legend's order
    if (!p.coarse || !top) drawCoverage(p.source);
    const shownChunks = top === p.coarse ? coarse : target;
    state.order = top?.level.order ?? null;
    state.legend = range(shownChunks);
    state.read = top ? loadedOf(top).map((c) => c.k) : [];
    state.unit = top?.level.unit ?? null;
    state.drawn = top ? drawCells(shownChunks, top.level.order, state.legend) : 0;
    if (top === p.coarse && target.length) drawCells(target, p.target.level.order, range(target)); // the view's order, as read so far
    legend(state.legend);
  }
  drawLand(landPath(to, shifts, true), false);
  if (state.refused) {
    ctx.fillStyle = "#37474f";
    ctx.font = "14px system-ui, sans-serif";
    ctx.textAlign = "center";
    ctx.fillText(`${state.product}/${state.field}: nothing to draw, ${state.refused}`, canvas.width / 2, 24);
    ctx.textAlign = "start";
  }
  drawLocator(view);
}

/** The legend of values [min, max]; hidden for null (nothing drawn). */
function legend(values) {
  $("legend").hidden = !values;
  if (!values) return;
  const [min, max] = values;
  const bar = $("legend-bar");
  bar.width = 220;
  bar.height = 12;
  const g = bar.getContext("2d");
  const constant = min === max;
  for (let x = 0; x < bar.width; x++) {
    g.fillStyle = colour(constant ? 0.5 : x / (bar.width - 1));
    g.fillRect(x, 0, 1, bar.height);
  }
  const empty = !(min <= max);
  $("legend-min").textContent = empty ? "no data" : Number(min.toPrecision(6)).toString();
  $("legend-max").textContent = empty || constant ? (constant ? "(every value)" : "") : Number(max.toPrecision(6)).toString();
  $("legend-min").dataset.value = empty ? "" : String(min);
  $("legend-max").dataset.value = empty ? "" : String(max);
}

/** The bounds [w, e, s, n] of `boxes`. */
function extent(boxes) {
  let [w, e, s, n] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const b of boxes) [w, e, s, n] = [Math.min(w, b[0]), Math.max(e, b[1]), Math.min(s, b[2]), Math.max(n, b[3])];
  return [w, e, s, n];
}

/** A view in `projection` of `boxes` ([w, e, s, n] each; on the plate carrée across the
 * antimeridian when narrower so), at least MIN_SPAN degrees wide; of the world (the
 * hemisphere about the pole) when there are none or they span most of it. */
function fit(boxes, projection = "plate") {
  const p = projectionOf(projection);
  if (!p.wraps) { // the plane box of the boxes' corners and edges' midpoints (and the pole)
    const points = boxes.length ? [] : [[0, p.pole], [0, p.pole - Math.sign(p.pole) * 50], [180, p.pole - Math.sign(p.pole) * 50]];
    for (const [w, e, s, n] of boxes) {
      if (w === -180 && e === 180) points.push([0, p.pole]);
      for (const lon of [w, (w + e) / 2, e]) points.push([lon, s], [lon, n]);
    }
    const [x0, x1, y0, y1] = extent(points.map(([lon, lat]) => {
      const [x, y] = p.forward(lon, lat);
      return [x, x, y, y];
    }));
    const span = Math.max(MIN_SPAN, x1 - x0, y1 - y0) * 1.2;
    const [lon, lat] = p.inverse((x0 + x1) / 2, (y0 + y1) / 2);
    return { lon, lat, scale: Math.min(canvas.width, canvas.height) / span, projection };
  }
  const plain = extent(boxes);
  const east = extent(boxes.map((b) => (b[1] < 0 ? [b[0] + 360, b[1] + 360, b[2], b[3]] : b)));
  let [w, e, s, n] = east[1] - east[0] < plain[1] - plain[0] ? east : plain;
  if (!(e - w <= 300)) [w, e, s, n] = [-180, 180, Math.min(s, -60), Math.max(n, 60)];
  const margin = Math.max(e - w, n - s) * 0.1 + 0.01;
  const scale = Math.min(canvas.width / Math.max(MIN_SPAN, e - w + 2 * margin),
    canvas.height / (n - s + 2 * margin));
  return poleToPole({ lon: (w + e) / 2, lat: (s + n) / 2, scale: Math.max(scale, canvas.width / 400), projection });
}

/** `view` (plate carrée) with its centre moved no further than needed for the map to end
 * at the poles, or on the equator where the map is taller than from pole to pole. */
function poleToPole(view) {
  const half = canvas.height / 2 / view.scale; // degrees from the centre to the top edge
  view.lat = half < 90 ? Math.max(-90 + half, Math.min(90 - half, view.lat)) : 0;
  return view;
}

/** The boxes of the cells holding a value in the selected window at the overview order
 * (read whole), else of the covered nodes of the finest order. */
async function dataBoxes() {
  const levels = ordersOf(state.product, state.field).map(levelOf);
  const first = overview(levels.filter((level) => level.placed));
  if (first) {
    const { level: coarse, blocks: whole } = first;
    await readAll(first, controller.signal, state.ticket);
    const boxes = [];
    for (const b of whole) {
      const c = coarse.loaded.get(`${state.window}/${b}`);
      for (let i = 0; i < c.n; i++) if (c.values[i] === c.values[i]) boxes.push(cellBox(c.ids[i], coarse.order));
    }
    if (boxes.length) return boxes;
  }
  const source = levels.at(-1);
  return Array.from(coveredNodes(source), ([, node]) => cellBox(node, source.moc.order));
}

// -- choosing ---------------------------------------------------------------------------

/** Shows `field` of `product` (at `window`): in the view shown when the product is the one
 * shown, else in a view fitting its cells. */
async function choose(product, field, window = 0) {
  const kept = product === state.product ? state.view : null;
  Object.assign(state, { product, field, window, view: kept, order: null, plan: null, drawn: 0, refused: null });
  $("chosen").textContent = `${product} · ${field}`;
  for (const b of document.querySelectorAll("nav button")) {
    b.classList.toggle("chosen", b.dataset.path.startsWith(`${product}/o`) && b.textContent === field);
  }
  const orders = ordersOf(product, field);
  const path = `${product}/o${orders[0]}/${field}`;
  for (const d of document.querySelectorAll("nav details")) {
    d.open ||= path.startsWith(`${d.dataset.path}/`);
  }
  const why = orders.length ? undrawable(path, nodes.get(path)) : "no such field";
  const levels = why ? [] : orders.map(levelOf);
  if (why || levels.some((l) => !l)) {
    state.refused = why ?? "its group carries no coverage_moc (rows cannot be placed without cell_ids)";
    status(`${product}/${field} is not drawn: ${state.refused}`);
    state.view ??= fit([], projection());
    legend(null);
    draw();
    document.body.dataset.state = "drawn";
    return;
  }
  document.body.dataset.state = "loading";
  await sameHierarchy();
  $("window-box").hidden = !levels[0].windowed;
  state.labels = [];
  if (levels[0].windowed) {
    $("window").max = String(Math.max(0, levels[0].meta.shape[0] - 1));
    $("window").value = String(window);
    const labels = `${product}/o${orders[0]}/window`;
    const node = nodes.get(labels);
    if (node?.node_type === "array") { // numbered windows (window_labels="index") name theirs in an attribute
      state.labels = node.attributes?.labels
        ?? Array.from((await zarr.get(await zarr.open.v3(root.resolve(labels), { kind: "array" }))).data);
    }
    $("window-label").textContent = String(state.labels[window] ?? window);
  }
  const start = state.start;
  state.start = null; // the address's view applies to the first field shown
  state.view = start ?? kept ?? fit(await dataBoxes(), projection());
  await refresh(true);
}

/** Zoom by `factor` about the canvas point (x, y) (default: the centre) and redraw. */
function zoomView(factor, x = canvas.width / 2, y = canvas.height / 2) {
  const v = state.view;
  if (!v) return;
  const [cx, cy] = [canvas.width / 2, canvas.height / 2];
  moveView(v, x, y, cx, cy); // the point under (x, y) to the centre, scaled, and back
  v.scale = Math.min(1e7, Math.max(canvas.width / 400, v.scale * factor));
  moveView(v, cx, cy, x, y);
  draw();
}

/** The projection chosen in the page's selector. */
function projection() {
  return $("projection").value;
}

/** Shows the map in projection `name`: about a pole, the view's centre and scale kept
 * when within 50 degrees of it, else the hemisphere about it; on the plate carrée, the
 * view kept, its centre moved no further than poleToPole() needs. */
function reproject(name) {
  const p = projectionOf(name);
  $("projection").value = name;
  const v = state.view;
  if (!v) return;
  v.projection = name;
  if (!p.wraps && Math.abs(p.pole - v.lat) > 50) Object.assign(v, fit([], name));
  else if (p.wraps) poleToPole(v);
}

/** The cell under canvas point (x, y) at the order shown (or the coarsest): its id, order
 * and value (undefined when not read, NaN when the fill value). */
function probe(x, y) {
  const p = state.plan;
  if (!p || !state.view) return null;
  const [lon, lat] = unproject(state.view, x, y);
  const wrapped = ((lon + 180) % 360 + 360) % 360 - 180;
  for (const part of [p.target, p.coarse, { level: p.source }]) {
    if (!part) continue;
    const level = part.level;
    const id = cellAt(wrapped, lat, level.order);
    const row = rowOfCell(level, id);
    if (row < 0) continue;
    const chunk = level.loaded.get(`${state.window}/${Math.floor(row / level.unit)}`);
    if (!chunk) continue;
    return { id, order: level.order, value: chunk.values[row - chunk.r0] };
  }
  return null;
}

function interact() {
  let timer;
  const settle = () => { clearTimeout(timer); timer = setTimeout(() => refresh().catch(fail), 150); };
  canvas.addEventListener("wheel", (event) => {
    event.preventDefault();
    const rect = canvas.getBoundingClientRect();
    zoomView(1.25 ** (-event.deltaY / 100), event.clientX - rect.left, event.clientY - rect.top);
    settle();
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("pointerdown", (e) => { drag = [e.clientX, e.clientY]; canvas.setPointerCapture(e.pointerId); });
  canvas.addEventListener("pointerup", () => { if (drag) settle(); drag = null; });
  canvas.addEventListener("pointermove", (e) => {
    if (drag && state.view) {
      moveView(state.view, canvas.width / 2, canvas.height / 2,
        canvas.width / 2 + e.clientX - drag[0], canvas.height / 2 + e.clientY - drag[1]);
      drag = [e.clientX, e.clientY];
      draw();
      return;
    }
    const rect = canvas.getBoundingClientRect();
    const got = probe(e.clientX - rect.left, e.clientY - rect.top);
    $("pointer").textContent = !got ? "" : `cell ${got.id} (order ${got.order}): ` +
      (got.value === got.value ? Number(got.value.toPrecision(7)).toString() : "no value");
  });
  $("projection").addEventListener("change", (e) => {
    reproject(e.target.value);
    refresh().catch(fail);
  });
  $("window").addEventListener("input", (e) => {
    state.window = Number(e.target.value);
    $("window-label").textContent = String(state.labels?.[state.window] ?? state.window);
    refresh().catch(fail);
  });
  window.addEventListener("resize", () => { resize(); draw(); });
}

function fail(err) {
  document.body.dataset.state = "error";
  status(`error: ${err.message ?? err}`);
  console.error(err);
}

// -- start ---------------------------------------------------------------------------

/** The first field of the first product, or ?product=&field=&window= from the address
 * (and &view=lon,lat,pixels-per-degree, &projection=plate|north|south). */
function initial() {
  for (const [name, p] of Object.entries(PROJECTIONS)) {
    $("projection").append(new Option(p.label, name, false, name === params.get("projection")));
  }
  const view = (params.get("view") ?? "").split(",").map(Number);
  if (view.length === 3 && view.every(Number.isFinite)) {
    state.start = { lon: view[0], lat: view[1], scale: view[2], projection: projection() };
  }
  if (params.get("product") && params.get("field")) {
    return [params.get("product"), params.get("field"), Number(params.get("window") ?? 0)];
  }
  const first = [...nodes.keys()].sort().find((p) => nodes.get(p).node_type === "array" && !undrawable(p, nodes.get(p)));
  return first ? [first.replace(/\/o\d+\/[^/]+$/, ""), first.split("/").pop(), 0] : null;
}

/** The canvas point of (lon, lat) nearest the view's centre (of the copies of the world). */
function nearest(lon, lat) {
  const view = state.view;
  const copy = projectionOf(view.projection).wraps ? lon + 360 * Math.round((view.lon - lon) / 360) : lon;
  return project(view, copy, lat);
}

window.viewer = {
  state, choose, stats: net.stats, probe,
  /** Zoom by `factor` about (lon, lat) (default: the view's centre); then read and draw. */
  zoom: async (factor, lon = state.view.lon, lat = state.view.lat) => {
    zoomView(factor, ...nearest(lon, lat));
    await refresh();
  },
  /** The centre of the first cell holding a value at the order shown (else of the first
   * covered node). */
  firstCell: () => {
    for (const c of loadedOf(state.plan.target ?? state.plan.coarse)) {
      const i = c.values.findIndex((v) => v === v);
      if (i >= 0) return centre(c.ids[i], c.order);
    }
    const { source } = state.plan;
    return centre(coveredNodes(source).next().value[1], source.moc.order);
  },
  /** Canvas point of (lon, lat). */
  at: nearest,
  setWindow: async (w) => { state.window = w; await refresh(); },
  /** Look at (lon, lat) at `scale` pixels per degree (in projection `name`, default the
   * one shown); then read and draw. */
  look: async (lon, lat, scale, name = projection()) => {
    $("projection").value = name;
    state.view = { lon, lat, scale, projection: name };
    await refresh();
  },
};
try {
  resize();
  buildTree();
  interact();
  state.land = await land;
  const start = initial();
  if (start) await choose(...start);
  else { status("no field with a cells dimension"); document.body.dataset.state = "drawn"; }
} catch (err) {
  fail(err);
}
