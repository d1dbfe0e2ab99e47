// Records runs of the real server for the fold's tests: each scenario drives one session through the HTTP
// API, capturing every turn's live stream as `{seq, event}` (SSE `id:` and `data:`) and the session's stored
// history (every page of `GET /sessions/{id}/events`, newest first, as served). The stream is read with
// plain `fetch` and a small line parser so the recordings do not depend on the SDK's own stream client.
//
// `bench/record-fixtures.mjs` writes these recordings to `test/fixtures/fold/`; `recorded.test.ts` records
// them again against the current binary and compares their shapes with the committed ones.

import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { FAKE_MODEL, type RunningServer, startServer } from "../support/server.js";

/** One frame of a live stream as received. */
export interface RecordedFrame {
  readonly seq: number;
  readonly event: Record<string, unknown>;
}

/** One item of a history page. */
export interface RecordedItem {
  readonly turn_id: string;
  readonly event: Record<string, unknown>;
}

export interface Recording {
  readonly scenario: string;
  /** The live stream of each turn, in the order the turns were created. */
  readonly streams: readonly (readonly RecordedFrame[])[];
  /** The history pages in the order they were fetched (the first page holds the newest events). */
  readonly history: readonly (readonly RecordedItem[])[];
}

/** The package root (this file runs from `build/test/fold/`). */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const FIXTURES_DIR = resolve(PACKAGE_ROOT, "test/fixtures/fold");
const MCP_STUB = resolve(PACKAGE_ROOT, "test/fixtures/mcp-stub.mjs");

/** Small pages, so that paging (and a turn cut between pages) is part of every multi-step recording. */
const HISTORY_PAGE_SIZE = 7;

type Input = readonly Record<string, unknown>[];

function user(text: string): Input {
  return [{ type: "user.message", content: text }];
}

async function call(server: RunningServer, method: string, path: string, body?: unknown): Promise<unknown> {
  const init: RequestInit = { method, headers: { "content-type": "application/json" } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`${server.baseUrl}${path}`, init);
  const text = await response.text();
  if (!response.ok) {
    throw new Error(`${method} ${path}: ${response.status} ${text}`);
  }
  return text === "" ? null : JSON.parse(text);
}

/** Splits an SSE body into frames: `id:` is the sequence number, `data:` lines the JSON event. */
async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<RecordedFrame> {
  const decoder = new TextDecoder();
  let buffer = "";
  let id: string | null = null;
  let data: string[] = [];
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
    let newline = buffer.search(/\r\n|\r|\n/);
    while (newline >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
      if (line === "") {
        if (data.length > 0) {
          yield { seq: Number(id), event: JSON.parse(data.join("\n")) as Record<string, unknown> };
        }
        id = null;
        data = [];
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) {
          value = value.slice(1);
        }
        if (field === "id") {
          id = value;
        } else if (field === "data") {
          data.push(value);
        }
      }
      newline = buffer.search(/\r\n|\r|\n/);
    }
    if (done) {
      return;
    }
  }
}

/**
 * Starts a turn and reads its stream to `turn.done`. `whileRunning` is called once the turn has started
 * (its `turn.created` frame arrived), e.g. to cancel it.
 */
async function streamTurn(
  server: RunningServer,
  sessionId: string,
  input: Input,
  whileRunning?: () => Promise<void>,
): Promise<RecordedFrame[]> {
  const response = await fetch(`${server.baseUrl}/api/v1/sessions/${sessionId}/turns`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ input, stream: true }),
  });
  if (!response.ok || response.body === null) {
    throw new Error(`starting a turn: ${response.status} ${await response.text()}`);
  }
  const frames: RecordedFrame[] = [];
  const body = response.body;
  for await (const frame of sseFrames(body)) {
    frames.push(frame);
    if (frame.event.type === "turn.created" && whileRunning) {
      await whileRunning();
    }
    if (frame.event.type === "turn.done") {
      break;
    }
  }
  await body.cancel().catch(() => undefined);
  return frames;
}

async function historyPages(server: RunningServer, sessionId: string): Promise<RecordedItem[][]> {
  const pages: RecordedItem[][] = [];
  let token: string | undefined;
  do {
    const query = `limit=${HISTORY_PAGE_SIZE}${token ? `&page_token=${encodeURIComponent(token)}` : ""}`;
    const page = (await call(server, "GET", `/api/v1/sessions/${sessionId}/events?${query}`)) as {
      data: RecordedItem[];
      pagination: { next_page_token?: string };
    };
    pages.push(page.data);
    token = page.pagination.next_page_token;
  } while (token !== undefined);
  return pages;
}

const SPEC = {
  model: { name: FAKE_MODEL },
  mcp_servers: [{ name: "stub", preload: true }],
  config: { dynamic_sub_agents: { enabled: true }, ask_user_questions: { enabled: true } },
};

async function newSession(server: RunningServer): Promise<string> {
  const created = (await call(server, "POST", "/api/v1/sessions", { agent: { spec: SPEC } })) as {
    data: { id: string };
  };
  return created.data.id;
}

/** The pending call of the last `turn.done` of `frames` that waits on `kind`: its thread and id. */
function pendingCall(frames: readonly RecordedFrame[], kind: string): { thread: string; call: string } {
  const done = frames.at(-1)?.event as { state?: { required_actions?: Record<string, unknown>[] } };
  const action = done.state?.required_actions?.find((candidate) => candidate.type === kind) as
    | { thread_id: string; tool_calls: { id: string }[] }
    | undefined;
  const first = action?.tool_calls[0];
  if (!action || !first) {
    throw new Error(`no pending ${kind} in ${JSON.stringify(done)}`);
  }
  return { thread: action.thread_id, call: first.id };
}

type Scenario = (server: RunningServer, sessionId: string) => Promise<RecordedFrame[][]>;

const SUB_AGENT_ARGS = JSON.stringify({ name: "helper", input: "#steps=1 #tool=lookup" }).replaceAll(
  " ",
  "\\u0020",
);

/** The scenarios, by name; the fake model is steered by the `#` directives of the user message. */
export const SCENARIOS: Readonly<Record<string, Scenario>> = {
  "plain-answer": async (server, session) => [
    await streamTurn(server, session, user("Say hello. #reasoning #chunks=4")),
  ],
  "tool-steps": async (server, session) => [
    await streamTurn(
      server,
      session,
      user('Look three words up. #steps=3 #tool=lookup #args={"word":"fold"}'),
    ),
  ],
  "parallel-tools": async (server, session) => [
    await streamTurn(
      server,
      session,
      user("Look up in parallel. #steps=1 #parallel=3 #tool=lookup #chunks=2"),
    ),
  ],
  "sub-agent": async (server, session) => [
    await streamTurn(
      server,
      session,
      user(`Delegate. #steps=1 #tool=create_sub_agent #args=${SUB_AGENT_ARGS}`),
    ),
  ],
  approval: async (server, session) => {
    const first = await streamTurn(
      server,
      session,
      user('Switch it on. #steps=1 #tool=toggle #args={"on":true}'),
    );
    const { thread, call: id } = pendingCall(first, "tool.approval_required");
    const second = await streamTurn(server, session, [
      { type: "user.tool_approval", thread_id: thread, tool_call_id: id, approval: { status: "allow" } },
    ]);
    return [first, second];
  },
  question: async (server, session) => {
    const first = await streamTurn(
      server,
      session,
      user('Ask me. #steps=1 #tool=ask_user_question #args={"question":"Which?","options":["a","b"]}'),
    );
    const { thread, call: id } = pendingCall(first, "tool.response_required");
    const second = await streamTurn(server, session, [
      { type: "user.tool_response", thread_id: thread, tool_call_id: id, content: "a" },
    ]);
    return [first, second];
  },
  compaction: async (server, session) => {
    // A threshold every context reaches: the second turn's model call finds the first turn's messages and
    // the new one to compact (the fake model writes the summary).
    await call(server, "PATCH", `/api/v1/sessions/${session}`, {
      agent: {
        spec: {
          ...SPEC,
          config: { ...SPEC.config, context_management: { compaction: { compaction_threshold_tokens: 1 } } },
        },
      },
    });
    return [
      await streamTurn(server, session, user("Say hello.")),
      await streamTurn(server, session, user("Say it again.")),
    ];
  },
  "model-error": async (server, session) => [await streamTurn(server, session, user("Fail. #error=400"))],
  cancelled: async (server, session) => [
    await streamTurn(server, session, user("Take your time. #chunks=20 #delay=300"), async () => {
      await new Promise((done) => setTimeout(done, 400));
      await call(server, "POST", `/api/v1/sessions/${session}/cancel`);
    }),
  ],
  "cancelled-mid-answer": async (server, session) => [
    await streamTurn(server, session, user("Go on and on. #chunks=40 #delay=60"), async () => {
      await new Promise((done) => setTimeout(done, 600));
      await call(server, "POST", `/api/v1/sessions/${session}/cancel`);
    }),
  ],
};

/** Starts a server, configures the MCP stub and records `names` (all scenarios by default). */
export async function recordScenarios(
  names: readonly string[] = Object.keys(SCENARIOS),
): Promise<Recording[]> {
  const server = await startServer();
  try {
    await call(server, "POST", "/api/v1/settings/mcp-servers", {
      manifest: {
        type: "stdio",
        name: "stub",
        description: "Looks words up and toggles settings.",
        command: process.execPath,
        args: [MCP_STUB],
      },
    });
    const recordings: Recording[] = [];
    for (const name of names) {
      const scenario = SCENARIOS[name];
      if (!scenario) {
        throw new Error(`unknown scenario ${name}`);
      }
      const sessionId = await newSession(server);
      const streams = await scenario(server, sessionId);
      const history = await historyPages(server, sessionId);
      recordings.push({ scenario: name, streams, history });
    }
    return recordings;
  } finally {
    await server.stop();
  }
}
