// Opens the viewer page in headless Chromium (puppeteer-core, the system's browser) and
// prints one JSON document: console errors and uncaught exceptions, every response with a
// status >= 400, the viewer's state (product, field, order, window, cells drawn), the
// legend's values and text, the map's box on the page; it saves a screenshot of the page.
// Usage: node browse.mjs CHROMIUM URL SCREENSHOT.png [ZOOM_FACTOR]
// (ZOOM_FACTOR: zoom in about the first cell with a value once the page is drawn)
import { launch, settled } from "./chromium.mjs";

const [executablePath, url, screenshot, zoom] = process.argv.slice(2);
const browser = await launch(executablePath);
const report = { errors: [], failed: [] };
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 700 });
  page.on("console", (m) => m.type() === "error" && report.errors.push(`console: ${m.text()} ${m.location()?.url ?? ""}`));
  page.on("pageerror", (e) => report.errors.push(`page: ${e.message}`));
  page.on("requestfailed", (r) => report.errors.push(`request: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => r.status() >= 400 && report.failed.push({ url: r.url(), status: r.status() }));
  await page.goto(url, { waitUntil: "load" });
  await settled(page);
  if (zoom) {
    report.before = await page.evaluate(() => ({ order: window.viewer.state.order }));
    await page.evaluate((f) => { // about the first cell with a value
      const { data } = window.viewer.state;
      const i = data.numbers.findIndex((v) => Number.isFinite(v) && v !== data.fill);
      return window.viewer.zoom(Number(f), ...data.shapes[i % data.cells][0]);
    }, zoom);
    await settled(page);
  }
  report.state = await page.evaluate(() => {
    const { product, field, order, window: w, drawn, data } = window.viewer?.state ?? {};
    const text = (id) => document.getElementById(id).textContent;
    return {
      page: document.body.dataset.state, status: text("status"), product, field, order,
      window: w, drawn, cells: data?.cells, labels: data ? Array.from(data.labels) : [],
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
  await page.screenshot({ path: screenshot });
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report));
