// Reads every array of a served hierarchy with zarrita.js and prints one JSON document:
//   {"consolidated": bool, "arrays": {path: {data_type, shape, bytes | strings | error}}}
// Fixed-size values are the array's bytes (little-endian, C order) in base64; "string"
// arrays are lists; an array zarrita cannot read gives its error's name and message.
// Usage: node read.mjs URL [PATH ...]   (no PATH: every array the metadata lists)
import * as zarr from "zarrita";

const [url, ...wanted] = process.argv.slice(2);
if (!url) {
  console.error("usage: node read.mjs URL [PATH ...]");
  process.exit(2);
}

const fetched = new zarr.FetchStore(url);
const store = await zarr.withMaybeConsolidatedMetadata(fetched);
const consolidated = store !== fetched;
const paths = wanted.length
  ? wanted.map((p) => "/" + p.replace(/^\/+/, ""))
  : store.contents().filter((n) => n.kind === "array").map((n) => n.path);

function encode(chunk) {
  const data = chunk.data;
  if (ArrayBuffer.isView(data)) {
    return { bytes: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64") };
  }
  return { strings: Array.from(data) };
}

const arrays = {};
for (const path of paths.sort()) {
  const key = path.replace(/^\//, "");
  try {
    const array = await zarr.open.v3(zarr.root(store).resolve(key), { kind: "array" });
    // a 0-d array (the CF grid mapping) is its one chunk: zarrita's get returns a bare scalar
    const chunk = array.shape.length ? await zarr.get(array) : await array.getChunk([]);
    arrays[key] = { data_type: array.dtype, shape: chunk.shape, ...encode(chunk) };
  } catch (err) {
    const cause = err.cause ? `: ${err.cause.name}: ${err.cause.message}` : "";
    arrays[key] = { error: `${err.name}: ${err.message}${cause}` };
  }
}
process.stdout.write(JSON.stringify({ consolidated, arrays }));
