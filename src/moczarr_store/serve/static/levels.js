// What the map reads: one order of a product ("level") as the server presents it, its rows
// mapped to cells by the group's coverage_moc (the level's nodes, cells_per_node rows
// each), the chunks of a field that cover a view, read through a fetch that keeps at most
// MAX_IN_FLIGHT requests in flight. Cost: no request to map rows to cells; one request per
// chunk read (two for a sharded array's first chunk: its shard index).
import * as zarr from "zarrita";
import { outline } from "./healpix.js";

export const MAX_IN_FLIGHT = 6;

/** A fetch for zarrita's FetchStore: at most MAX_IN_FLIGHT requests in flight (a request
 * holds its slot until its body is read), absent chunks asked as 204 (an expected absence,
 * so the browser logs no error) and handed to zarrita as 404. A queued request whose
 * `signal` was aborted is dropped before it is sent. `stats` counts what was sent. */
export function limitedFetch() {
  const queue = [];
  const stats = { requests: 0, inFlight: 0, maxInFlight: 0 };
  const pump = () => {
    while (stats.inFlight < MAX_IN_FLIGHT && queue.length) queue.shift()();
  };
  const limited = (request, signal = request.signal) => new Promise((resolve, reject) => {
    queue.push(async () => {
      if (signal?.aborted) return reject(new DOMException("view changed", "AbortError"));
      stats.inFlight++;
      stats.requests++;
      stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
      try {
        const url = new URL(request.url);
        if (!url.pathname.endsWith("/zarr.json")) url.searchParams.set("absent", "204");
        const response = await fetch(url, { method: request.method, headers: request.headers, cache: request.cache });
        const body = await response.arrayBuffer();
        const status = response.status === 204 ? 404 : response.status;
        resolve(new Response(status === 404 || status === 304 ? null : body,
          { status, headers: response.headers }));
      } catch (err) {
        reject(err);
      } finally {
        stats.inFlight--;
        pump();
      }
    });
    pump();
  });
  return { fetch: limited, stats };
}

/** `[[first, last], ...]` node runs and the node order of an IVOA MOC ASCII string at one
 * order ("5/4032-4033 9256"); null when absent or not of that form. */
export function parseMoc(text) {
  const m = typeof text === "string" && text.match(/^(\d+)\/(.*)$/);
  if (!m) return null;
  const runs = m[2].split(/[\s,]+/).filter(Boolean).map((part) => {
    const [a, b = a] = part.split("-").map(Number);
    return [a, b];
  });
  return { order: Number(m[1]), runs };
}

/** The rows of the declared chunk grid along `cells` (the inner chunk of a sharded array). */
export function chunkRows(meta) {
  const shard = meta.codecs?.find((c) => c.name === "sharding_indexed");
  return (shard ? shard.configuration.chunk_shape : meta.chunk_grid.configuration.chunk_shape).at(-1);
}

/** A cell's outline ([lon, lat, ...], `steps` points per edge) with its longitudes made
 * continuous: no jump of more than 180 degrees between two vertices. */
export function continuousOutline(id, order, steps) {
  const flat = outline(id, order, steps);
  let prev = flat[0];
  for (let i = 0; i < flat.length; i += 2) {
    let lon = flat[i];
    while (lon - prev > 180) lon -= 360;
    while (lon - prev < -180) lon += 360;
    flat[i] = prev = lon;
  }
  return flat;
}

/** [west, east, south, north] of a cell's outline, continuous in longitude. */
export function cellBox(id, order) {
  const flat = continuousOutline(id, order, order < 6 ? 4 : 1);
  let [w, e, s, n] = [Infinity, -Infinity, Infinity, -Infinity];
  for (let i = 0; i < flat.length; i += 2) {
    [w, e, s, n] = [Math.min(w, flat[i]), Math.max(e, flat[i]), Math.min(s, flat[i + 1]), Math.max(n, flat[i + 1])];
  }
  if (n > 90 - 1e-6 || s < -90 + 1e-6) [w, e] = [-180, 180]; // a pole's cell: every longitude
  return [w, e, s, n];
}

/** Whether box [w, e, s, n] meets `view` ({w, e, s, n}, longitudes possibly past ±180). */
export function meets(box, view) {
  if (box[2] > view.n || box[3] < view.s) return false;
  return [-360, 0, 360].some((k) => box[0] + k <= view.e && box[1] + k >= view.w);
}

/** One order of a product as served, for one field (null when its group carries no
 * coverage_moc). `placed`: whether rows map to cells, i.e. the MOC lists the level's nodes
 * (or the arrays span the sphere, rows being NESTED ids); a coarser MOC (a long one
 * coarsened by the server) still says where the data may be. */
export function openLevel(nodes, root, product, order, field) {
  const group = nodes.get(`${product}/o${order}`);
  const meta = nodes.get(`${product}/o${order}/${field}`);
  const info = group?.attributes?.morton_hive_store ?? {};
  const moc = parseMoc(info.coverage_moc);
  if (!moc || !meta) return null;
  const cells = meta.shape.at(-1);
  const starts = []; // node index of each run's first node
  let count = 0;
  for (const [a, b] of moc.runs) { starts.push(count); count += b - a + 1; }
  const sphere = cells === 12 * 4 ** order; // rows are the NESTED ids of the whole sphere
  const cpm = 4 ** (order - moc.order); // cells per MOC cell
  return {
    product, order, field, meta, moc, starts, nodes: count, cpm,
    placed: sphere || cpm === info.cells_per_node,
    path: `${product}/o${order}/${field}`,
    depth: order - moc.order,
    cells,
    sphere,
    rows: chunkRows(meta),
    windowed: meta.dimension_names?.[0] === "window",
    fill: meta.fill_value === "NaN" ? NaN : Number(meta.fill_value),
    array: zarr.open.v3(root.resolve(`${product}/o${order}/${field}`), { kind: "array" }),
    boxes: new Map(), // node id -> its box
    chunks: new Map(), // "windowChunk/k" -> promise of a read chunk
  };
}

/** Each covered node as [index, nested id at the node order]. */
export function* coveredNodes(level) {
  let index = 0;
  for (const [a, b] of level.moc.runs) for (let n = a; n <= b; n++) yield [index++, n];
}

/** Each covered node meeting `view` (all when null), as [index, id]. */
export function* visibleNodes(level, view) {
  for (const [index, node] of coveredNodes(level)) {
    if (!view || meets(nodeBox(level, node), view)) yield [index, node];
  }
}

/** The NESTED id (at the level's cell order) of `row`, or -1 outside the covered nodes. */
export function cellOfRow(level, row) {
  if (level.sphere) return row;
  const index = Math.floor(row / level.cpm);
  let lo = 0;
  let hi = level.starts.length - 1;
  while (lo < hi) { // the last run starting at or before index
    const mid = (lo + hi + 1) >> 1;
    if (level.starts[mid] <= index) lo = mid; else hi = mid - 1;
  }
  const node = level.moc.runs[lo][0] + index - level.starts[lo];
  return node > level.moc.runs[lo][1] ? -1 : node * level.cpm + (row % level.cpm);
}

/** The row of NESTED cell `id` (at the cell order), or -1 when no covered node holds it. */
export function rowOfCell(level, id) {
  const node = Math.floor(id / level.cpm);
  if (level.sphere) return id;
  let lo = 0;
  let hi = level.moc.runs.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [a, b] = level.moc.runs[mid];
    if (node < a) hi = mid - 1;
    else if (node > b) lo = mid + 1;
    else return (level.starts[mid] + node - a) * level.cpm + (id % level.cpm);
  }
  return -1;
}

function nodeBox(level, node) {
  let box = level.boxes.get(node);
  if (!box) level.boxes.set(node, (box = cellBox(node, level.moc.order)));
  return box;
}

/** The first row of the node with index `index` and id `node`. */
function firstRow(level, index, node) {
  return (level.sphere ? node : index) * level.cpm;
}

/** The chunk indices (ascending) whose rows hold cells of covered nodes meeting `view`
 * (all covered nodes when `view` is null); null as soon as they would hold more than
 * `limit` cells. Cost: one box per covered node (cached), and below a node one box per
 * visible block of a chunk's size when chunks are smaller. */
export function chunksFor(level, view, limit = Infinity) {
  const out = new Set();
  const R = level.rows;
  const inner = Math.log(level.cpm / R) / Math.log(4); // block order below the node order
  for (const [index, node] of visibleNodes(level, view)) {
    if (out.size * level.rows > limit) return null;
    const r0 = firstRow(level, index, node);
    if (!view || R >= level.cpm || !Number.isInteger(inner)) {
      for (let k = Math.floor(r0 / R); k <= Math.floor((r0 + level.cpm - 1) / R); k++) out.add(k);
      continue;
    }
    const descend = (id, order) => { // id at `order`, below `node`
      if (order > level.moc.order && !meets(cellBox(id, order), view)) return;
      if (order === level.moc.order + inner) {
        out.add(Math.floor(r0 / R) + (id - node * 4 ** inner));
        return;
      }
      for (let c = 0; c < 4; c++) descend(id * 4 + c, order + 1);
    };
    descend(node, level.moc.order);
  }
  return out.size * level.rows > limit ? null : [...out].sort((a, b) => a - b);
}

/** Chunk `k` of the level's field (for window `w`): its first row, and per row the cell id
 * and the value (NaN where the fill value). Read once; a read dropped by `signal` is
 * forgotten so that a later view asks again. */
export function readChunk(level, k, w, signal) {
  const array = level.array;
  const key = `${w}/${k}`;
  if (level.chunks.has(key)) return level.chunks.get(key);
  const promise = (async () => {
    const arr = await array;
    const windowRows = level.windowed ? arr.chunks[0] : 1;
    const coords = level.windowed ? [Math.floor(w / windowRows), k] : [k];
    const chunk = await arr.getChunk(coords, { signal });
    const R = level.rows;
    const r0 = k * R;
    const n = Math.max(0, Math.min(R, level.cells - r0));
    const offset = level.windowed ? (w % windowRows) * chunk.stride[0] : 0;
    const values = new Float64Array(n);
    const ids = new Float64Array(n);
    let present = 0;
    for (let i = 0; i < n; i++) {
      const v = Number(chunk.data[offset + i * chunk.stride.at(-1)]);
      ids[i] = cellOfRow(level, r0 + i);
      values[i] = v === level.fill || ids[i] < 0 ? NaN : v;
      if (values[i] === values[i]) present++;
    }
    return { k, r0, n, ids, values, present, order: level.order };
  })();
  level.chunks.set(key, promise);
  promise.catch(() => level.chunks.delete(key));
  return promise;
}
