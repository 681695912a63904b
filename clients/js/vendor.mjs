// Copies the viewer's browser modules, verbatim, from this directory's pinned npm install
// (`npm ci`) into src/moczarr_store/serve/static/vendor/, with a manifest of package
// versions and file hashes. Run after changing package.json: `npm install && node vendor.mjs`.
// `node vendor.mjs --check` copies nothing: it fails unless the vendored files are exactly
// the installed ones (the tests run it), and prints {"checked": N}.
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = join(here, "node_modules");
const target = join(here, "..", "..", "src", "moczarr_store", "serve", "static", "vendor");

// package -> the files the browser loads (zarrita's whole dist; FetchStore; the numcodecs
// codecs zarrita imports lazily: blosc, zstd, lz4 and their shared chunk; Natural Earth's
// land at 1:110m as TopoJSON, the map's coastlines)
const PACKAGES = {
  zarrita: (name) => name.startsWith("dist/src/") && name.endsWith(".js"),
  "@zarrita/storage": (name) => ["dist/src/fetch.js", "dist/src/util.js"].includes(name),
  numcodecs: (name) => /^dist\/(blosc|zstd|lz4|chunk-[A-Z0-9]+)\.js$/.test(name),
  "world-atlas": (name) => name === "land-110m.json",
};

function files(root, dir = root) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? files(root, path) : [relative(root, path)];
  });
}

const check = process.argv.includes("--check");
if (!check) rmSync(target, { recursive: true, force: true });
const manifest = {};
let checked = 0;
for (const [pkg, wanted] of Object.entries(PACKAGES)) {
  const root = join(modules, pkg);
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const copied = {};
  for (const name of [...files(root).filter(wanted), "LICENSE"].sort()) {
    if (check) {
      if (!readFileSync(join(root, name)).equals(readFileSync(join(target, pkg, name)))) {
        throw new Error(`vendored ${pkg}/${name} differs from node_modules: run node vendor.mjs`);
      }
      checked++;
      continue;
    }
    mkdirSync(dirname(join(target, pkg, name)), { recursive: true });
    cpSync(join(root, name), join(target, pkg, name));
    copied[name] = createHash("sha256").update(readFileSync(join(root, name))).digest("hex");
  }
  manifest[pkg] = { version, files: copied };
}
if (check) {
  process.stdout.write(JSON.stringify({ checked }));
  process.exit(0);
}
writeFileSync(join(target, "VENDORED.json"), JSON.stringify(manifest, null, 1) + "\n");
console.error(`vendored ${Object.keys(manifest).join(", ")} into ${relative(process.cwd(), target)}`);
