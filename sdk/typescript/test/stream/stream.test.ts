// The resuming turn stream against canned answers: order, dedupe of replays, gaps, errors of each kind,
// reconnection budget and backoff, aborts.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  TrueForgeAbortError,
  TrueForgeApiError,
  TrueForgeConnectionError,
  TrueForgeError,
  TrueForgeProtocolError,
} from "../../src/errors.js";
import { type SequencedEvent, UNKNOWN_EVENT } from "../../src/events.js";
import { createTurnStream, subscribeTurnStream, type TurnStream } from "../../src/stream.js";
import {
  CannedTransport,
  delta,
  FAST,
  fail,
  frame,
  frames,
  json,
  sse,
  TURN_ID,
  text,
  turnEvents,
} from "./canned.js";

const SESSION = "ses_1";
const BODY = { input: [{ type: "user.message" as const, content: "hi" }] };
const SUBSCRIBE = `/api/v1/sessions/${SESSION}/turns/${TURN_ID}/subscribe`;

async function collect(stream: TurnStream): Promise<{ events: SequencedEvent[]; error: unknown }> {
  const events: SequencedEvent[] = [];
  try {
    for await (const event of stream) {
      events.push(event);
    }
    return { events, error: undefined };
  } catch (error) {
    return { events, error };
  }
}

function seqs(events: SequencedEvent[]): number[] {
  return events.map((e) => e.seq);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

describe("createTurnStream", () => {
  test("yields the events in order, ends after turn.done; POSTs the body with stream forced and a key", async () => {
    const events = turnEvents(6);
    const transport = new CannedTransport([sse([...frames(events, 1, 6), frame(7, delta(7))])]);
    const stream = createTurnStream(transport, SESSION, { ...BODY, stream: false });
    assert.equal(stream.turnId, undefined);
    const { events: got, error } = await collect(stream);
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 6), "nothing after turn.done");
    assert.deepEqual(
      got.map((e) => e.event),
      events,
    );
    assert.equal(stream.turnId, TURN_ID);
    assert.equal(stream.lastSeq, 6);
    assert.equal(stream.done?.type, "turn.done");
    const [request] = transport.requests;
    assert.equal(request?.method, "POST");
    assert.equal(request?.path, `/api/v1/sessions/${SESSION}/turns`);
    assert.deepEqual(JSON.parse(request?.body ?? ""), { ...BODY, stream: true });
    assert.equal(request?.headers.accept, "text/event-stream");
    assert.match(request?.headers["idempotency-key"] ?? "", /^[0-9a-f-]{36}$/);
    assert.equal(transport.requests.length, 1);
  });

  test("each stream gets its own key unless one is given", async () => {
    const transport = new CannedTransport([
      sse(frames(turnEvents(2), 1, 2)),
      sse(frames(turnEvents(2), 1, 2)),
    ]);
    await collect(createTurnStream(transport, SESSION, BODY));
    await collect(createTurnStream(transport, SESSION, BODY, { idempotencyKey: "my-key" }));
    const [a, b] = transport.requests.map((r) => r.headers["idempotency-key"]);
    assert.notEqual(a, undefined);
    assert.equal(b, "my-key");
  });

  test("a body that ends before turn.done resumes through subscribe with Last-Event-ID", async () => {
    const events = turnEvents(8);
    const transport = new CannedTransport([sse(frames(events, 1, 3)), sse(frames(events, 4, 8))]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 8));
    const resumed = transport.requests[1];
    assert.equal(resumed?.method, "GET");
    assert.equal(resumed?.path, SUBSCRIBE);
    assert.equal(resumed?.headers["last-event-id"], "3");
    assert.equal(resumed?.headers["idempotency-key"], undefined);
  });

  test("a broken connection resumes the same way; a replay from the start is skipped", async () => {
    const events = turnEvents(7);
    const transport = new CannedTransport([
      sse(frames(events, 1, 4), { end: "break" }),
      sse(frames(events, 1, 7)), // a server that replays everything
    ]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 7));
  });

  test("a cut inside a frame: the partial frame is dropped and comes again", async () => {
    const events = turnEvents(5);
    const all = frames(events, 1, 5).join("");
    const cut = all.indexOf("id: 3") + 2; // inside frame 3
    const transport = new CannedTransport([
      sse([all.slice(0, cut)], { end: "break" }),
      sse(frames(events, 2, 5)),
    ]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 5));
    assert.equal(transport.requests[1]?.headers["last-event-id"], "2");
  });

  test("a gap is a protocol error; lastSeq stays at the last event yielded", async () => {
    const events = turnEvents(6);
    const transport = new CannedTransport([sse([...frames(events, 1, 2), ...frames(events, 4, 6)])]);
    const stream = createTurnStream(transport, SESSION, BODY, FAST);
    const { events: got, error } = await collect(stream);
    assert.deepEqual(seqs(got), [1, 2]);
    assert.ok(error instanceof TrueForgeProtocolError, String(error));
    assert.match(error.message, /4 follows 2/);
    assert.equal(stream.lastSeq, 2);
  });

  test("a gap after a reconnection is a protocol error too", async () => {
    const events = turnEvents(6);
    const transport = new CannedTransport([sse(frames(events, 1, 2)), sse(frames(events, 4, 6))]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.deepEqual(seqs(got), [1, 2]);
    assert.ok(error instanceof TrueForgeProtocolError);
  });

  test("an HTML page with 200 is a protocol error, not retried", async () => {
    const transport = new CannedTransport([text(200, "<html><body>Sign in</body></html>")]);
    const { events, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.deepEqual(events, []);
    assert.ok(error instanceof TrueForgeProtocolError);
    assert.match(error.message, /text\/html.*Sign in/);
    assert.equal(transport.requests.length, 1);
  });

  test("a 2xx without any header (a browser's reading of an answer cut in its headers) is retried", async () => {
    const events = turnEvents(4);
    const headerless = () => new Response(null, { status: 200 });
    const transport = new CannedTransport([
      sse(frames(events, 1, 2), { end: "break" }),
      headerless,
      sse(frames(events, 3, 4)),
    ]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 4));
    assert.equal(transport.requests.length, 3);
  });

  test("a 500 mid-stream, then 503 and 429 on resuming, then recovery", async () => {
    const events = turnEvents(6);
    const transport = new CannedTransport([
      sse(frames(events, 1, 2), { end: "break" }),
      json(500, { error: { message: "boom" } }),
      text(503, "upstream down", "text/plain"),
      json(429, { error: { message: "slow down" } }, { "retry-after": "0" }),
      sse(frames(events, 3, 6)),
    ]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 6));
    assert.equal(transport.requests.length, 5);
    for (const request of transport.requests.slice(1)) {
      assert.equal(request.path, SUBSCRIBE);
      assert.equal(request.headers["last-event-id"], "2");
    }
  });

  test("a 4xx on resuming ends the stream with the server's error", async () => {
    const events = turnEvents(6);
    const transport = new CannedTransport([
      sse(frames(events, 1, 2), { end: "break" }),
      json(
        412,
        { error: { message: "The turn's events can no longer be streamed", code: "gone" } },
        {
          "x-request-id": "req_9",
        },
      ),
    ]);
    const stream = createTurnStream(transport, SESSION, BODY, FAST);
    const { events: got, error } = await collect(stream);
    assert.deepEqual(seqs(got), [1, 2]);
    assert.ok(error instanceof TrueForgeApiError);
    assert.equal(error.status, 412);
    assert.equal(error.error?.message, "The turn's events can no longer be streamed");
    assert.equal(error.error?.code, "gone");
    assert.equal(error.requestId, "req_9");
    assert.equal(stream.lastSeq, 2);
  });

  test("a 4xx on the create request is not retried; a body that is not the envelope is kept as text", async () => {
    const transport = new CannedTransport([text(422, "<h1>nope</h1>")]);
    const { error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.ok(error instanceof TrueForgeApiError);
    assert.equal(error.status, 422);
    assert.equal(error.error, undefined);
    assert.equal(error.bodyText, "<h1>nope</h1>");
    assert.equal(transport.requests.length, 1);
  });

  test("before turn.created, a failed or 5xx create request is sent again with the same key", async () => {
    const events = turnEvents(5);
    const transport = new CannedTransport([
      fail(new TrueForgeConnectionError("connection refused")),
      json(503, { error: { message: "busy" } }),
      json(408, { error: { message: "timeout" } }),
      sse([frames(events, 1, 1)[0]?.slice(0, 20) ?? ""], { end: "break" }), // cut inside turn.created
      sse(frames(events, 1, 2), { end: "break" }),
      sse(frames(events, 3, 5)),
    ]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 5));
    const methods = transport.requests.map((r) => r.method);
    assert.deepEqual(methods, ["POST", "POST", "POST", "POST", "POST", "GET"]);
    const keys = new Set(transport.requests.slice(0, 5).map((r) => r.headers["idempotency-key"]));
    assert.equal(keys.size, 1);
    assert.equal(transport.requests[5]?.headers["last-event-id"], "2");
  });

  test("malformed JSON in a frame is a protocol error; lastSeq stays at the last good event", async () => {
    const events = turnEvents(5);
    const transport = new CannedTransport([sse([...frames(events, 1, 2), frame(3, "{not json")])]);
    const stream = createTurnStream(transport, SESSION, BODY, FAST);
    const { events: got, error } = await collect(stream);
    assert.deepEqual(seqs(got), [1, 2]);
    assert.ok(error instanceof TrueForgeProtocolError);
    assert.match(error.message, /not JSON/);
    assert.equal(stream.lastSeq, 2);
    assert.equal(transport.requests.length, 1, "not retried");
  });

  test("JSON that is not an event is a protocol error", async () => {
    const transport = new CannedTransport([sse([frame(1, "[1,2]")])]);
    const { error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.ok(error instanceof TrueForgeProtocolError);
  });

  test("an id that is not a sequence number, or a frame without an id, is a protocol error", async () => {
    for (const bad of [
      frame("abc", delta(2)),
      frame("-1", delta(2)),
      frame("2.0", delta(2)),
      'data: {"type":"x"}\n\n',
    ]) {
      const transport = new CannedTransport([sse([...frames(turnEvents(3), 1, 1), bad])]);
      const stream = createTurnStream(transport, SESSION, BODY, FAST);
      const { events, error } = await collect(stream);
      assert.deepEqual(seqs(events), [1], bad);
      assert.ok(error instanceof TrueForgeProtocolError, bad);
      assert.equal(stream.lastSeq, 1);
    }
  });

  test("an event of an unknown type is carried through as an UnknownEvent", async () => {
    const events = turnEvents(3);
    const custom = { type: "vendor.progress", percent: 50 };
    const transport = new CannedTransport([
      sse([...frames(events, 1, 1), frame(2, custom), frame(3, events[2])]),
    ]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(got[1], {
      seq: 2,
      event: { type: UNKNOWN_EVENT, receivedType: "vendor.progress", data: custom },
    });
  });

  test("comments, retry-only frames and frames of another SSE event type are not events", async () => {
    const events = turnEvents(3);
    const transport = new CannedTransport([
      sse([
        ": keep-alive\n\n",
        "retry: 10\n\n",
        ...frames(events, 1, 2),
        "event: ping\ndata: {}\n\n",
        frame(3, events[2]),
      ]),
    ]);
    const { events: got, error } = await collect(createTurnStream(transport, SESSION, BODY, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), [1, 2, 3]);
  });

  test("reconnecting gives up after maxReconnects consecutive attempts without progress", async () => {
    const events = turnEvents(5);
    const answers = [sse(frames(events, 1, 2), { end: "break" })];
    for (let i = 0; i < 10; i++) {
      answers.push(i % 2 === 0 ? sse([], { end: "break" }) : fail(new TrueForgeConnectionError("refused")));
    }
    const transport = new CannedTransport(answers);
    const stream = createTurnStream(transport, SESSION, BODY, { ...FAST, maxReconnects: 3 });
    const { events: got, error } = await collect(stream);
    assert.deepEqual(seqs(got), [1, 2]);
    assert.ok(error instanceof TrueForgeConnectionError, String(error));
    assert.equal(transport.requests.length, 1 + 3, "the first connection, then 3 reconnection attempts");
    assert.equal(stream.lastSeq, 2);
  });

  test("the attempt counter resets once an event arrives", async () => {
    const events = turnEvents(8);
    // Each connection delivers one new event and breaks, between two failures: far more attempts in all
    // than maxReconnects, never more than 2 in a row without progress.
    const answers = [sse(frames(events, 1, 1), { end: "break" })];
    for (let seq = 2; seq <= 8; seq++) {
      answers.push(fail(new TrueForgeConnectionError("refused")));
      answers.push(sse(frames(events, 1, seq), { end: "break" }));
    }
    const transport = new CannedTransport(answers);
    const { events: got, error } = await collect(
      createTurnStream(transport, SESSION, BODY, { ...FAST, maxReconnects: 2 }),
    );
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 8));
    assert.equal(transport.requests.length, 15);
  });

  test("a replay without a new event is not progress", async () => {
    const events = turnEvents(5);
    const answers = [sse(frames(events, 1, 3), { end: "break" })];
    for (let i = 0; i < 5; i++) {
      answers.push(sse(frames(events, 1, 3), { end: "break" }));
    }
    const transport = new CannedTransport(answers);
    const { error } = await collect(
      createTurnStream(transport, SESSION, BODY, { ...FAST, maxReconnects: 2 }),
    );
    assert.ok(error instanceof TrueForgeConnectionError);
    assert.equal(transport.requests.length, 1 + 2);
  });

  test("the backoff waits, and an SSE retry overrides its initial delay", async () => {
    const events = turnEvents(4);
    const slow = { backoff: { initialMs: 400, maxMs: 400 } };
    let transport = new CannedTransport([
      sse(frames(events, 1, 2), { end: "break" }),
      sse(frames(events, 3, 4)),
    ]);
    let started = Date.now();
    await collect(createTurnStream(transport, SESSION, BODY, slow));
    assert.ok(Date.now() - started >= 200, "waited at least half the delay");
    transport = new CannedTransport([
      sse(["retry: 0\n\n", ...frames(events, 1, 2)], { end: "break" }),
      sse(frames(events, 3, 4)),
    ]);
    started = Date.now();
    const { error } = await collect(createTurnStream(transport, SESSION, BODY, slow));
    assert.equal(error, undefined);
    assert.ok(Date.now() - started < 150, "retry: 0 made the reconnection immediate");
  });
});

describe("subscribeTurnStream", () => {
  test("starts after `after` with Last-Event-ID and yields from after + 1", async () => {
    const events = turnEvents(6);
    const transport = new CannedTransport([sse(frames(events, 3, 6))]);
    const stream = subscribeTurnStream(transport, SESSION, TURN_ID, { after: 2 });
    assert.equal(stream.turnId, TURN_ID);
    assert.equal(stream.lastSeq, 2);
    const { events: got, error } = await collect(stream);
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), [3, 4, 5, 6]);
    assert.equal(transport.requests[0]?.path, SUBSCRIBE);
    assert.equal(transport.requests[0]?.headers["last-event-id"], "2");
  });

  test("from the start: no Last-Event-ID; cut and resumed; a subscribe that stays open after turn.done ends", async () => {
    const events = turnEvents(5);
    const transport = new CannedTransport([
      sse(frames(events, 1, 2), { end: "break" }),
      sse(frames(events, 1, 5), { end: "hang" }),
    ]);
    const { events: got, error } = await collect(subscribeTurnStream(transport, SESSION, TURN_ID, FAST));
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), range(1, 5));
    assert.equal(transport.requests[0]?.headers["last-event-id"], undefined);
    assert.equal(transport.requests[1]?.headers["last-event-id"], "2");
    assert.equal(transport.requests[1]?.signal?.aborted, true, "the open request was released");
  });

  test("a 404 ends the stream with the error", async () => {
    const transport = new CannedTransport([json(404, { error: { message: "Turn not found: turn_1" } })]);
    const { error } = await collect(subscribeTurnStream(transport, SESSION, TURN_ID, FAST));
    assert.ok(error instanceof TrueForgeApiError);
    assert.equal(error.status, 404);
  });

  test("a negative or fractional `after` is refused", () => {
    const transport = new CannedTransport([]);
    assert.throws(() => subscribeTurnStream(transport, SESSION, TURN_ID, { after: -1 }), RangeError);
    assert.throws(() => subscribeTurnStream(transport, SESSION, TURN_ID, { after: 1.5 }), RangeError);
  });
});

describe("abort and close", () => {
  test("the signal aborts the open request and iteration throws a TrueForgeAbortError", async () => {
    const events = turnEvents(5);
    const transport = new CannedTransport([sse(frames(events, 1, 2), { end: "hang" })]);
    const controller = new AbortController();
    const stream = createTurnStream(transport, SESSION, BODY, { signal: controller.signal });
    const got: SequencedEvent[] = [];
    await assert.rejects(async () => {
      for await (const event of stream) {
        got.push(event);
        if (event.seq === 2) {
          setTimeout(() => controller.abort(new Error("user left")), 5);
        }
      }
    }, TrueForgeAbortError);
    assert.deepEqual(seqs(got), [1, 2]);
    assert.equal(transport.requests[0]?.signal?.aborted, true);
    assert.equal(stream.lastSeq, 2);
  });

  test("an already aborted signal sends nothing", async () => {
    const transport = new CannedTransport([]);
    const { error } = await collect(
      createTurnStream(transport, SESSION, BODY, { signal: AbortSignal.abort() }),
    );
    assert.ok(error instanceof TrueForgeAbortError);
    assert.equal(transport.requests.length, 0);
  });

  test("close() aborts the open request and iteration ends without an error", async () => {
    const events = turnEvents(5);
    const transport = new CannedTransport([sse(frames(events, 1, 2), { end: "hang" })]);
    const stream = createTurnStream(transport, SESSION, BODY);
    const got: SequencedEvent[] = [];
    for await (const event of stream) {
      got.push(event);
      if (event.seq === 2) {
        setTimeout(() => stream.close(), 5);
      }
    }
    assert.deepEqual(seqs(got), [1, 2]);
    assert.equal(transport.requests[0]?.signal?.aborted, true);
  });

  test("close() during the backoff ends iteration without another request", async () => {
    const events = turnEvents(5);
    const transport = new CannedTransport([sse(frames(events, 1, 2), { end: "break" })]);
    const stream = createTurnStream(transport, SESSION, BODY, {
      backoff: { initialMs: 10_000, maxMs: 10_000 },
    });
    const started = Date.now();
    const done = collect(stream);
    setTimeout(() => stream.close(), 50);
    const { events: got, error } = await done;
    assert.equal(error, undefined);
    assert.deepEqual(seqs(got), [1, 2]);
    assert.equal(transport.requests.length, 1);
    assert.ok(Date.now() - started < 5_000);
  });

  test("breaking out of the loop releases the request", async () => {
    const events = turnEvents(5);
    const transport = new CannedTransport([sse(frames(events, 1, 3), { end: "hang" })]);
    for await (const event of createTurnStream(transport, SESSION, BODY)) {
      if (event.seq === 2) {
        break;
      }
    }
    assert.equal(transport.requests[0]?.signal?.aborted, true);
  });

  test("a stream is iterated once", async () => {
    const transport = new CannedTransport([sse(frames(turnEvents(2), 1, 2))]);
    const stream = createTurnStream(transport, SESSION, BODY);
    await collect(stream);
    assert.throws(() => stream[Symbol.asyncIterator](), TrueForgeError);
  });
});
