// Prints the centres and corners (south, east, north, west) of NESTED cells as the viewer
// computes them: {"centres": [[lon, lat], ...], "corners": [[lon, lat, ...x4], ...]}.
// Usage: node healpix_check.mjs ORDER ID ...
import { centre, outline } from "../../src/moczarr_store/serve/static/healpix.js";

const [order, ...ids] = process.argv.slice(2);
const cells = ids.map(BigInt);
process.stdout.write(JSON.stringify({
  centres: cells.map((id) => centre(id, Number(order))),
  corners: cells.map((id) => outline(id, Number(order))),
}));
