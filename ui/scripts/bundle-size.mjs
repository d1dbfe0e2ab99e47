// The first load of the app: the scripts, module preloads and styles `dist/index.html` references (lazy
// chunks are not counted: they load when a screen or a code block needs them), gzip-compressed at level 9
// as a server or CDN would send them. Fails over the budget.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const BUDGET = 250 * 1000;
const dist = new URL("../dist/", import.meta.url).pathname;
const html = readFileSync(join(dist, "index.html"), "utf8");
const files = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.(?:js|css))"/g)].map((match) => match[1]);
let total = gzipSync(html, { level: 9 }).length;
for (const file of files) {
  const size = gzipSync(readFileSync(join(dist, file)), { level: 9 }).length;
  total += size;
  console.log(`${(size / 1000).toFixed(1).padStart(7)} kB  ${file}`);
}
console.log(`${(total / 1000).toFixed(1).padStart(7)} kB  first load, gzip -9 (index.html included); budget ${BUDGET / 1000} kB`);
if (total > BUDGET) {
  console.error(`the first load is over its budget of ${BUDGET / 1000} kB`);
  process.exit(1);
}
