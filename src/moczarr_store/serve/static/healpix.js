// HEALPix NESTED cells on the sphere: centres and outlines as (lon, lat) in degrees.
// A cell id is face * 4**order + the bit-interleaved (x, y) position in its base face;
// points are mapped face -> HEALPix projection plane (t, u) -> sphere (Calabretta &
// Roukema 2007). Cost: O(1) per point, no tables beyond the 12 base faces.

const JRLL = [2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4]; // ring of each face's centre, in nside
const JPLL = [1, 3, 5, 7, 0, 2, 4, 6, 1, 3, 5, 7]; // longitude of each face's centre, in pi/4
const QUARTER = Math.PI / 4;
const DEG = 180 / Math.PI;

function evenBits(v) { // the even bits of a 32-bit value, packed into 16
  v &= 0x55555555;
  v = (v | (v >>> 1)) & 0x33333333;
  v = (v | (v >>> 2)) & 0x0f0f0f0f;
  v = (v | (v >>> 4)) & 0x00ff00ff;
  return (v | (v >>> 8)) & 0x0000ffff;
}

/** (face, ix, iy) of a NESTED cell id (a BigInt or a safe integer) at `order` (<= 29). */
export function decode(id, order) {
  const big = BigInt(id);
  const bits = BigInt(2 * order);
  const face = Number(big >> bits);
  const inFace = big & ((1n << bits) - 1n);
  const lo = Number(inFace & 0xffffffffn);
  const hi = Number(inFace >> 32n);
  const ix = evenBits(lo) + evenBits(hi) * 65536;
  const iy = evenBits(lo >>> 1) + evenBits(hi >>> 1) * 65536;
  if (!(face >= 0 && face < 12)) throw new RangeError(`cell ${id} is not a NESTED id at order ${order}`);
  return [face, ix, iy];
}

/** [lon, lat] in degrees of the point (x, y) in [0, 1]^2 of base face `face`
 * (x along the cell's ix axis, y along iy); lon in [-180, 180). */
export function facePoint(face, x, y) {
  const t = QUARTER * (JPLL[face] + x - y);
  const u = QUARTER * (2 - JRLL[face] + x + y);
  let phi = t;
  let z;
  if (Math.abs(u) <= QUARTER) {
    z = (8 / (3 * Math.PI)) * u;
  } else {
    const sigma = 2 - Math.abs(u) / QUARTER;
    z = Math.sign(u) * (1 - (sigma * sigma) / 3);
    const tt = ((t % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI);
    const centre = (Math.floor(tt / (2 * QUARTER)) + 0.5) * 2 * QUARTER;
    phi = sigma > 1e-12 ? centre + (tt - centre) / sigma : centre;
  }
  let lon = phi * DEG;
  lon = ((((lon + 180) % 360) + 360) % 360) - 180;
  return [lon, Math.asin(Math.max(-1, Math.min(1, z))) * DEG];
}

/** [lon, lat] of the centre of a NESTED cell. */
export function centre(id, order) {
  const [face, ix, iy] = decode(id, order);
  const n = 2 ** order;
  return facePoint(face, (ix + 0.5) / n, (iy + 0.5) / n);
}

/** The outline of a NESTED cell: `steps` points per edge, counter-clockwise from the
 * south corner, as a flat [lon0, lat0, lon1, lat1, ...] (4 * steps points). */
export function outline(id, order, steps = 1) {
  const [face, ix, iy] = decode(id, order);
  const n = 2 ** order;
  const corners = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]];
  const out = [];
  for (let e = 0; e < 4; e++) {
    const [x0, y0] = corners[e];
    const [x1, y1] = corners[e + 1];
    for (let s = 0; s < steps; s++) {
      const f = s / steps;
      out.push(...facePoint(face, (ix + x0 + f * (x1 - x0)) / n, (iy + y0 + f * (y1 - y0)) / n));
    }
  }
  return out;
}
