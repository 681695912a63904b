// Coastlines: Natural Earth's land at 1:110m (world-atlas's land-110m.json, vendored),
// decoded from TopoJSON into rings of [lon, lat] in degrees. Cost: one request for the
// 55 kB file, O(points) to decode.

/** The land's outer and inner rings, each { points, coast, west, east }: a flat
 * Float64Array [lon0, lat0, lon1, ...] continuous in longitude (it may leave [-180, 180]:
 * Afro-Eurasia lies at -377.6 ... -169.9), how many of its points are on the coast (the
 * first ones) and its longitude range; a ring around a pole (Antarctica) is closed along
 * the pole, by points that are not on the coast. */
export async function landRings(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`coastlines: ${url} answered ${response.status}`);
  const topo = await response.json();
  const [sx, sy] = topo.transform?.scale ?? [1, 1];
  const [tx, ty] = topo.transform?.translate ?? [0, 0];
  const arcs = topo.arcs.map((arc) => { // quantized, delta-encoded positions -> degrees
    let x = 0;
    let y = 0;
    return arc.map(([dx, dy]) => {
      x += topo.transform ? dx : dx - x;
      y += topo.transform ? dy : dy - y;
      return [x * sx + tx, y * sy + ty];
    });
  });
  const ring = (indices) => {
    const points = [];
    for (const i of indices) {
      const arc = i < 0 ? arcs[~i].slice().reverse() : arcs[i];
      points.push(...(points.length ? arc.slice(1) : arc));
    }
    for (let i = 1; i < points.length; i++) { // no jumps across the antimeridian
      while (points[i][0] - points[i - 1][0] > 180) points[i][0] -= 360;
      while (points[i][0] - points[i - 1][0] < -180) points[i][0] += 360;
    }
    const coast = points.length;
    const [first, last] = [points[0], points.at(-1)];
    if (Math.abs(last[0] - first[0]) > 180) { // around a pole: close along it, every 10
      // degrees (on a map about the other pole, the pole is the map's rim)
      const pole = points.reduce((s, p) => s + p[1], 0) < 0 ? -90 : 90;
      const steps = Math.ceil(Math.abs(first[0] - last[0]) / 10);
      for (let i = 0; i <= steps; i++) points.push([last[0] + ((first[0] - last[0]) * i) / steps, pole]);
    }
    const lons = points.map((p) => p[0]);
    return { points: Float64Array.from(points.flat()), coast, west: Math.min(...lons), east: Math.max(...lons) };
  };
  const rings = [];
  const visit = (geometry) => {
    if (geometry.type === "GeometryCollection") geometry.geometries.forEach(visit);
    else if (geometry.type === "Polygon") geometry.arcs.forEach((r) => rings.push(ring(r)));
    else if (geometry.type === "MultiPolygon") geometry.arcs.flat().forEach((r) => rings.push(ring(r)));
  };
  Object.values(topo.objects).forEach(visit);
  return rings;
}
