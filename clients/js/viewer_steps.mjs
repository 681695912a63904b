// Drives the viewer page in headless Chromium (puppeteer-core, the system's browser) through
// a list of steps, as a user would, and prints one JSON document: per step the page's state
// and what its map canvas (of "size" [width, height]) shows.
// Usage: node viewer_steps.mjs CHROMIUM URL STEPS_JSON [SCREENSHOT_PREFIX]
// A step is an object with any of:
//   "view": [lon, lat, pixels_per_degree] (and "projection"): look there, read and draw;
//   "projection": "plate" | "north" | "south": choose it in the page's selector;
//   "choose": "product/oK/field": click that array's button in the tree;
//   "zoom": factor: zoom in by it about the first cell holding a value, read and draw;
//   "sample": [[lon, lat], ...]: the map's colour [r, g, b] there (the mean of 3 x 3 pixels;
//   null off the map);
//   "box": [x, y, width, height] or "locator": the count of pixels of each kind in that part
//   of the map (default: all of it): "red" (the locator's box: red above 150, green and
//   blue under 100), "cells" (viridis: max - min channel > 40), "coast" (within 12 of
//   #404040 per channel), "land" (red above blue by more than 4), "sea" (blue above red).
// Every step waits until the page has drawn (or failed) and reports when the page drew its
// first picture and completed the view ("first", "complete": ms since it started, the
// view's own ms, requests and bytes until then); "errors" lists console errors,
// uncaught exceptions and failed requests.
import { launch, settled } from "./chromium.mjs";

const [executablePath, url, stepsJson, prefix] = process.argv.slice(2);
const steps = JSON.parse(stepsJson);
const browser = await launch(executablePath);
const errors = [];
const out = [];
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 700 });
  page.on("console", (m) => m.type() === "error" && errors.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  page.on("response", (r) => r.status() >= 400 && errors.push(`response: ${r.status()} ${r.url()}`));
  await page.goto(url, { waitUntil: "load" });
  await settled(page);
  for (const [i, step] of [{}, ...steps].entries()) {
    if (step.choose || step.view || step.projection || step.zoom) {
      await page.evaluate(() => { document.body.dataset.state = "loading"; });
    }
    if (step.choose) {
      await page.evaluate((p) => document.querySelector(`nav button[data-path="${p}"]`).click(), step.choose);
      await settled(page);
    }
    if (step.projection && !step.view) {
      await page.evaluate((p) => {
        const select = document.getElementById("projection");
        select.value = p;
        select.dispatchEvent(new Event("change"));
      }, step.projection);
      await settled(page);
    }
    if (step.zoom) {
      await page.evaluate((f) => window.viewer.zoom(f, ...window.viewer.firstCell()), step.zoom);
      await settled(page);
    }
    if (step.view) {
      await page.evaluate((v, p) => window.viewer.look(...v, p), step.view, step.projection);
      await settled(page);
    }
    if (prefix) await page.screenshot({ path: `${prefix}${i}.png` });
    out.push(await page.evaluate((s) => {
      const canvas = document.getElementById("map");
      const g = canvas.getContext("2d");
      const { state } = window.viewer;
      const text = (id) => document.getElementById(id).textContent;
      const sample = (s.sample ?? []).map(([lon, lat]) => {
        const [x, y] = window.viewer.at(lon, lat).map(Math.round);
        if (!(x >= 1 && y >= 1 && x < canvas.width - 1 && y < canvas.height - 1)) return null;
        const d = g.getImageData(x - 1, y - 1, 3, 3).data;
        return [0, 1, 2].map((c) => Math.round((d[c] + d[c + 4] + d[c + 8] + d[c + 12] + d[c + 16] +
          d[c + 20] + d[c + 24] + d[c + 28] + d[c + 32]) / 9));
      });
      const { x, y, width, height } = state.locator ?? {};
      const [bx, by, bw, bh] = s.box === "locator" ? [x, y, width, height] : s.box ?? [0, 0, canvas.width, canvas.height];
      const d = g.getImageData(bx, by, bw, bh).data;
      const pixels = { red: 0, cells: 0, coast: 0, land: 0, sea: 0 };
      for (let k = 0; k < d.length; k += 4) {
        const [r, gr, b] = [d[k], d[k + 1], d[k + 2]];
        if (r > 150 && gr < 100 && b < 100) pixels.red++;
        else if (Math.max(r, gr, b) - Math.min(r, gr, b) > 40) pixels.cells++;
        else if (Math.abs(r - 64) <= 12 && Math.abs(gr - 64) <= 12 && Math.abs(b - 64) <= 12) pixels.coast++;
        else if (r > b + 4) pixels.land++;
        else if (b > r) pixels.sea++;
      }
      return {
        page: document.body.dataset.state, status: text("status"), product: state.product,
        field: state.field, order: state.order, drawn: state.drawn, view: { ...state.view },
        locator: state.locator ?? null, size: [canvas.width, canvas.height], sample, pixels, first: state.first, complete: state.complete,
        stats: { ...window.viewer.stats },
        legend: { min: text("legend-min"), max: text("legend-max"), hidden: document.getElementById("legend").hidden },
      };
    }, step));
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify({ errors, steps: out }));
