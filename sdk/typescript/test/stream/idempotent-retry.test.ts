// The create request's retry before `turn.created`, against a small local HTTP server that honours
// `Idempotency-Key` the way the TrueForge server is getting to (same key: the same turn, streamed from its
// start). Real sockets: the failures are a connection dropped without an answer, a 503, a connection dropped
// inside `turn.created`, and one dropped after it (then the stream resumes through subscribe).

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, test } from "node:test";
import { createTurnStream } from "../../src/stream.js";
import { frame, turnCreated, turnEvents } from "./canned.js";
import { fetchTransport } from "./fetch-transport.js";

const SESSION = "ses_local";
const EVENTS = 6;

interface Turn {
  readonly id: string;
  readonly events: Record<string, unknown>[];
}

const turnsByKey = new Map<string, Turn>();
const posts: { key: string | undefined; attempt: number }[] = [];
const subscribes: { turnId: string; lastEventId: string | undefined }[] = [];
let server: Server;
let baseUrl: string;

function eventsOf(turnId: string): Record<string, unknown>[] {
  const events = turnEvents(EVENTS);
  events[0] = turnCreated(turnId);
  return events;
}

function startSse(response: ServerResponse): void {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  response.flushHeaders();
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? "/", "http://localhost");
  for await (const _ of request) {
    // drain the body
  }
  if (request.method === "POST" && url.pathname === `/api/v1/sessions/${SESSION}/turns`) {
    const key = request.headers["idempotency-key"] as string | undefined;
    const attempt = posts.filter((p) => p.key === key).length + 1;
    posts.push({ key, attempt });
    if (attempt === 1) {
      request.socket.destroy(); // no answer at all
      return;
    }
    if (attempt === 2) {
      response.writeHead(503, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: "busy" } }));
      return;
    }
    let turn = key === undefined ? undefined : turnsByKey.get(key);
    if (turn === undefined) {
      const id = `turn_${turnsByKey.size + 1}`;
      turn = { id, events: eventsOf(id) };
      if (key !== undefined) {
        turnsByKey.set(key, turn);
      }
    }
    startSse(response);
    const all = turn.events.map((event, i) => frame(i + 1, event));
    if (attempt === 3) {
      response.write(all[0]?.slice(0, 40)); // dropped inside turn.created
      setTimeout(() => request.socket.destroy(), 20);
      return;
    }
    response.write(all.slice(0, 3).join("")); // then dropped after frame 3
    setTimeout(() => request.socket.destroy(), 20);
    return;
  }
  const match = /^\/api\/v1\/sessions\/([^/]+)\/turns\/([^/]+)\/subscribe$/.exec(url.pathname);
  if (request.method === "GET" && match?.[1] === SESSION && match[2] !== undefined) {
    const turnId = match[2];
    const lastEventId = request.headers["last-event-id"] as string | undefined;
    subscribes.push({ turnId, lastEventId });
    const turn = [...turnsByKey.values()].find((t) => t.id === turnId);
    if (turn === undefined) {
      response.writeHead(404, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: `Turn not found: ${turnId}` } }));
      return;
    }
    startSse(response);
    const after = Number(lastEventId ?? 0);
    response.end(
      turn.events
        .map((event, i) => frame(i + 1, event))
        .slice(after)
        .join(""),
    );
    return;
  }
  response.writeHead(404).end();
}

before(async () => {
  server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      response.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test("failures before turn.created resend the POST with the same key: one turn, its events once", async () => {
  const stream = createTurnStream(
    fetchTransport(baseUrl),
    SESSION,
    { input: [{ type: "user.message", content: "hi" }] },
    { backoff: { initialMs: 5, maxMs: 20 } },
  );
  const seqs: number[] = [];
  for await (const { seq } of stream) {
    seqs.push(seq);
  }
  assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6]);
  assert.equal(turnsByKey.size, 1, "one turn for the key");
  assert.equal(stream.turnId, "turn_1");
  assert.equal(stream.done?.type, "turn.done");
  assert.deepEqual(
    posts.map((p) => p.attempt),
    [1, 2, 3, 4],
  );
  assert.equal(new Set(posts.map((p) => p.key)).size, 1, "the same key each time");
  assert.match(posts[0]?.key ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.deepEqual(subscribes, [{ turnId: "turn_1", lastEventId: "3" }]);
});
