// Bundles dist/index.js for browsers (minified ESM) with esbuild and prints its minified and gzipped sizes.
// The generated OpenAPI types are types only: nothing of them reaches the bundle. Run `npm run build` first.

import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const entry = new URL("../dist/index.js", import.meta.url).pathname;
const result = await build({
  entryPoints: [entry],
  bundle: true,
  minify: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  write: false,
  metafile: true,
});
const code = result.outputFiles[0].contents;
const gzip = gzipSync(code, { level: 9 }).length;
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} kB`;
const limit = 20 * 1024;
console.log(`@trueforge/sdk browser bundle: ${kb(code.length)} minified, ${kb(gzip)} gzip (limit ${kb(limit)} gzip)`);
for (const [file, info] of Object.entries(result.metafile.outputs)) {
  const inputs = Object.entries(info.inputs).sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput);
  for (const [input, { bytesInOutput }] of inputs.slice(0, 12)) {
    console.log(`  ${input.replace(/^.*?dist\//, "dist/")}: ${kb(bytesInOutput)}`);
  }
  void file;
}
if (gzip > limit) {
  console.error("over the limit");
  process.exitCode = 1;
}
