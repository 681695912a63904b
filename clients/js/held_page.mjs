// Keeps the viewer page open in headless Chromium (puppeteer-core, the system's browser)
// while the caller changes the server: opens URL, waits until the page has drawn (or
// failed), prints one line "opened", waits for the file SIGNAL to exist, clicks the tree's
// button for array PATH (a user choosing a field) and prints one JSON document: the page's
// state ("drawn" or "error"), its status line and what it drew.
// Usage: node held_page.mjs CHROMIUM URL SIGNAL PATH
import { existsSync } from "node:fs";
import { launch, settled } from "./chromium.mjs";

const [executablePath, url, signal, path] = process.argv.slice(2);
const browser = await launch(executablePath);
try {
  const page = await browser.newPage();
  await page.goto(url, { waitUntil: "load" });
  await settled(page);
  process.stdout.write("opened\n");
  for (let waited = 0; !existsSync(signal); waited += 50) {
    if (waited > 120_000) throw new Error(`no ${signal} after 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await page.evaluate(() => { document.body.dataset.state = "loading"; });
  await page.evaluate((p) => document.querySelector(`nav button[data-path="${p}"]`).click(), path);
  await settled(page);
  const report = await page.evaluate(() => ({
    page: document.body.dataset.state,
    status: document.getElementById("status").textContent,
    field: window.viewer.state.field,
    drawn: window.viewer.state.drawn,
  }));
  process.stdout.write(JSON.stringify(report));
} finally {
  await browser.close();
}
