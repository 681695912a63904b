// Opens a web-map page (Leaflet, drawing a tile layer) in headless Chromium once every
// tile has loaded or failed, and prints one JSON document: console errors and uncaught
// exceptions, every response with a status >= 400, the tiles' URLs, the map's box on the
// page, and where each given [lat, lon] falls on the page (Leaflet's
// `latLngToContainerPoint` plus the map's box);
// it saves a screenshot of the page.
// Usage: node tile_map.mjs CHROMIUM PAGE_URL SCREENSHOT.png POINTS_JSON
import { launch } from "./chromium.mjs";

const [executablePath, url, screenshot, points] = process.argv.slice(2);
const browser = await launch(executablePath);
const report = { errors: [], failed: [] };
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 900, height: 600, deviceScaleFactor: 1 });
  page.on("console", (m) => m.type() === "error" && report.errors.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => report.errors.push(`page: ${e.message}`));
  page.on("requestfailed", (r) => report.errors.push(`request: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => r.status() >= 400 && report.failed.push({ url: r.url(), status: r.status() }));
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => {
    const tiles = [...document.querySelectorAll("img.leaflet-tile")];
    return tiles.length > 0 && tiles.every((t) => t.complete);
  }, { timeout: 240_000, polling: 200 });
  await new Promise((done) => setTimeout(done, 1000)); // Leaflet fades tiles in
  report.tiles = await page.evaluate(() =>
    [...document.querySelectorAll("img.leaflet-tile")].map((t) => t.src));
  // `map` is the page's own global (a top-level const of its script)
  report.box = await page.evaluate(() =>
    (({ x, y, width, height }) => ({ x, y, width, height }))(
      document.getElementById("map").getBoundingClientRect()));
  report.points = await page.evaluate((given) => {
    const box = document.getElementById("map").getBoundingClientRect();
    return given.map(([lat, lon]) => {
      const at = map.latLngToContainerPoint([lat, lon]); // eslint-disable-line no-undef
      return [at.x + box.left, at.y + box.top];
    });
  }, JSON.parse(points));
  await page.screenshot({ path: screenshot });
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
