// The request core against servers that misbehave: a tiny local node:http server answers what a proxy or a
// broken deployment would (HTML, 500, 503, silence), plus the real server for its body limit.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";
import {
  IDEMPOTENCY_HEADER,
  TrueForge,
  TrueForgeAbortError,
  TrueForgeApiError,
  TrueForgeConnectionError,
  TrueForgeProtocolError,
  TrueForgeTimeoutError,
} from "../../src/index.js";
import { freePort } from "../support/server.js";
import { FAKE_MODEL, harness } from "./helpers.js";

type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void;

interface Local {
  readonly url: string;
  /** The requests received, in order. */
  readonly seen: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[];
  handle(handler: Handler): void;
}

let server: Server;
let local: Local;

before(async () => {
  let handler: Handler = (_request, response) => response.end();
  const seen: Local["seen"] = [];
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
      handler(request, response, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  local = {
    url: `http://127.0.0.1:${port}`,
    seen,
    handle(next) {
      seen.length = 0;
      handler = next;
    },
  };
});
after(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

function client(options: Partial<ConstructorParameters<typeof TrueForge>[0]> = {}) {
  return new TrueForge({ baseUrl: local.url, retry: { baseDelayMs: 1 }, ...options });
}

function json(
  response: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(value));
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => assert.fail("expected a rejection"),
    (error: unknown) => error,
  );
}

describe("errors", () => {
  test("an HTML error page becomes a TrueForgeApiError with the raw text", async () => {
    local.handle((_request, response) => {
      response.writeHead(502, { "content-type": "text/html", "x-request-id": "req-1" });
      response.end("<html><body>Bad gateway</body></html>");
    });
    const error = await rejection(client({ maxRetries: 0 }).agents.list());
    assert.ok(error instanceof TrueForgeApiError);
    assert.equal(error.status, 502);
    assert.equal(error.error, undefined);
    assert.equal(error.bodyText, "<html><body>Bad gateway</body></html>");
    assert.equal(error.requestId, "req-1");
    assert.match(
      error.message,
      /GET \/api\/v1\/agents failed with 502: the answer was not TrueForge's JSON error/,
    );
  });

  test("a 500 with the envelope keeps message and code, and is not retried", async () => {
    local.handle((_request, response) =>
      json(response, 500, { error: { message: "the store is down", code: "store_unavailable" } }),
    );
    const error = await rejection(client().sessions.get("s1"));
    assert.ok(error instanceof TrueForgeApiError);
    assert.equal(error.status, 500);
    assert.deepEqual(error.error, { message: "the store is down", code: "store_unavailable" });
    assert.equal(local.seen.length, 1, "500 is not a retryable status");
  });

  test("a 2xx that is not JSON is a TrueForgeProtocolError", async () => {
    local.handle((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end("<html>login page</html>");
    });
    const error = await rejection(client().agents.list());
    assert.ok(error instanceof TrueForgeProtocolError, String(error));
    assert.match(error.message, /not JSON \(text\/html\)/);
    local.handle((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end("{broken");
    });
    assert.ok((await rejection(client().agents.list())) instanceof TrueForgeProtocolError);
  });

  test("no server: TrueForgeConnectionError after the retries of a GET", async () => {
    const port = await freePort();
    const error = await rejection(
      new TrueForge({ baseUrl: `http://127.0.0.1:${port}`, retry: { baseDelayMs: 1 } }).agents.list(),
    );
    assert.ok(error instanceof TrueForgeConnectionError, String(error));
  });
});

describe("timeouts and aborts", () => {
  test("a call slower than its timeout is a TrueForgeTimeoutError", async () => {
    local.handle((_request, response) => {
      setTimeout(() => json(response, 200, { data: [] }), 500);
    });
    const started = Date.now();
    const error = await rejection(client({ maxRetries: 0 }).agents.list({ timeoutMs: 50 }));
    assert.ok(error instanceof TrueForgeTimeoutError, String(error));
    assert.ok(Date.now() - started < 400);
  });

  test("the client's timeout applies to every call, and a timed out GET is retried", async () => {
    local.handle((_request, response) => {
      setTimeout(() => json(response, 200, { data: [] }), 300);
    });
    const error = await rejection(client({ timeoutMs: 30, maxRetries: 1 }).agents.list());
    assert.ok(error instanceof TrueForgeTimeoutError);
    assert.equal(local.seen.length >= 1, true);
  });

  test("the caller's signal aborts a call in flight, and one aborted before is not sent", async () => {
    local.handle((_request, response) => {
      setTimeout(() => json(response, 200, { data: [] }), 500);
    });
    const controller = new AbortController();
    const pending = client().agents.list({ signal: controller.signal });
    setTimeout(() => controller.abort(), 30);
    const error = await rejection(pending);
    assert.ok(error instanceof TrueForgeAbortError, String(error));

    local.handle((_request, response) => json(response, 200, { data: [] }));
    const aborted = AbortSignal.abort();
    assert.ok((await rejection(client().agents.list({ signal: aborted }))) instanceof TrueForgeAbortError);
    assert.equal(local.seen.length, 0);
  });

  test("an abort during the backoff stops the retries", async () => {
    local.handle((_request, response) =>
      json(response, 503, { error: { message: "busy" } }, { "retry-after": "5" }),
    );
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await rejection(client().agents.list({ signal: controller.signal }));
    assert.ok(error instanceof TrueForgeAbortError);
    assert.equal(local.seen.length, 1);
  });
});

describe("retries", () => {
  test("a GET is retried after a 503 and succeeds", async () => {
    let calls = 0;
    local.handle((_request, response) => {
      calls++;
      if (calls === 1) {
        json(response, 503, { error: { message: "starting" } }, { "retry-after": "0" });
      } else {
        json(response, 200, { data: [] });
      }
    });
    assert.deepEqual(await client().agents.list(), []);
    assert.equal(local.seen.length, 2);
  });

  test("429 with Retry-After waits that long", async () => {
    let calls = 0;
    local.handle((_request, response) => {
      calls++;
      if (calls === 1) {
        json(response, 429, { error: { message: "slow down" } }, { "retry-after": "0.2" });
      } else {
        json(response, 200, { data: [] });
      }
    });
    const started = Date.now();
    await client().models.list();
    assert.ok(Date.now() - started >= 190, "honours Retry-After");
  });

  test("gives up after maxRetries with the last error", async () => {
    local.handle((_request, response) => json(response, 503, { error: { message: "down" } }));
    const error = await rejection(client({ maxRetries: 3 }).agents.list());
    assert.ok(error instanceof TrueForgeApiError && error.status === 503);
    assert.equal(local.seen.length, 4);
  });

  test("a POST without an Idempotency-Key is never retried", async () => {
    local.handle((_request, response) => json(response, 503, { error: { message: "busy" } }));
    const error = await rejection(
      client({ maxRetries: 5 }).sessions.create({ agent: { spec: { model: { name: FAKE_MODEL } } } }),
    );
    assert.ok(error instanceof TrueForgeApiError && error.status === 503);
    assert.equal(local.seen.length, 1);
    assert.equal(local.seen[0]?.headers["idempotency-key"], undefined);

    local.handle((request) => request.socket.destroy());
    const broken = await rejection(client({ maxRetries: 5 }).sessions.cancel("s1"));
    assert.ok(broken instanceof TrueForgeConnectionError);
    assert.equal(local.seen.length, 1, "cut before the answer, and not sent again");
  });

  test("a PATCH is never retried", async () => {
    local.handle((_request, response) => json(response, 502, { error: { message: "proxy" } }));
    await rejection(client().sessions.update("s1", {}));
    assert.equal(local.seen.length, 1);
  });

  test("a turn start carries an Idempotency-Key, the same one on every retry", async () => {
    let calls = 0;
    local.handle((_request, response) => {
      calls++;
      if (calls < 3) {
        json(response, 503, { error: { message: "busy" } }, { "retry-after": "0" });
      } else {
        json(response, 200, {
          data: {
            id: "t1",
            session_id: "s1",
            previous_turn_id: null,
            input: [],
            state: { status: "running" },
            created_at: "2026-01-01T00:00:00Z",
          },
        });
      }
    });
    const turn = await client().turns.create("s1", { input: [{ type: "user.message", content: "hi" }] });
    assert.equal(turn.id, "t1");
    assert.equal(local.seen.length, 3);
    const keys = local.seen.map((request) => request.headers["idempotency-key"]);
    assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
    assert.deepEqual(new Set(keys).size, 1, "one key for all attempts");
    assert.deepEqual(JSON.parse(local.seen[0]?.body ?? ""), {
      previous_turn_id: "auto",
      input: [{ type: "user.message", content: "hi" }],
      stream: false,
    });

    await client({ maxRetries: 0 }).turns.create("s1", { input: [] }, { idempotencyKey: "mine" });
    assert.equal(local.seen.at(-1)?.headers["idempotency-key"], "mine");
    assert.equal(IDEMPOTENCY_HEADER, "Idempotency-Key");
  });
});

describe("credentials and headers", () => {
  test("a token supplier is asked before every attempt; default and call headers are sent", async () => {
    let calls = 0;
    local.handle((_request, response) => {
      calls++;
      if (calls === 1) {
        json(response, 503, { error: { message: "busy" } }, { "retry-after": "0" });
      } else {
        json(response, 200, { data: [] });
      }
    });
    let asked = 0;
    const tf = client({
      token: async () => `token-${++asked}`,
      headers: { "x-app": "tests", "x-over": "client" },
    });
    await tf.agents.list({ headers: { "x-over": "call" } });
    assert.deepEqual(
      local.seen.map((request) => request.headers.authorization),
      ["Bearer token-1", "Bearer token-2"],
    );
    assert.equal(local.seen[1]?.headers["x-app"], "tests");
    assert.equal(local.seen[1]?.headers["x-over"], "call");

    local.handle((_request, response) => json(response, 200, { data: [] }));
    await client({ token: "static" }).agents.list();
    assert.equal(local.seen[0]?.headers.authorization, "Bearer static");
    await client({ token: () => undefined }).agents.list();
    assert.equal(local.seen[1]?.headers.authorization, undefined);
  });

  test("credentials and a custom fetch are used", async () => {
    local.handle((_request, response) => json(response, 200, { data: [] }));
    const seen: RequestInit[] = [];
    const tf = client({
      credentials: "include",
      fetch: (input, init) => {
        seen.push(init);
        return fetch(input, init);
      },
    });
    await tf.agents.list();
    assert.equal(seen[0]?.credentials, "include");
    assert.equal(local.seen.length, 1);
  });

  test("the stream transport: base URL, auth, any status as a Response, typed failures", async () => {
    local.handle((_request, response) => json(response, 404, { error: { message: "no turn" } }));
    const tf = client({ token: "t", headers: { "x-app": "tests" } });
    const response = await tf.transport.request(
      "/api/v1/sessions/s/turns/t/subscribe?after_sequence_number=3",
      {
        method: "GET",
        headers: { accept: "text/event-stream" },
      },
    );
    assert.equal(response.status, 404);
    assert.equal(local.seen[0]?.url, "/api/v1/sessions/s/turns/t/subscribe?after_sequence_number=3");
    assert.equal(local.seen[0]?.headers.authorization, "Bearer t");
    assert.equal(local.seen[0]?.headers["x-app"], "tests");
    assert.equal(local.seen[0]?.headers.accept, "text/event-stream");

    const port = await freePort();
    const nowhere = new TrueForge({ baseUrl: `http://127.0.0.1:${port}` });
    assert.ok(
      (await rejection(nowhere.transport.request("/x", { method: "GET" }))) instanceof
        TrueForgeConnectionError,
    );
    assert.ok(
      (await rejection(tf.transport.request("/x", { method: "GET", signal: AbortSignal.abort() }))) instanceof
        TrueForgeAbortError,
    );
  });

  test("a base URL with a path prefix and a trailing slash", async () => {
    local.handle((_request, response) => json(response, 200, { data: [] }));
    await new TrueForge({ baseUrl: `${local.url}/forge/` }).agents.list();
    assert.equal(local.seen[0]?.url, "/forge/api/v1/agents");
  });
});

describe("the real server's body limit", () => {
  test("a body over the limit is a 413 TrueForgeApiError", async () => {
    const h = await harness({ MAX_REQUEST_BODY_BYTES: "2048" });
    try {
      const error = await rejection(
        h.tf.sessions.create({
          agent: { spec: { model: { name: FAKE_MODEL }, instructions: "x".repeat(4096) } },
        }),
      );
      assert.ok(error instanceof TrueForgeApiError);
      assert.equal(error.status, 413);
      assert.match(error.error?.message ?? "", /2048|limit|large|exceed/i);
    } finally {
      await h.stop();
    }
  });
});
