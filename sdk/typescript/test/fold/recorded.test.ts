// The fold on recorded runs of the real server (test/fixtures/fold, written by bench/record-fixtures.mjs):
// the live streams and the stored history of a session fold to the same view, whatever replays,
// duplicates and splits a client's reconnects and page loads produce. The scenarios are also recorded
// again against the current binary, and their shapes compared with the committed ones, so the fixtures
// cannot silently go stale.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { SequencedEvent } from "../../src/events.js";
import {
  type ConversationState,
  type FoldInput,
  foldAll,
  foldHistoryPages,
  type StoredEventItem,
} from "../../src/fold/index.js";
import { FIXTURES_DIR, type RecordedFrame, type Recording, recordScenarios, SCENARIOS } from "./record.js";

const recordings: Recording[] = readdirSync(FIXTURES_DIR)
  .filter((file) => file.endsWith(".json"))
  .sort()
  .map((file) => JSON.parse(readFileSync(join(FIXTURES_DIR, file), "utf8")) as Recording);

function streams(recording: Recording): SequencedEvent[][] {
  return recording.streams.map((stream) => stream as unknown as SequencedEvent[]);
}

function liveInputs(recording: Recording): SequencedEvent[] {
  return streams(recording).flat();
}

function historyPages(recording: Recording): StoredEventItem[][] {
  return recording.history.map((page) => page as unknown as StoredEventItem[]);
}

/** The history's items, oldest first. */
function historyInputs(recording: Recording): StoredEventItem[] {
  return historyPages(recording).flat().reverse();
}

const RUNS = { numRuns: 150 };

test("every scenario has a committed recording", () => {
  assert.deepEqual(recordings.map((recording) => recording.scenario).sort(), Object.keys(SCENARIOS).sort());
});

for (const recording of recordings) {
  describe(`recorded: ${recording.scenario}`, () => {
    const expected = foldHistoryPages(historyPages(recording));

    test("the live streams fold to the view of the stored history", () => {
      assert.deepEqual(foldAll(liveInputs(recording)), expected);
      assert.notEqual(expected.status, "running");
      assert.ok(expected.turns.length === recording.streams.length);
    });

    test("a reconnect replaying an earlier range of a turn's stream changes nothing", () => {
      const perTurn = streams(recording);
      const cuts = fc.tuple(
        ...perTurn.map((stream) =>
          fc
            .tuple(fc.nat(stream.length), fc.nat(stream.length))
            .map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const),
        ),
      );
      fc.assert(
        fc.property(cuts, (points) => {
          // The client read each stream up to `seen`, reconnected, and the server replayed from `from`.
          const inputs = perTurn.flatMap((stream, index) => {
            const [from, seen] = points[index] ?? [0, 0];
            return [...stream.slice(0, seen), ...stream.slice(from)];
          });
          assert.deepEqual(foldAll(inputs), expected);
        }),
        RUNS,
      );
    });

    test("inputs duplicated at random, later in the same stream or after it, change nothing", () => {
      const perTurn = streams(recording);
      fc.assert(
        fc.property(fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { maxLength: 12 }), (duplications) => {
          const copies = perTurn.map((stream) => [...stream] as SequencedEvent[]);
          for (const [turn, at, to] of duplications) {
            const stream = copies[turn % copies.length] as SequencedEvent[];
            const frame = stream[at % stream.length] as SequencedEvent;
            const position = (at % stream.length) + 1 + (to % (stream.length - (at % stream.length)));
            stream.splice(position, 0, frame);
          }
          assert.deepEqual(foldAll(copies.flat()), expected);
        }),
        RUNS,
      );
      fc.assert(
        fc.property(fc.array(fc.nat(), { maxLength: 12 }), (picks) => {
          const items: FoldInput[] = historyInputs(recording);
          for (const pick of picks) {
            const at = pick % items.length;
            items.splice(at + 1 + (pick % (items.length - at)), 0, items[at] as FoldInput);
          }
          assert.deepEqual(foldAll(items), expected);
        }),
        RUNS,
      );
    });

    test("folding in two parts equals folding at once", () => {
      const live = liveInputs(recording);
      const stored = historyInputs(recording);
      fc.assert(
        fc.property(fc.nat(live.length), fc.nat(stored.length), (liveCut, storedCut) => {
          const first: ConversationState = foldAll(live.slice(0, liveCut));
          assert.deepEqual(foldAll(live.slice(liveCut), first), foldAll(live));
          const older = foldAll(stored.slice(0, storedCut));
          assert.deepEqual(foldAll(stored.slice(storedCut), older), expected);
        }),
        RUNS,
      );
    });

    test("the history of earlier turns, then the live stream of the later ones, equals the history", () => {
      const items = historyInputs(recording);
      const perTurn = streams(recording);
      for (let cut = 0; cut <= perTurn.length; cut += 1) {
        const turnIds = new Set(
          perTurn
            .slice(0, cut)
            .map((stream) => (stream[0]?.event as { turn_id?: string } | undefined)?.turn_id),
        );
        const earlier = items.filter((item) => turnIds.has(item.turn_id));
        assert.deepEqual(foldAll(perTurn.slice(cut).flat(), foldAll(earlier)), expected, `cut ${cut}`);
      }
    });
  });
}

// ---- re-recording ------------------------------------------------------------------------------------------

/** An event's shape: its type and keys (tool-call fragments by their keys), without ids or times. */
function shapeOf(event: Record<string, unknown>): string {
  const keys = Object.keys(event)
    .filter((key) => key !== "created_at")
    .sort()
    .map((key) => {
      const value = event[key];
      if (key === "tool_calls" && Array.isArray(value)) {
        return `${key}[${value
          .map((call) =>
            Object.keys(call as object)
              .sort()
              .join("+"),
          )
          .join(",")}]`;
      }
      if (key === "state" && typeof value === "object" && value !== null) {
        return `state:${(value as { status?: string }).status}`;
      }
      return key;
    });
  return `${String(event.type)}(${keys.join(" ")})`;
}

/** Shapes of a sequence with runs of one shape collapsed (how many chunks arrive before a cancel varies). */
function shapes(events: readonly Record<string, unknown>[]): string[] {
  const result: string[] = [];
  for (const event of events) {
    const shape = shapeOf(event);
    if (result.at(-1) !== shape) {
      result.push(shape);
    }
  }
  return result;
}

function shapeOfRecording(recording: Recording) {
  return {
    streams: recording.streams.map((stream) => shapes(stream.map((frame: RecordedFrame) => frame.event))),
    seqs: recording.streams.map((stream) => stream.every((frame, index) => frame.seq === index + 1)),
    history: shapes(recording.history.flat().map((item) => item.event)),
  };
}

describe("the recordings are current", () => {
  test("recording every scenario again gives the committed shapes, and live equals history", async () => {
    const fresh = await recordScenarios();
    for (const recording of fresh) {
      const committed = recordings.find((candidate) => candidate.scenario === recording.scenario);
      assert.ok(committed, `no committed recording for ${recording.scenario}`);
      assert.deepEqual(
        shapeOfRecording(recording),
        shapeOfRecording(committed),
        `${recording.scenario} changed: run bench/record-fixtures.mjs`,
      );
      assert.deepEqual(
        foldAll(liveInputs(recording)),
        foldHistoryPages(historyPages(recording)),
        recording.scenario,
      );
    }
  });
});
