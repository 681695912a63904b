// What the map reads: one order of a product ("level") as the server presents it, its rows
// mapped to cells by the group's coverage_moc (the level's nodes, cells_per_node rows
// each), the blocks of rows of a field that cover a view, read through a fetch that keeps
// at most MAX_IN_FLIGHT requests in flight. A field whose chunks are plain bytes (the lone
// `bytes` codec: no compression, no sharding) is read by blocks of at most RANGE_ROWS rows,
// adjacent blocks of one chunk in one request (a Range request unless they are the whole
// chunk); any other field by whole chunks (a block is then a chunk). Cost: no request to
// map rows to cells; one request per run of blocks (two for a sharded array's first chunk:
// its shard index).
import * as zarr from "zarrita";
import { outline } from "./healpix.js";

export const MAX_IN_FLIGHT = 6;
export const RANGE_ROWS = 1024; // the most rows of a block of a plain-bytes field

/** DataView getter and bytes of each numeric data type a plain chunk is decoded from. */
const GETTERS = {
  int8: ["getInt8", 1], uint8: ["getUint8", 1], int16: ["getInt16", 2], uint16: ["getUint16", 2],
  int32: ["getInt32", 4], uint32: ["getUint32", 4], int64: ["getBigInt64", 8],
  uint64: ["getBigUint64", 8], float32: ["getFloat32", 4], float64: ["getFloat64", 8],
};

/** A fetch for zarrita's FetchStore: at most MAX_IN_FLIGHT requests in flight (a request
 * holds its slot until its body is read), absent chunks asked as 204 (an expected absence,
 * so the browser logs no error) and handed to zarrita as 404. A queued request whose
 * `signal` was aborted is dropped before it is sent. `stats` counts the requests sent,
 * those with a Range header, and the bytes of the chunks received. */
export function limitedFetch() {
  const queue = [];
  const stats = { requests: 0, ranged: 0, bytes: 0, inFlight: 0, maxInFlight: 0 };
  const pump = () => {
    while (stats.inFlight < MAX_IN_FLIGHT && queue.length) queue.shift()();
  };
  const limited = (request, signal = request.signal) => new Promise((resolve, reject) => {
    queue.push(async () => {
      if (signal?.aborted) return reject(new DOMException("view changed", "AbortError"));
      stats.inFlight++;
      stats.requests++;
      if (request.headers.has("range")) stats.ranged++;
      stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
      try {
        const url = new URL(request.url);
        if (!url.pathname.endsWith("/zarr.json")) url.searchParams.set("absent", "204");
        const response = await fetch(url, { method: request.method, headers: request.headers, cache: request.cache });
        const body = await response.arrayBuffer();
        if (!url.pathname.endsWith("/zarr.json")) stats.bytes += body.byteLength;
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

/** How a chunk of array `meta` can be read in part: its values as plain bytes (a lone
 * `bytes` codec of a numeric type) as { get, size, little }; null for any other chunk
 * (compressed, sharded, variable-length: read whole). */
export function plainLayout(meta) {
  const codecs = meta.codecs ?? [];
  const getter = GETTERS[meta.data_type];
  if (codecs.length !== 1 || codecs[0].name !== "bytes" || !getter) return null;
  return { get: getter[0], size: getter[1], little: codecs[0].configuration?.endian !== "big" };
}

/** k when n is 4 ** k, else NaN. */
function log4(n) {
  let k = 0;
  for (; n > 1 && n % 4 === 0; n /= 4) k++;
  return n === 1 ? k : NaN;
}

/** Rows of the level's blocks: a whole chunk's, or for a plain chunk the largest power
 * of 4 up to RANGE_ROWS that tiles both the chunk and a MOC cell (its rows). */
function blockRows(level) {
  if (!level.plain) return level.rows;
  let u = 1;
  while (u * 4 <= RANGE_ROWS && level.cpm % (u * 4) === 0 && level.rows % (u * 4) === 0) u *= 4;
  return u;
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
  const level = {
    product, order, field, meta, moc, starts, nodes: count, cpm,
    placed: sphere || cpm === info.cells_per_node,
    path: `${product}/o${order}/${field}`,
    depth: order - moc.order,
    cells,
    sphere,
    rows: chunkRows(meta),
    windowed: meta.dimension_names?.[0] === "window",
    fill: meta.fill_value === "NaN" ? NaN : Number(meta.fill_value),
    plain: plainLayout(meta),
    store: root.store,
    array: zarr.open.v3(root.resolve(`${product}/o${order}/${field}`), { kind: "array" }),
    boxes: new Map(), // node id -> its box
    loaded: new Map(), // "window/block" -> a read block
    pending: new Map(), // "window/block" -> { promise, signal } of its read
  };
  level.unit = blockRows(level);
  return level;
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

/** The block indices (ascending; a block is level.unit rows) holding cells of covered
 * nodes meeting `view` (all covered nodes when `view` is null); null as soon as they
 * would hold more than `limit` cells. Cost: one box per covered node (cached), and below
 * a node one box per visible block when blocks are smaller. */
export function blocksFor(level, view, limit = Infinity) {
  const out = new Set();
  const U = level.unit;
  const inner = log4(level.cpm / U); // block order below the node order (NaN: none)
  for (const [index, node] of visibleNodes(level, view)) {
    if (out.size * U > limit) return null;
    const r0 = firstRow(level, index, node);
    if (!view || U >= level.cpm || !Number.isInteger(inner)) {
      for (let b = Math.floor(r0 / U); b <= Math.floor((r0 + level.cpm - 1) / U); b++) out.add(b);
      continue;
    }
    const descend = (id, order) => { // id at `order`, below `node`
      if (order > level.moc.order && !meets(cellBox(id, order), view)) return;
      if (order === level.moc.order + inner) {
        out.add(r0 / U + (id - node * 4 ** inner));
        return;
      }
      for (let c = 0; c < 4; c++) descend(id * 4 + c, order + 1);
    };
    descend(node, level.moc.order);
  }
  return out.size * U > limit ? null : [...out].sort((a, b) => a - b);
}

/** Reads the blocks `blocks` (ascending) of the level's field for window `w` that are
 * not read yet nor being read for a live view, into level.loaded ("w/block" -> its first
 * row r0, its rows n, per row the cell id and the value, NaN where the fill value), calling
 * `onBlock` as each arrives. A plain field: one request per run of adjacent blocks of one
 * chunk (a Range request unless the run is the whole chunk); any other: one chunk a block.
 * A read dropped by `signal` is forgotten, so that a later view asks again. */
export async function readBlocks(level, blocks, w, signal, onBlock = () => {}) {
  const U = level.unit;
  const R = level.rows;
  const runs = [];
  const waits = [];
  let run = null;
  for (const b of blocks) {
    const key = `${w}/${b}`;
    if (level.loaded.has(key)) continue;
    const pending = level.pending.get(key);
    if (pending && !pending.signal?.aborted) { waits.push(pending.promise); continue; }
    const k = Math.floor((b * U) / R);
    if (run && run.k === k && run.last === b - 1) run.last = b;
    else runs.push((run = { k, first: b, last: b }));
  }
  for (const r of runs) {
    const promise = (level.plain ? readRange(level, r, w, signal) : readChunk(level, r.k, w, signal))
      .then((got) => {
        for (const block of got) {
          level.loaded.set(`${w}/${block.k}`, block);
          onBlock(block);
        }
      });
    const entry = { promise, signal };
    for (let b = r.first; b <= r.last; b++) level.pending.set(`${w}/${b}`, entry);
    const forget = () => {
      for (let b = r.first; b <= r.last; b++) {
        if (level.pending.get(`${w}/${b}`) === entry) level.pending.delete(`${w}/${b}`);
      }
    };
    promise.then(forget, forget);
    waits.push(promise);
  }
  await Promise.all(waits);
}

/** Blocks `first`..`last` of the level's values `values` (rows from `r0`; NaN where the
 * fill value or no covered node). */
function blocksOf(level, first, last, r0, values) {
  const out = [];
  for (let b = first; b <= last; b++) {
    const start = b * level.unit;
    const n = Math.max(0, Math.min(level.unit, level.cells - start));
    const part = values.subarray(start - r0, start - r0 + n);
    const ids = new Float64Array(n);
    let present = 0;
    for (let i = 0; i < n; i++) {
      ids[i] = cellOfRow(level, start + i);
      if (part[i] === level.fill || ids[i] < 0) part[i] = NaN;
      if (part[i] === part[i]) present++;
    }
    out.push({ k: b, r0: start, n, ids, values: part, present, order: level.order });
  }
  return out;
}

/** Run `run` ({k, first, last}: blocks of chunk k) of a plain field: its rows' bytes, by
 * a Range request unless the run is the whole chunk; an absent chunk is the fill value. */
async function readRange(level, run, w, signal) {
  const { get, size, little } = level.plain;
  const R = level.rows;
  const c0 = run.k * R;
  const r0 = run.first * level.unit;
  const rows = Math.max(0, Math.min((run.last + 1) * level.unit, level.cells) - r0);
  const windowRows = level.windowed ? level.meta.chunk_grid.configuration.chunk_shape[0] : 1;
  const offset = ((level.windowed ? w % windowRows : 0) * R + r0 - c0) * size;
  const length = rows * size;
  const key = `/${level.path}/c/${level.windowed ? `${Math.floor(w / windowRows)}/` : ""}${run.k}`;
  const whole = offset === 0 && length === R * windowRows * size;
  const got = whole ? await level.store.get(key, { signal })
    : await level.store.getRange(key, { offset, length }, { signal });
  let bytes = got;
  if (got && got.length !== length) { // a server that ignored the Range: the whole chunk
    if (got.length < offset + length) {
      throw new Error(`${key}: ${got.length} bytes, ${offset + length} expected`);
    }
    bytes = got.subarray(offset, offset + length);
  }
  const values = new Float64Array(rows).fill(NaN);
  if (bytes) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < rows; i++) values[i] = Number(view[get](i * size, little));
  }
  return blocksOf(level, run.first, run.last, r0, values);
}

/** Chunk `k` of the level's field (for window `w`), read whole through zarrita (its
 * codecs), as its one block. */
async function readChunk(level, k, w, signal) {
  const arr = await level.array;
  const windowRows = level.windowed ? arr.chunks[0] : 1;
  const coords = level.windowed ? [Math.floor(w / windowRows), k] : [k];
  const chunk = await arr.getChunk(coords, { signal });
  const r0 = k * level.rows;
  const n = Math.max(0, Math.min(level.rows, level.cells - r0));
  const offset = level.windowed ? (w % windowRows) * chunk.stride[0] : 0;
  const values = new Float64Array(n);
  for (let i = 0; i < n; i++) values[i] = Number(chunk.data[offset + i * chunk.stride.at(-1)]);
  return blocksOf(level, k, k, r0, values);
}
