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
  if (typeof id === "number" && order <= 24) return decodeNumber(id, order);
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

function decodeNumber(id, order) { // the same as decode, without BigInt (ids < 2**53)
  const cells = 4 ** order;
  const face = Math.floor(id / cells);
  if (!(face >= 0 && face < 12)) throw new RangeError(`cell ${id} is not a NESTED id at order ${order}`);
  const inFace = id - face * cells;
  const lo = inFace % 4294967296;
  const hi = (inFace - lo) / 4294967296;
  return [face, evenBits(lo) + evenBits(hi) * 65536, evenBits(lo >>> 1) + evenBits(hi >>> 1) * 65536];
}

function spread(v) { // the 16 low bits of v at the even bits of a 32-bit value
  v &= 0xffff;
  v = (v | (v << 8)) & 0x00ff00ff;
  v = (v | (v << 4)) & 0x0f0f0f0f;
  v = (v | (v << 2)) & 0x33333333;
  return ((v | (v << 1)) & 0x55555555) >>> 0;
}

/** The NESTED id (a number; `order` <= 24) of the cell holding (lon, lat) in degrees
 * (healpix_base's ang2pix, NESTED). */
export function cellAt(lon, lat, order) {
  const nside = 2 ** order;
  const z = Math.sin(Math.max(-90, Math.min(90, lat)) / DEG);
  const za = Math.abs(z);
  const tt = ((((lon / DEG) % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI)) / (Math.PI / 2);
  let face;
  let ix;
  let iy;
  if (za <= 2 / 3) {
    const a = nside * (0.5 + tt);
    const b = nside * z * 0.75;
    const jp = Math.floor(a - b);
    const jm = Math.floor(a + b);
    const ifp = Math.floor(jp / nside);
    const ifm = Math.floor(jm / nside);
    face = ifp === ifm ? (ifp % 4) + 4 : ifp < ifm ? ifp % 4 : (ifm % 4) + 8;
    ix = jm % nside;
    iy = nside - (jp % nside) - 1;
  } else {
    const ntt = Math.min(3, Math.floor(tt));
    const tp = tt - ntt;
    const tmp = nside * Math.sqrt(3 * (1 - za));
    const jp = Math.min(nside - 1, Math.floor(tp * tmp));
    const jm = Math.min(nside - 1, Math.floor((1 - tp) * tmp));
    [face, ix, iy] = z >= 0 ? [ntt, nside - jm - 1, nside - jp - 1] : [ntt + 8, jp, jm];
  }
  const lo = (spread(ix) | (spread(iy) << 1)) >>> 0;
  const hi = spread(Math.floor(ix / 65536)) + 2 * spread(Math.floor(iy / 65536));
  return face * 4 ** order + hi * 4294967296 + lo;
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
