// Folds a 10,000-event session built from the recorded runs (test/fixtures/fold): the live streams of
// every scenario, repeated with fresh ids, each repetition's first turn continuing the previous one's
// last, as one long conversation. Prints the events folded per second (median of several runs) for the
// live streams and for the same session's stored history.
//
//   npm run build && node bench/fold.mjs          (uses dist/; falls back to build/src/ after `npm test`)

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const entry = existsSync(join(root, "dist/fold/index.js"))
  ? join(root, "dist/fold/index.js")
  : join(root, "build/src/fold/index.js");
const { foldAll } = await import(entry);

const TARGET = 10_000;
const RUNS = 9;
const fixtures = join(root, "test/fixtures/fold");
const recordings = readdirSync(fixtures)
  .filter((file) => file.endsWith(".json"))
  .sort()
  .map((file) => JSON.parse(readFileSync(join(fixtures, file), "utf8")));
const liveTemplate = JSON.stringify(recordings.map((recording) => recording.streams));
const historyTemplate = JSON.stringify(recordings.map((recording) => recording.history));
const ID = /"(01[0-9a-z]{24}(?:\.local)?|call_fake_\d+_\d+)"/g;

const live = [];
const history = [];
let previousTurn = null;
for (let copy = 0; live.length < TARGET; copy += 1) {
  const fresh = (template) => JSON.parse(template.replace(ID, (_, id) => `"${id}-${copy}"`));
  const streams = fresh(liveTemplate).flat();
  const pages = fresh(historyTemplate);
  for (const stream of streams) {
    const created = stream[0].event;
    if (created.previous_turn_id === null) {
      created.previous_turn_id = previousTurn;
    }
    previousTurn = created.turn_id;
    live.push(...stream);
  }
  // Oldest first: each recording's pages reversed, each page reversed.
  for (const recordingPages of pages) {
    history.push(...recordingPages.flat().reverse());
  }
}
live.length = Math.min(live.length, TARGET);

function measure(inputs) {
  const rates = [];
  let state;
  for (let run = 0; run < RUNS; run += 1) {
    const start = process.hrtime.bigint();
    state = foldAll(inputs);
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    rates.push(inputs.length / seconds);
  }
  rates.sort((a, b) => a - b);
  return { median: rates[Math.floor(RUNS / 2)], state };
}

const liveResult = measure(live);
const historyResult = measure(history);
const format = (rate) => `${Math.round(rate).toLocaleString("en-US")} events/s`;
console.log(`fold (${entry.replace(`${root}/`, "")}), median of ${RUNS} runs, node ${process.version}`);
console.log(
  `live:    ${live.length} events (${liveResult.state.turns.length} turns, ${liveResult.state.turns.reduce((sum, turn) => sum + Object.keys(turn.messages).length, 0)} messages): ${format(liveResult.median)}`,
);
console.log(
  `history: ${history.length} events (${historyResult.state.turns.length} turns): ${format(historyResult.median)}`,
);
