// The resuming stream against the real server and fake model, through a proxy that cuts the connection at
// chosen bytes of the responses: inside the headers, inside a frame, between frames, inside a multi-byte
// character, several times in one turn, and while subscribing. Whatever the cuts, the events yielded are those
// of an uncut run: dense sequence numbers from 1, each once, ending with one `turn.done`, and the very same
// events (ids included) as an uncut replay of the same turn.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { SequencedEvent } from "../../src/events.js";
import { createTurnStream, subscribeTurnStream, type TurnStream } from "../../src/stream.js";
import { type Cut, CutProxy } from "../support/cut-proxy.js";
import { FAKE_MODEL, type RunningServer, startServer } from "../support/server.js";
import { fetchTransport } from "./fetch-transport.js";

/** Echoed back in 8 chunks, 15 ms apart: multi-byte characters of 2, 3 and 4 bytes in the deltas. */
const MESSAGE = "héllo wörld ✓ 日本 😀 #echo #chunks=8 #delay=15";
const FAST = { backoff: { initialMs: 5, maxMs: 50 }, maxReconnects: 8 } as const;

let server: RunningServer;
let proxy: CutProxy;

async function api(path: string, init: RequestInit = {}): Promise<unknown> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    ...init,
    headers: { "content-type": "application/json", ...init.headers },
  });
  const text = await response.text();
  assert.ok(response.ok, `${init.method ?? "GET"} ${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

async function newSession(): Promise<string> {
  const created = (await api("/api/v1/sessions", {
    method: "POST",
    body: JSON.stringify({ agent: { spec: { model: { name: FAKE_MODEL } } } }),
  })) as { data: { id: string } };
  return created.data.id;
}

async function collect(stream: TurnStream): Promise<SequencedEvent[]> {
  const events: SequencedEvent[] = [];
  for await (const event of stream) {
    events.push(event);
  }
  return events;
}

/** The events without what differs between two runs of the same input (ids, times). */
function shape(events: SequencedEvent[]): unknown[] {
  return events.map(({ seq, event }) => {
    const e = event as unknown as Record<string, unknown>;
    return {
      seq,
      type: e.type,
      content: e.content,
      status: (e.state as { status?: unknown } | undefined)?.status,
    };
  });
}

function assertComplete(events: SequencedEvent[], label: string): void {
  assert.deepEqual(
    events.map((e) => e.seq),
    Array.from({ length: events.length }, (_, i) => i + 1),
    `${label}: dense sequence numbers from 1, each once`,
  );
  assert.equal(events[0]?.event.type, "turn.created", label);
  const done = events.filter((e) => e.event.type === "turn.done");
  assert.equal(done.length, 1, `${label}: one turn.done`);
  assert.equal(events.at(-1)?.event.type, "turn.done", `${label}: turn.done last`);
}

/** An uncut replay of the turn, straight from the server. */
async function replay(sessionId: string, turnId: string): Promise<SequencedEvent[]> {
  return collect(subscribeTurnStream(fetchTransport(server.baseUrl), sessionId, turnId));
}

let uncut: unknown[];

/** Streams a new turn through the proxy with `cuts`; checks it against the uncut run and a replay. */
async function streamThroughCuts(label: string, cuts: Cut[]): Promise<void> {
  proxy.reset();
  proxy.cut(...cuts);
  const sessionId = await newSession();
  const transport = fetchTransport(proxy.baseUrl);
  const stream = createTurnStream(
    transport,
    sessionId,
    { input: [{ type: "user.message", content: MESSAGE }] },
    FAST,
  );
  const events = await collect(stream);
  assertComplete(events, label);
  assert.deepEqual(shape(events), uncut, `${label}: the uncut run's events`);
  assert.equal(proxy.pendingCuts, 0, `${label}: every planned cut was reached`);
  for (const request of proxy.requests) {
    const cut = request.cut;
    if (cut !== undefined) {
      assert.notEqual(request.cutAt, undefined, `${label}: ${JSON.stringify(cut)} was made`);
      if ("after" in cut && (cut.offset ?? 0) < 0) {
        // A cut inside a multi-byte character: the last byte delivered is not the character's last.
        const last = request.tail.at(-1) ?? 0;
        assert.ok(last >= 0x80, `${label}: the cut ${JSON.stringify(cut)} fell inside a character`);
        assert.ok(!Buffer.from(cut.after).equals(request.tail.subarray(-Buffer.byteLength(cut.after))));
      }
      if ("after" in cut && cut.after.endsWith("\n\n")) {
        assert.ok(request.tail.toString("latin1").endsWith(cut.after), `${label}: cut between frames`);
      }
    }
  }
  assert.equal(proxy.requests.length, cuts.length + 1, `${label}: one request per cut, and the last uncut`);
  assert.equal(proxy.requests[0]?.method, "POST");
  assert.ok(
    proxy.requests.slice(1).every((r) => r.method === "GET" && r.path.endsWith("/subscribe")),
    `${label}: resumed through subscribe`,
  );
  assert.ok(stream.turnId !== undefined);
  assert.deepEqual(events, await replay(sessionId, stream.turnId), `${label}: the same events as a replay`);
}

before(async () => {
  server = await startServer();
  proxy = await CutProxy.start(server.baseUrl);
});

after(async () => {
  await proxy?.close();
  await server?.stop();
});

describe("a turn streamed through cuts (real server)", { timeout: 120_000 }, () => {
  test("the uncut run", async () => {
    proxy.reset();
    const sessionId = await newSession();
    const events = await collect(
      createTurnStream(fetchTransport(proxy.baseUrl), sessionId, {
        input: [{ type: "user.message", content: MESSAGE }],
      }),
    );
    assertComplete(events, "uncut");
    assert.equal(proxy.requests.length, 1);
    assert.ok(events.length >= 10, `enough events to cut: ${events.length}`);
    const text = events
      .map(({ event }) => (event.type === "model.message.delta" ? (event.content ?? "") : ""))
      .join("");
    assert.equal(text, MESSAGE);
    uncut = shape(events);
  });

  const cases: [string, Cut[]][] = [
    ["mid-frame (inside the second delta)", [{ after: '"type":"model.message.delta"', occurrence: 2 }]],
    ["between frames (after frame 4)", [{ after: "id: 4\n\n" }]],
    ["right after turn.created", [{ after: "id: 1\n\n" }]],
    ["inside a 2-byte character", [{ after: "ö", offset: -1, occurrence: 2 }]],
    ["inside a 3-byte character", [{ after: "日", offset: -2, occurrence: 2 }]],
    ["inside a 4-byte character", [{ after: "😀", offset: -1, occurrence: 2 }]],
    ["inside the headers of the resuming subscribe", [{ after: "id: 2\n\n" }, { at: 12 }]],
    ["before the first byte of the resuming subscribe", [{ after: "id: 2\n\n" }, { at: 0 }]],
    [
      "several cuts in one turn",
      [
        { after: "id: 1\n\n" },
        { after: '"type":"model.message.delta"' },
        { after: "ö", offset: -1 },
        { after: "😀", offset: -3 },
        { at: 40 },
        { after: '"type":"turn.done"' },
      ],
    ],
  ];
  for (const [label, cuts] of cases) {
    test(`cut ${label}`, async () => {
      assert.ok(uncut, "the uncut run ran first");
      await streamThroughCuts(label, cuts);
    });
  }

  test("subscribing to a finished turn through cuts replays it whole", async () => {
    const sessionId = await newSession();
    const first = createTurnStream(fetchTransport(server.baseUrl), sessionId, {
      input: [{ type: "user.message", content: MESSAGE }],
    });
    const direct = await collect(first);
    assert.ok(first.turnId);
    proxy.reset();
    proxy.cut(
      { after: "id: 3\n\n" },
      { after: "日", offset: -1 },
      { at: 5 },
      { after: '"type":"turn.done"' },
    );
    const events = await collect(
      subscribeTurnStream(fetchTransport(proxy.baseUrl), sessionId, first.turnId, FAST),
    );
    assert.deepEqual(events, direct);
    assert.equal(proxy.pendingCuts, 0);
    assert.equal(proxy.requests.length, 5);
    assert.equal(proxy.requests[1]?.path.includes("/subscribe"), true);
  });

  test("subscribing after a cursor through cuts yields the rest", async () => {
    const sessionId = await newSession();
    const first = createTurnStream(fetchTransport(server.baseUrl), sessionId, {
      input: [{ type: "user.message", content: MESSAGE }],
    });
    const direct = await collect(first);
    assert.ok(first.turnId);
    proxy.reset();
    proxy.cut({ after: "id: 6\n\n" }, { after: "😀", offset: -2 });
    const events = await collect(
      subscribeTurnStream(fetchTransport(proxy.baseUrl), sessionId, first.turnId, { ...FAST, after: 4 }),
    );
    assert.deepEqual(events, direct.slice(4));
    assert.equal(proxy.pendingCuts, 0);
  });

  test("subscribing to a running turn through cuts", async () => {
    const sessionId = await newSession();
    const turn = (await api(`/api/v1/sessions/${sessionId}/turns`, {
      method: "POST",
      body: JSON.stringify({
        input: [{ type: "user.message", content: MESSAGE.replace("#delay=15", "#delay=40") }],
        stream: false,
      }),
    })) as { data: { id: string } };
    proxy.reset();
    proxy.cut({ after: "id: 3\n\n" }, { after: '"type":"model.message.delta"' }, { at: 20 });
    const events = await collect(
      subscribeTurnStream(fetchTransport(proxy.baseUrl), sessionId, turn.data.id, FAST),
    );
    assertComplete(events, "running turn");
    assert.deepEqual(events, await replay(sessionId, turn.data.id));
    assert.equal(proxy.pendingCuts, 0);
  });

  // A cut before `turn.created` leaves the turn's id unknown, so the stream sends the POST again with the
  // same key; the server answers the retry with the turn the key created, from its start.
  test("a cut inside the headers of the create response retries the POST with its key: one turn", async () => {
    proxy.reset();
    proxy.cut({ at: 30 }, { after: '"type":"turn.created"' });
    const sessionId = await newSession();
    const stream = createTurnStream(
      fetchTransport(proxy.baseUrl),
      sessionId,
      { input: [{ type: "user.message", content: MESSAGE }] },
      FAST,
    );
    const events = await collect(stream);
    assertComplete(events, "cut before turn.created");
    assert.deepEqual(shape(events), uncut);
    const turns = (await api(`/api/v1/sessions/${sessionId}/turns`)) as { data: unknown[] };
    assert.equal(turns.data.length, 1, "the retried POST did not start a second turn");
    assert.deepEqual(
      proxy.requests.map((r) => r.method),
      ["POST", "POST", "POST"],
    );
  });
});
