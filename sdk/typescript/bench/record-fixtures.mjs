// Records the fold's fixtures against the real server (TRUEFORGE_BIN / FAKE_LLM_BIN, else the workspace's
// release builds) and writes them to test/fixtures/fold/<scenario>.json. Run after `npm test` (or
// `tsc -p tsconfig.test.json`), which compiles the recorder to build/test/fold/record.js:
//
//   node bench/record-fixtures.mjs [scenario ...]

import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { FIXTURES_DIR, recordScenarios } from "../build/test/fold/record.js";

const recordings = await recordScenarios(process.argv.length > 2 ? process.argv.slice(2) : undefined);
for (const recording of recordings) {
  const file = join(FIXTURES_DIR, `${recording.scenario}.json`);
  await writeFile(file, `${JSON.stringify(recording, null, 2)}\n`);
  const frames = recording.streams.reduce((sum, stream) => sum + stream.length, 0);
  const items = recording.history.reduce((sum, page) => sum + page.length, 0);
  console.log(`${recording.scenario}: ${frames} live frames, ${items} stored events -> ${file}`);
}
// The package's formatter covers test/**: leave the fixtures as it formats them.
execFileSync(join("node_modules", ".bin", "biome"), ["format", "--write", FIXTURES_DIR], { stdio: "inherit" });
