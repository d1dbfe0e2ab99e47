// The resuming turn stream: the events of one turn, in sequence order, each once, to `turn.done`, across
// broken connections. A turn's stream is SSE whose `id` is the event's dense per-turn sequence number; when a
// connection ends before `turn.done`, the stream resumes with `GET …/subscribe` and `Last-Event-ID: <last
// sequence number>`, skips what the server replays and refuses a gap. A create request whose connection fails
// before `turn.created` (the turn's id unknown) is sent again with the same `Idempotency-Key`, so the server
// answers with the same turn instead of starting a second one.

import {
  TrueForgeAbortError,
  TrueForgeConnectionError,
  TrueForgeError,
  TrueForgeProtocolError,
} from "./errors.js";
import { type SequencedEvent, type TurnDoneEvent, toTurnEvent } from "./events.js";
import type { components } from "./generated/schema.js";
import { apiError, isRetryableStatus, parseRetryAfter, randomId, sleep } from "./http.js";
import { type SseEvent, SseParser } from "./sse.js";

type CreateTurnRequest = components["schemas"]["CreateTurnRequest"];

/**
 * The body of a create-turn request, as the schema has it with its defaulted fields optional (the generated
 * type makes a field with a default required). `stream` is forced to `true` by the streaming calls.
 */
export type CreateTurnBody = Omit<CreateTurnRequest, "previous_turn_id" | "stream"> &
  Partial<Pick<CreateTurnRequest, "previous_turn_id" | "stream">>;

/** How the stream sends its requests: the client supplies the base URL, auth and default headers. */
export interface StreamTransport {
  /**
   * Sends a request: `path` is under the base URL (e.g. `/api/v1/sessions/x/turns`); auth and default headers
   * are added by the transport; it resolves with the raw Response (any status) or rejects with a
   * TrueForgeConnectionError / TrueForgeAbortError.
   */
  request(path: string, init: RequestInit): Promise<Response>;
}

export interface StreamOptions {
  /** Aborts the stream: the open request is aborted and iteration throws a `TrueForgeAbortError`. */
  signal?: AbortSignal;
  /** Consecutive connection attempts without a new event before giving up (default 5). */
  maxReconnects?: number;
  /**
   * The delay before a reconnection: `initialMs` (default 250, or the stream's SSE `retry`) doubling per
   * consecutive failure up to `maxMs` (default 5000), with jitter (a random half of it).
   */
  backoff?: { initialMs?: number; maxMs?: number };
}

/** A turn's events as they stream, resumed across broken connections. Iterate it once. */
export interface TurnStream extends AsyncIterable<SequencedEvent> {
  /** The turn's id: known from the start for a subscription, from `turn.created` for a new turn. */
  readonly turnId: string | undefined;
  /** The sequence number of the last event yielded (0, or the subscription's `after`, before any). */
  readonly lastSeq: number;
  /** The `turn.done` event, once yielded. */
  readonly done: TurnDoneEvent | undefined;
  /** Stops the stream: aborts the open request; iteration ends without an error. */
  close(): void;
}

const DEFAULT_MAX_RECONNECTS = 5;
const DEFAULT_INITIAL_MS = 250;
const DEFAULT_MAX_MS = 5_000;
/** The longest `Retry-After` honoured. */
const MAX_RETRY_AFTER_MS = 60_000;

function turnsPath(sessionId: string): string {
  return `/api/v1/sessions/${encodeURIComponent(sessionId)}/turns`;
}

/** Starts a turn and streams its events (`POST /api/v1/sessions/{sessionId}/turns` with `stream: true`). */
export function createTurnStream(
  transport: StreamTransport,
  sessionId: string,
  body: CreateTurnBody,
  options: StreamOptions & { idempotencyKey?: string } = {},
): TurnStream {
  return new ResumingTurnStream(transport, sessionId, undefined, 0, options, {
    body: JSON.stringify({ ...body, stream: true }),
    idempotencyKey: options.idempotencyKey ?? randomId(),
  });
}

/** Follows a turn's events (`GET …/turns/{turnId}/subscribe`), from the start or after the sequence number `after`. */
export function subscribeTurnStream(
  transport: StreamTransport,
  sessionId: string,
  turnId: string,
  options: StreamOptions & { after?: number } = {},
): TurnStream {
  const after = options.after ?? 0;
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new RangeError(`after must be a non-negative integer, not ${after}`);
  }
  return new ResumingTurnStream(transport, sessionId, turnId, after, options, undefined);
}

/** Why a connection ended before `turn.done`, when another attempt may get further. */
class Retryable {
  constructor(
    readonly error: TrueForgeError,
    /** The server's `Retry-After`, in milliseconds. */
    readonly retryAfterMs?: number,
  ) {}
}

/**
 * Whether a stream tries again after this status: the client's retryable ones and any other 5xx too, since a
 * turn runs on whatever its stream's connection does and a subscription only reads.
 */
function isRetryableForStream(status: number): boolean {
  return isRetryableStatus(status) || status >= 500;
}

/** The server's `Retry-After`, in milliseconds, at most {@link MAX_RETRY_AFTER_MS}. */
function retryAfterMs(response: Response): number | undefined {
  const delay = parseRetryAfter(response.headers.get("retry-after"));
  return delay === undefined ? undefined : Math.min(delay, MAX_RETRY_AFTER_MS);
}

function isEventStream(response: Response): boolean {
  const type = response.headers.get("content-type");
  return type !== null && type.split(";")[0]?.trim().toLowerCase() === "text/event-stream";
}

class ResumingTurnStream implements TurnStream {
  turnId: string | undefined;
  lastSeq: number;
  done: TurnDoneEvent | undefined;

  private readonly lifetime = new AbortController();
  private closed = false;
  private started = false;
  private readonly maxReconnects: number;
  private readonly maxMs: number;
  private initialMs: number;

  constructor(
    private readonly transport: StreamTransport,
    private readonly sessionId: string,
    turnId: string | undefined,
    after: number,
    private readonly options: StreamOptions,
    private readonly create: { body: string; idempotencyKey: string } | undefined,
  ) {
    this.turnId = turnId;
    this.lastSeq = after;
    this.maxReconnects = Math.max(0, options.maxReconnects ?? DEFAULT_MAX_RECONNECTS);
    this.initialMs = Math.max(0, options.backoff?.initialMs ?? DEFAULT_INITIAL_MS);
    this.maxMs = Math.max(this.initialMs, options.backoff?.maxMs ?? DEFAULT_MAX_MS);
  }

  close(): void {
    if (!this.closed) {
      this.closed = true;
      this.lifetime.abort(new TrueForgeAbortError("the turn stream was closed"));
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<SequencedEvent> {
    if (this.started) {
      throw new TrueForgeError("a turn stream can be iterated once");
    }
    this.started = true;
    return this.run();
  }

  /** The error iteration ends with once the lifetime aborted: none after `close()`. */
  private abortError(): TrueForgeAbortError | undefined {
    if (this.closed) {
      return undefined;
    }
    const reason: unknown = this.options.signal?.reason;
    return new TrueForgeAbortError("the turn stream was aborted", { cause: reason });
  }

  private async *run(): AsyncGenerator<SequencedEvent, void, undefined> {
    const signal = this.options.signal;
    const onAbort = () => this.lifetime.abort(signal?.reason);
    if (signal?.aborted) {
      onAbort();
    } else {
      signal?.addEventListener("abort", onAbort, { once: true });
    }
    try {
      let failures = 0;
      let last: Retryable | undefined;
      while (true) {
        if (this.lifetime.signal.aborted) {
          const error = this.abortError();
          if (error) throw error;
          return;
        }
        if (failures > 0) {
          if (failures > this.maxReconnects) {
            throw new TrueForgeConnectionError(
              `the turn stream broke and ${failures} consecutive attempts made no progress: ${last?.error.message}`,
              { cause: last?.error },
            );
          }
          try {
            await sleep(this.delay(failures, last?.retryAfterMs), this.lifetime.signal);
          } catch {
            continue; // aborted: handled at the top of the loop
          }
        }
        const outcome = yield* this.connect(() => {
          failures = 0;
        });
        if (outcome === "done") {
          return;
        }
        if (outcome === "aborted") {
          continue;
        }
        last = outcome;
        failures++;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  private delay(failures: number, retryAfter: number | undefined): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** (failures - 1));
    const jittered = base / 2 + Math.random() * (base / 2);
    return retryAfter !== undefined ? Math.max(jittered, retryAfter) : jittered;
  }

  /**
   * One connection: yields its new events; ends with `"done"` after `turn.done`, `"aborted"` when the
   * lifetime aborted, or the reason another attempt may get further. Throws what ends the stream.
   */
  private async *connect(
    onProgress: () => void,
  ): AsyncGenerator<SequencedEvent, "done" | "aborted" | Retryable, undefined> {
    const connection = new AbortController();
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    const onAbort = () => {
      connection.abort(this.lifetime.signal.reason);
      // A transport whose body ignores the signal still stops here.
      reader?.cancel(this.lifetime.signal.reason).catch(() => {});
    };
    this.lifetime.signal.addEventListener("abort", onAbort, { once: true });
    try {
      const creating = this.turnId === undefined;
      const method = creating ? "POST" : "GET";
      let path: string;
      const headers: Record<string, string> = { accept: "text/event-stream" };
      const init: RequestInit = { method, headers, signal: connection.signal };
      if (this.turnId === undefined) {
        if (this.create === undefined) {
          throw new TrueForgeError("unreachable: a subscription without a turn id");
        }
        path = turnsPath(this.sessionId);
        headers["content-type"] = "application/json";
        headers["idempotency-key"] = this.create.idempotencyKey;
        init.body = this.create.body;
      } else {
        path = `${turnsPath(this.sessionId)}/${encodeURIComponent(this.turnId)}/subscribe`;
        if (this.lastSeq > 0) {
          headers["last-event-id"] = String(this.lastSeq);
        }
      }

      let response: Response;
      try {
        response = await this.transport.request(path, init);
      } catch (error) {
        if (this.lifetime.signal.aborted) {
          return "aborted";
        }
        if (error instanceof TrueForgeConnectionError) {
          return new Retryable(error);
        }
        if (error instanceof TrueForgeError) {
          throw error;
        }
        return new Retryable(
          new TrueForgeConnectionError(`${method} ${path} failed: ${String(error)}`, { cause: error }),
        );
      }

      if (response.status < 200 || response.status > 299) {
        const error = await apiError(response, method, path);
        if (this.lifetime.signal.aborted) {
          return "aborted";
        }
        if (isRetryableForStream(response.status)) {
          return new Retryable(error, retryAfterMs(response));
        }
        throw error;
      }
      if (response.headers.get("content-type") === null) {
        // What a browser makes of a connection that broke inside the headers: the status line parsed, no
        // headers, no body. The server always names its type, so this is a broken answer, not a protocol one.
        response.body?.cancel().catch(() => {});
        return new Retryable(
          new TrueForgeConnectionError(
            `${method} ${path} answered ${response.status} without headers (cut short?)`,
          ),
        );
      }
      if (!isEventStream(response)) {
        let snippet = "";
        try {
          snippet = (await response.text()).slice(0, 200);
        } catch {
          // the type alone says enough
        }
        throw new TrueForgeProtocolError(
          `${method} ${path} answered ${response.status} with ${response.headers.get("content-type")}, not an event stream${snippet ? `: ${snippet}` : ""}`,
        );
      }
      if (response.body === null) {
        return new Retryable(new TrueForgeConnectionError(`${method} ${path} answered without a body`));
      }

      reader = response.body.getReader();
      const parser = new SseParser();
      while (true) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          if (this.lifetime.signal.aborted) {
            return "aborted";
          }
          return new Retryable(
            new TrueForgeConnectionError(`the event stream of ${method} ${path} broke: ${String(error)}`, {
              cause: error,
            }),
          );
        }
        if (this.lifetime.signal.aborted) {
          return "aborted";
        }
        const frames = chunk.done ? parser.end() : parser.push(chunk.value);
        if (parser.retry !== undefined) {
          this.initialMs = Math.min(parser.retry, this.maxMs);
        }
        for (const frame of frames) {
          const event = this.accept(frame);
          if (event === undefined) {
            continue;
          }
          onProgress();
          yield event;
          if (event.event.type === "turn.done") {
            return "done";
          }
        }
        if (chunk.done) {
          return new Retryable(
            new TrueForgeConnectionError(`the event stream of ${method} ${path} ended before turn.done`),
          );
        }
      }
    } finally {
      this.lifetime.signal.removeEventListener("abort", onAbort);
      connection.abort();
      reader?.cancel().catch(() => {});
    }
  }

  /** Checks one frame: the next event, `undefined` for one to skip; throws on a protocol violation. */
  private accept(frame: SseEvent): SequencedEvent | undefined {
    if (frame.type !== "message") {
      return undefined; // not a turn event (the server sends none of these today)
    }
    if (!frame.ownId) {
      throw new TrueForgeProtocolError(`an event without an id follows sequence number ${this.lastSeq}`);
    }
    if (!/^\d+$/.test(frame.lastEventId) || !Number.isSafeInteger(Number(frame.lastEventId))) {
      throw new TrueForgeProtocolError(
        `the event id ${JSON.stringify(frame.lastEventId)} is not a sequence number`,
      );
    }
    const seq = Number(frame.lastEventId);
    if (seq <= this.lastSeq) {
      return undefined; // replayed after a reconnection: already yielded
    }
    if (seq !== this.lastSeq + 1) {
      throw new TrueForgeProtocolError(`sequence number ${seq} follows ${this.lastSeq}: events are missing`);
    }
    let value: unknown;
    try {
      value = JSON.parse(frame.data);
    } catch (error) {
      throw new TrueForgeProtocolError(`the event ${seq} is not JSON: ${frame.data.slice(0, 200)}`, {
        cause: error,
      });
    }
    const event = toTurnEvent(value);
    if (event === null) {
      throw new TrueForgeProtocolError(
        `the event ${seq} is not an object with a type: ${frame.data.slice(0, 200)}`,
      );
    }
    if (event.type === "turn.created" && this.turnId === undefined) {
      this.turnId = event.turn_id;
    }
    if (event.type === "turn.done") {
      this.done = event;
    }
    this.lastSeq = seq;
    return { seq, event };
  }
}
