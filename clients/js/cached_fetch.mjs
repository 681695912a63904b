// Fetches keys from a page of URL in headless Chromium (puppeteer-core, the system's
// browser) with `fetch`'s default cache mode, so the browser's HTTP cache answers what it
// may; the profile directory keeps that cache from one run to the next. Prints one JSON
// document: for each key, the status, the Cache-Control header and the body's bytes.
// Usage: node cached_fetch.mjs CHROMIUM URL PROFILE_DIR KEY...
import { launch } from "./chromium.mjs";

const [executablePath, url, userDataDir, ...keys] = process.argv.slice(2);
const browser = await launch(executablePath, { userDataDir });
const report = {};
try {
  const page = await browser.newPage();
  await page.goto(`${url}/`, { waitUntil: "load" });
  for (const key of keys) {
    report[key] = await page.evaluate(async (address) => {
      const response = await fetch(address);
      const body = new Uint8Array(await response.arrayBuffer());
      return {
        status: response.status,
        cache_control: response.headers.get("cache-control"),
        bytes: Array.from(body),
      };
    }, `${url}/${key}`);
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report));
