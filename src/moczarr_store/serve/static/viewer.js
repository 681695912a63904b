// The viewer: the hierarchy as a tree (from the root's consolidated metadata) and, for a
// chosen product and field, an equirectangular map of its HEALPix cells coloured by value.
// It starts at the product's coarsest order holding the field and, on zoom, shows the
// finest order whose cells are at least MIN_CELL_PX wide on screen. Data are read through this server with zarrita;
// a map shows one order's whole arrays (at most MAX_CELLS cells).
import * as zarr from "zarrita";
import { outline } from "./healpix.js";

const MAX_CELLS = 2_000_000; // the finest order shown is the finest with at most this many cells
const MIN_CELL_PX = 6; // refine while a cell of the next order is at least this wide
const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962",
  "#addc30", "#fde725"].map((h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)));
const CELL_KINDS = /^(u?int(8|16|32|64)|float(16|32|64))$/;
const $ = (id) => document.getElementById(id);

const store = await zarr.withConsolidatedMetadata(new zarr.FetchStore(new URL(".", location.href).href), { format: "v3" });
const root = zarr.root(store);
const opened = await fetch("zarr.json");
const openedTag = opened.headers.get("etag"); // the hierarchy this page shows
const meta = await opened.json();
const nodes = meta.consolidated_metadata.metadata; // path -> node metadata

const state = { product: null, field: null, order: null, window: 0, data: null, view: null };
const cache = new Map(); // "group/field" -> loaded order
const canvas = $("map");
const ctx = canvas.getContext("2d");

function status(text) { $("status").textContent = text; }

/** The orders of `product` whose group holds `field`, ascending. */
function ordersOf(product, field) {
  return Object.keys(nodes)
    .map((p) => p.match(/^(.*)\/o(\d+)\/([^/]+)$/))
    .filter((m) => m && m[1] === product && m[3] === field)
    .map((m) => Number(m[2]))
    .sort((a, b) => a - b);
}

/** Whether a node is a field the map can show: numeric along "cells". */
function isField(path, node) {
  const dims = node.dimension_names ?? [];
  const name = path.split("/").pop();
  return node.node_type === "array" && dims.at(-1) === "cells" && dims.length <= 2 &&
    (dims.length === 1 || dims[0] === "window") && CELL_KINDS.test(node.data_type) &&
    !["morton", "cell_ids"].includes(name);
}

// -- the tree ---------------------------------------------------------------------------

function buildTree() {
  const tree = {};
  for (const path of Object.keys(nodes).sort()) {
    let level = tree;
    for (const part of path.split("/")) level = level[part] ??= {};
  }
  const render = (level, prefix) => {
    const ul = document.createElement("ul");
    for (const [name, children] of Object.entries(level)) {
      const path = prefix ? `${prefix}/${name}` : name;
      const li = ul.appendChild(document.createElement("li"));
      if (nodes[path]?.node_type === "group") {
        const details = li.appendChild(document.createElement("details"));
        details.dataset.path = path;
        details.open = !/\/o\d+$/.test(path);
        details.appendChild(document.createElement("summary")).textContent = name;
        details.appendChild(render(children, path));
        continue;
      }
      const button = li.appendChild(document.createElement("button"));
      button.textContent = name;
      button.dataset.path = path;
      button.title = `${nodes[path].data_type} ${JSON.stringify(nodes[path].shape)}`;
      button.disabled = !isField(path, nodes[path]);
      button.onclick = () => choose(path.replace(/\/o\d+\/[^/]+$/, ""), name).catch(fail);
    }
    return ul;
  };
  $("tree").replaceChildren(render(tree, ""));
}

// -- data -----------------------------------------------------------------------------

async function read(path) {
  const array = await zarr.open.v3(root.resolve(path), { kind: "array" });
  return zarr.get(array);
}

/** Throws unless the server still presents the hierarchy this page opened (the root
 * document's entity tag, asked again): restarted on a grown hive, the server may map the
 * chunk indices of the metadata held here to other nodes. One conditional request (a 304
 * while nothing changed). */
async function sameHierarchy() {
  const now = await fetch("zarr.json", { cache: "no-cache" });
  await now.arrayBuffer();
  if (!now.ok || now.headers.get("etag") !== openedTag) {
    throw new Error("the hive on the server changed since this page opened it: reload the page");
  }
}

/** One order of a field: cell outlines, values as numbers and their range. Read between
 * two checks that the server presents the hierarchy the page opened. */
async function load(product, field, order) {
  const group = `${product}/o${order}`;
  const key = `${group}/${field}`;
  if (cache.has(key)) return cache.get(key);
  const node = nodes[key];
  const windowed = node.dimension_names[0] === "window";
  await sameHierarchy();
  const [ids, values, labels] = await Promise.all([read(`${group}/cell_ids`), read(key),
    windowed ? read(`${group}/window`).then((w) => w.data) : []]);
  await sameHierarchy();
  const numbers = Float64Array.from(values.data, Number);
  const fill = node.fill_value === "NaN" ? NaN : Number(node.fill_value);
  let min = Infinity;
  let max = -Infinity;
  for (const v of numbers) {
    if (Number.isFinite(v) && v !== fill) { min = Math.min(min, v); max = Math.max(max, v); }
  }
  const steps = order < 4 ? 2 ** (4 - order) : 1;
  const shapes = Array.from(ids.data, (id) => unwrap(outline(id, order, steps)));
  const loaded = { order, shapes, numbers, fill, min, max, labels, cells: ids.data.length };
  cache.set(key, loaded);
  return loaded;
}

/** An outline drawable on the plate carrée: continuous in longitude (it may leave
 * [-180, 180]) and with each pole vertex widened to the pole's edge of the map. */
function unwrap(flat) {
  const pts = [];
  for (let i = 0; i < flat.length; i += 2) pts.push([flat[i], flat[i + 1]]);
  for (let i = 1; i < pts.length; i++) {
    while (pts[i][0] - pts[i - 1][0] > 180) pts[i][0] -= 360;
    while (pts[i][0] - pts[i - 1][0] < -180) pts[i][0] += 360;
  }
  const out = [];
  pts.forEach(([lon, lat], i) => {
    if (Math.abs(lat) < 90 - 1e-9) return out.push([lon, lat]);
    const prev = pts[(i + pts.length - 1) % pts.length][0];
    const next = pts[(i + 1) % pts.length][0];
    out.push([prev, lat], [next, lat]);
  });
  return out;
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

function project(view, lon, lat) {
  return [canvas.width / 2 + (lon - view.lon) * view.scale,
    canvas.height / 2 - (lat - view.lat) * view.scale];
}

/** Meridians and parallels every 30° or finer (at least ~80 px apart), labelled. */
function graticule(view) {
  const step = [30, 10, 5, 2, 1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01].find((d) => d * view.scale < 160) ?? 0.01;
  const west = Math.max(-180, Math.ceil((view.lon - canvas.width / 2 / view.scale) / step) * step);
  const east = Math.min(180, view.lon + canvas.width / 2 / view.scale);
  const south = Math.max(-90, Math.ceil((view.lat - canvas.height / 2 / view.scale) / step) * step);
  const north = Math.min(90, view.lat + canvas.height / 2 / view.scale);
  ctx.strokeStyle = "#d5d9de";
  ctx.fillStyle = "#78838c";
  ctx.font = "11px system-ui, sans-serif";
  ctx.beginPath();
  for (let lon = west; lon <= east; lon += step) {
    const [x] = project(view, lon, 0);
    ctx.moveTo(x, project(view, 0, 90)[1]);
    ctx.lineTo(x, project(view, 0, -90)[1]);
    ctx.fillText(`${+lon.toFixed(2)}°`, x + 3, canvas.height - 4);
  }
  for (let lat = south; lat <= north; lat += step) {
    const [, y] = project(view, 0, lat);
    ctx.moveTo(project(view, -180, 0)[0], y);
    ctx.lineTo(project(view, 180, 0)[0], y);
    ctx.fillText(`${+lat.toFixed(2)}°`, 3, y - 3);
  }
  ctx.stroke();
}

function draw() {
  const { view, data } = state;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  if (!view) return;
  const [x0, y0] = project(view, -180, 90);
  const [x1, y1] = project(view, 180, -90);
  ctx.fillStyle = "#eef0f3";
  ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
  graticule(view);
  if (!data) return;
  const offset = state.window * data.cells;
  const span = data.max > data.min ? data.max - data.min : 1;
  let drawn = 0;
  data.shapes.forEach((shape, i) => {
    const v = data.numbers[offset + i];
    if (!Number.isFinite(v) || v === data.fill) return;
    ctx.fillStyle = colour((v - data.min) / span);
    for (const shift of [-360, 0, 360]) {
      const pts = shape.map(([lon, lat]) => project(view, lon + shift, lat));
      const xs = pts.map((p) => p[0]);
      if (Math.max(...xs) < 0 || Math.min(...xs) > canvas.width) continue;
      ctx.beginPath();
      pts.forEach(([x, y], k) => (k ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
      ctx.closePath();
      ctx.fill();
      ctx.strokeStyle = ctx.fillStyle; // close the hairline gaps between neighbours
      ctx.stroke();
    }
    drawn++;
  });
  state.drawn = drawn;
}

function legend(data) {
  const bar = $("legend-bar");
  bar.width = 220;
  bar.height = 12;
  const g = bar.getContext("2d");
  for (let x = 0; x < bar.width; x++) {
    g.fillStyle = colour(x / (bar.width - 1));
    g.fillRect(x, 0, 1, bar.height);
  }
  const empty = !(data.min <= data.max);
  for (const [id, v] of [["legend-min", data.min], ["legend-max", data.max]]) {
    $(id).textContent = empty ? "no data" : Number(v.toPrecision(6)).toString();
    $(id).dataset.value = empty ? "" : String(v);
  }
}

/** A view of the cells holding a value (in any window), or of the world. */
function fit(data) {
  let [w, e, s, n] = [Infinity, -Infinity, Infinity, -Infinity];
  data.shapes.forEach((shape, i) => {
    for (let k = i; k < data.numbers.length; k += data.cells) {
      if (!Number.isFinite(data.numbers[k]) || data.numbers[k] === data.fill) continue;
      for (const [lon, lat] of shape) {
        [w, e, s, n] = [Math.min(w, lon), Math.max(e, lon), Math.min(s, lat), Math.max(n, lat)];
      }
      break;
    }
  });
  if (!(e - w <= 180)) [w, e, s, n] = [-180, 180, Math.min(s, -60), Math.max(n, 60)];
  const margin = Math.max(e - w, n - s) * 0.1 + 0.01;
  const scale = Math.min(canvas.width / (e - w + 2 * margin), canvas.height / (n - s + 2 * margin));
  return { lon: (w + e) / 2, lat: (s + n) / 2, scale: Math.max(scale, canvas.width / 400) };
}

// -- choosing and refining ---------------------------------------------------------------

/** The finest order of `orders` whose cells are still at most MAX_CELLS and, past the
 * coarsest, at least MIN_CELL_PX wide at the current scale. */
function wantedOrder(orders) {
  let best = orders[0];
  for (const order of orders.slice(1)) {
    const cellDegrees = 58.6 / 2 ** order;
    const cells = nodes[`${state.product}/o${order}/${state.field}`].shape.at(-1);
    if (cellDegrees * state.view.scale >= MIN_CELL_PX && cells <= MAX_CELLS) best = order;
  }
  return best;
}

async function show(order) {
  document.body.dataset.state = "loading";
  status(`reading ${state.product}/o${order}/${state.field}…`);
  const data = await load(state.product, state.field, order);
  state.data = data;
  state.order = order;
  state.window = Math.min(state.window, Math.max(0, data.labels.length - 1));
  state.view ??= state.start ?? fit(data);
  $("window-box").hidden = !data.labels.length;
  $("window").max = String(Math.max(0, data.labels.length - 1));
  $("window").value = String(state.window);
  $("window-label").textContent = data.labels[state.window] ?? "";
  legend(data);
  draw();
  status(`${state.product}/o${order}/${state.field}: ${data.cells} cells, order ${order}` +
    ` of ${ordersOf(state.product, state.field).join(", ")}`);
  document.body.dataset.state = "drawn";
}

async function refine() {
  if (!state.field) return;
  const order = wantedOrder(ordersOf(state.product, state.field));
  if (order !== state.order) await show(order);
  else draw();
}

async function choose(product, field, window = 0) {
  Object.assign(state, { product, field, window, view: null, order: null, data: null });
  const start = state.start;
  $("chosen").textContent = `${product} · ${field}`;
  for (const b of document.querySelectorAll("nav button")) {
    b.classList.toggle("chosen", b.dataset.path.startsWith(`${product}/o`) && b.textContent === field);
  }
  const group = `${product}/o${ordersOf(product, field)[0]}`;
  for (const d of document.querySelectorAll("nav details")) {
    d.open ||= group === d.dataset.path || group.startsWith(`${d.dataset.path}/`);
  }
  await show(ordersOf(product, field)[0]);
  state.start = null; // the address's view applies to the first field shown
  if (start) await refine();
}

/** Zoom by `factor` about the canvas point (x, y) (default: the centre) and redraw. */
function zoomView(factor, x = canvas.width / 2, y = canvas.height / 2) {
  const v = state.view;
  if (!v) return;
  const lon = v.lon + (x - canvas.width / 2) / v.scale;
  const lat = v.lat - (y - canvas.height / 2) / v.scale;
  v.scale = Math.min(1e7, Math.max(canvas.width / 400, v.scale * factor));
  v.lon = lon - (x - canvas.width / 2) / v.scale;
  v.lat = lat + (y - canvas.height / 2) / v.scale;
  draw();
}

function interact() {
  let timer;
  canvas.addEventListener("wheel", (event) => {
    event.preventDefault();
    const rect = canvas.getBoundingClientRect();
    zoomView(1.25 ** (-event.deltaY / 100), event.clientX - rect.left, event.clientY - rect.top);
    clearTimeout(timer);
    timer = setTimeout(() => refine().catch(fail), 150);
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("pointerdown", (e) => { drag = [e.clientX, e.clientY]; canvas.setPointerCapture(e.pointerId); });
  canvas.addEventListener("pointerup", () => { drag = null; });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag || !state.view) return;
    state.view.lon -= (e.clientX - drag[0]) / state.view.scale;
    state.view.lat += (e.clientY - drag[1]) / state.view.scale;
    drag = [e.clientX, e.clientY];
    draw();
  });
  $("window").addEventListener("input", (e) => {
    state.window = Number(e.target.value);
    $("window-label").textContent = state.data.labels[state.window] ?? "";
    draw();
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
 * (and &view=lon,lat,pixels-per-degree). */
function initial() {
  const params = new URLSearchParams(location.search);
  const view = (params.get("view") ?? "").split(",").map(Number);
  if (view.length === 3 && view.every(Number.isFinite)) {
    state.start = { lon: view[0], lat: view[1], scale: view[2] };
  }
  if (params.get("product") && params.get("field")) {
    return [params.get("product"), params.get("field"), Number(params.get("window") ?? 0)];
  }
  const first = Object.keys(nodes).sort().find((p) => isField(p, nodes[p]));
  return first ? [first.replace(/\/o\d+\/[^/]+$/, ""), first.split("/").pop(), 0] : null;
}

window.viewer = {
  state, choose,
  /** Zoom by `factor` about (lon, lat) (default: the view's centre); then refine. */
  zoom: async (factor, lon = state.view.lon, lat = state.view.lat) => {
    zoomView(factor, ...project(state.view, lon, lat));
    await refine();
  },
  setWindow: (w) => { state.window = w; draw(); },
};
try {
  resize();
  buildTree();
  interact();
  const start = initial();
  if (start) await choose(...start);
  else { status("no field with a cells dimension"); document.body.dataset.state = "drawn"; }
} catch (err) {
  fail(err);
}
