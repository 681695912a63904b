// Opens the viewer page in headless Chromium (puppeteer-core, the system's browser) and
// prints one JSON document: console errors and uncaught exceptions, every response with a
// status >= 400, the viewer's state (product, field, order, window, cells drawn), the
// legend's values and text, the map's box on the page, the requests the page sent and the
// most in flight at once (counted by the browser); it saves a screenshot of the page.
// Usage: node browse.mjs CHROMIUM URL SCREENSHOT.png [ZOOM_FACTOR [ZOOMED.png]]
// (ZOOM_FACTOR: once drawn, zoom in about the first cell with a value, and screenshot
// that view as ZOOMED.png; "before" then describes the first view)
import { launch, settled } from "./chromium.mjs";

const [executablePath, url, screenshot, zoom, zoomed] = process.argv.slice(2);
const browser = await launch(executablePath);
const report = { errors: [], failed: [], requests: 0, max_in_flight: 0, keys: [] };
let inFlight = 0;
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 700 });
  page.on("console", (m) => m.type() === "error" && report.errors.push(`console: ${m.text()} ${m.location()?.url ?? ""}`));
  page.on("pageerror", (e) => report.errors.push(`page: ${e.message}`));
  page.on("requestfailed", (r) => report.errors.push(`request: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => r.status() >= 400 && report.failed.push({ url: r.url(), status: r.status() }));
  // the hierarchy's keys: not the page, nor its scripts and coastlines (/.static/)
  const key = (r) => r.resourceType() !== "document" && !new URL(r.url()).pathname.startsWith("/.static/");
  page.on("request", (r) => {
    if (!key(r)) return;
    report.requests++;
    report.keys.push(new URL(r.url()).pathname.slice(1));
    report.max_in_flight = Math.max(report.max_in_flight, ++inFlight);
  });
  const done = (r) => key(r) && inFlight--;
  page.on("requestfinished", done);
  page.on("requestfailed", done);
  await page.goto(url, { waitUntil: "load" });
  await settled(page);
  const describe = () => page.evaluate(() => {
    const { product, field, order, window: w, drawn, read, unit, first, complete, labels, refused, view } = window.viewer?.state ?? {};
    const text = (id) => document.getElementById(id).textContent;
    return {
      page: document.body.dataset.state, status: text("status"), product, field, order,
      window: w, drawn, read, unit, first, complete, refused, labels: Array.from(labels ?? []), view,
      stats: { ...window.viewer?.stats },
      legend: {
        min: document.getElementById("legend-min").dataset.value,
        max: document.getElementById("legend-max").dataset.value,
        min_text: text("legend-min"), max_text: text("legend-max"),
      },
      map: (({ x, y, width, height }) => ({ x, y, width, height }))(
        document.getElementById("map").getBoundingClientRect()),
      tree: Array.from(document.querySelectorAll("nav button"), (b) => b.dataset.path),
    };
  });
  if (zoom) {
    report.before = { ...(await describe()), requests: report.requests };
    await page.screenshot({ path: screenshot });
    await page.evaluate(async (f) => { // about the first cell with a value
      document.body.dataset.state = "loading";
      const at = window.viewer.firstCell();
      await window.viewer.zoom(Number(f), ...at);
      const [x, y] = window.viewer.at(...at); // the pointer over that cell
      const box = document.getElementById("map").getBoundingClientRect();
      document.getElementById("map").dispatchEvent(new PointerEvent("pointermove",
        { clientX: box.x + x, clientY: box.y + y, bubbles: true }));
    }, zoom);
    await settled(page);
  }
  report.state = await describe();
  report.state.pointer = await page.evaluate(() => document.getElementById("pointer").textContent);
  await page.screenshot({ path: zoom ? zoomed ?? screenshot : screenshot });
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report));
