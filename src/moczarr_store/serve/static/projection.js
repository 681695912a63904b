// The map's projections, each from (lon, lat) in degrees to a plane in degrees and back:
// plate carrée (the plane is (lon, lat); it repeats every 360 degrees of longitude), and
// azimuthal equidistant about the north pole (Greenwich down) or the south pole (Greenwich
// up), where a point lies at its angular distance from the pole. Cost: O(1) per point.

const RAD = Math.PI / 180;

export const PROJECTIONS = {
  plate: {
    label: "plate carrée",
    wraps: true,
    forward: (lon, lat) => [lon, lat],
    inverse: (x, y) => [x, y],
  },
  north: {
    label: "Arctic",
    pole: 90,
    forward: (lon, lat) => [(90 - lat) * Math.sin(lon * RAD), -(90 - lat) * Math.cos(lon * RAD)],
    inverse: (x, y) => [Math.atan2(x, -y) / RAD, 90 - Math.min(180, Math.hypot(x, y))],
  },
  south: {
    label: "Antarctic",
    pole: -90,
    forward: (lon, lat) => [(90 + lat) * Math.sin(lon * RAD), (90 + lat) * Math.cos(lon * RAD)],
    inverse: (x, y) => [Math.atan2(x, y) / RAD, Math.min(180, Math.hypot(x, y)) - 90],
  },
};

/** The projection named `name` (plate carrée when unknown). */
export function projectionOf(name) {
  return PROJECTIONS[name] ?? PROJECTIONS.plate;
}

/** The lon/lat box {w, e, s, n} holding every point of the plane rectangle
 * [x0, x1] × [y0, y1] of an azimuthal projection `p` (longitudes continuous, possibly
 * past ±180; every longitude when the rectangle holds the pole). */
export function azimuthalBounds(p, x0, x1, y0, y1) {
  const corners = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]];
  const far = Math.max(...corners.map(([x, y]) => Math.hypot(x, y)));
  const nx = Math.max(x0, Math.min(0, x1)); // the rectangle's point nearest the pole
  const ny = Math.max(y0, Math.min(0, y1));
  const near = Math.hypot(nx, ny);
  const [s, n] = p.pole > 0 ? [90 - Math.min(180, far), 90 - near] : [near - 90, Math.min(180, far) - 90];
  if (near === 0) return { w: -180, e: 180, s, n };
  // a convex set without the pole: its longitudes span its corners' (less than 180 degrees)
  const lons = corners.map(([x, y]) => p.inverse(x, y)[0]);
  const continuous = lons.map((lon) => lon - 360 * Math.round((lon - lons[0]) / 360));
  return { w: Math.min(...continuous), e: Math.max(...continuous), s, n };
}
