// Canned answers for the stream's unit tests: a transport that answers each request with the next scripted
// Response, and SSE bodies that end cleanly, break, or hang until the request is aborted (as `fetch`
// bodies do).

import type { StreamTransport } from "../../src/stream.js";

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | undefined;
  readonly signal: AbortSignal | undefined;
}

export type Answer = (request: RecordedRequest) => Response | Promise<Response>;

export class CannedTransport implements StreamTransport {
  readonly requests: RecordedRequest[] = [];
  private readonly answers: Answer[];

  constructor(answers: Answer[]) {
    this.answers = [...answers];
  }

  async request(path: string, init: RequestInit): Promise<Response> {
    const request: RecordedRequest = {
      method: init.method ?? "GET",
      path,
      headers: { ...(init.headers as Record<string, string> | undefined) },
      body: typeof init.body === "string" ? init.body : undefined,
      signal: init.signal ?? undefined,
    };
    this.requests.push(request);
    const answer = this.answers.shift();
    if (answer === undefined) {
      throw new Error(`unexpected request ${request.method} ${path}`);
    }
    return answer(request);
  }
}

export const TURN_ID = "turn_1";

export function turnCreated(turnId = TURN_ID): Record<string, unknown> {
  return {
    type: "turn.created",
    id: "ev_created",
    created_at: "2026-01-01T00:00:00Z",
    thread_id: null,
    turn_id: turnId,
    previous_turn_id: null,
    input: [{ type: "user.message", content: "hi" }],
    state: { status: "running" },
  };
}

export function delta(n: number): Record<string, unknown> {
  return { type: "model.message.delta", id: "msg_1", thread_id: "main", content: `part ${n} ✓ 日本` };
}

export function turnDone(): Record<string, unknown> {
  return {
    type: "turn.done",
    id: "ev_done",
    created_at: "2026-01-01T00:00:01Z",
    thread_id: null,
    state: { status: "done" },
  };
}

/** The events of a turn of `n` events: `turn.created`, deltas, `turn.done` (seq 1..n). */
export function turnEvents(n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) =>
    i === 0 ? turnCreated() : i === n - 1 ? turnDone() : delta(i + 1),
  );
}

/** One SSE frame as the server writes it. */
export function frame(seq: number | string, event: unknown): string {
  return `data: ${typeof event === "string" ? event : JSON.stringify(event)}\nid: ${seq}\n\n`;
}

/** Frames `from..to` (1-based, inclusive) of `events`. */
export function frames(events: unknown[], from: number, to: number): string[] {
  const out: string[] = [];
  for (let seq = from; seq <= to; seq++) {
    out.push(frame(seq, events[seq - 1]));
  }
  return out;
}

export interface SseOptions {
  /** How the body ends after the frames: cleanly, with a network error, or never (until aborted). */
  end?: "close" | "break" | "hang";
  status?: number;
  headers?: Record<string, string>;
}

/** An answer streaming `parts` (each a chunk) as an event stream. */
export function sse(parts: string[], options: SseOptions = {}): Answer {
  return (request) => {
    const encoder = new TextEncoder();
    const queue = [...parts];
    let aborted = false;
    // Pulled one part at a time: an error must not discard parts still queued (`error()` would).
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        request.signal?.addEventListener(
          "abort",
          () => {
            aborted = true;
            controller.error(request.signal?.reason);
          },
          { once: true },
        );
      },
      pull(controller) {
        if (aborted) {
          return;
        }
        const part = queue.shift();
        if (part !== undefined) {
          controller.enqueue(encoder.encode(part));
          return;
        }
        const end = options.end ?? "close";
        if (end === "close") {
          controller.close();
        } else if (end === "break") {
          controller.error(new TypeError("terminated: other side closed"));
        } else {
          return new Promise<void>(() => {}); // until aborted
        }
      },
    });
    return new Response(body, {
      status: options.status ?? 200,
      headers: { "content-type": "text/event-stream", ...options.headers },
    });
  };
}

/** An answer with a JSON body. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  return () =>
    new Response(JSON.stringify(body), {
      status,
      headers: { "content-type": "application/json", ...headers },
    });
}

/** An answer with a text body of the given type. */
export function text(status: number, body: string, type = "text/html"): Answer {
  return () => new Response(body, { status, headers: { "content-type": type } });
}

/** A request that fails without an answer. */
export function fail(error: unknown): Answer {
  return () => {
    throw error;
  };
}

/** Fast backoff for tests. */
export const FAST = { backoff: { initialMs: 1, maxMs: 4 } } as const;
