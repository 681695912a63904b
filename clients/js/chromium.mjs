// Headless Chromium for the page scripts (browse.mjs, cached_fetch.mjs, held_page.mjs):
// the system's browser through puppeteer-core, launched as every script launches it, and
// the wait until the viewer page has drawn or failed.
import puppeteer from "puppeteer-core";

/** The browser at `executablePath`; `options` add to the launch (e.g. `userDataDir`). */
export function launch(executablePath, options = {}) {
  return puppeteer.launch({
    executablePath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    ...options,
  });
}

/** Resolves once the viewer on `page` has drawn or shown an error (at most 60 s). */
export function settled(page) {
  return page.waitForSelector("body[data-state=drawn], body[data-state=error]", { timeout: 60_000 });
}
