// Turns without a stream: start one (safe to retry: it carries an `Idempotency-Key`), read, list, wait for its
// end, answer what it waits on. The streaming calls are added in `turn-streams.ts`.

import type { ActionBatch } from "../actions.js";
import type { StoredEvent } from "../events.js";
import type { operations } from "../generated/schema.js";
import { type HttpClient, type RequestOptions, randomId } from "../http.js";
import { type TurnOutcome, type WaitOptions, waitForTurn } from "../poll.js";
import {
  baseName,
  DEFAULT_MAX_DOWNLOAD_BYTES,
  dispositionFileName,
  readLimitedBody,
  type SandboxArtifact,
  type SandboxFileContent,
} from "../sandbox/artifacts.js";
import {
  type CreateTurnRequest,
  type Page,
  paginate,
  type Turn,
  toStoredEvent,
  withPageToken,
} from "./types.js";

export type ListTurnsQuery = NonNullable<operations["list_turns"]["parameters"]["query"]>;
export type ListTurnEventsQuery = NonNullable<operations["list_turn_events"]["parameters"]["query"]>;

/** A new turn: its input and the turn it continues (`auto`, the default: the session's latest; `none`; an id). */
export type TurnBody = Pick<CreateTurnRequest, "input"> &
  Partial<Pick<CreateTurnRequest, "previous_turn_id">>;

export interface CreateTurnOptions extends RequestOptions {
  /**
   * The key that makes the start safe to retry: the server starts one turn per key and answers a repeat with
   * it. A random UUID by default; give your own to retry across restarts of your process.
   */
  readonly idempotencyKey?: string | undefined;
}

export interface RespondOptions extends CreateTurnOptions {
  /** The turn the answers continue; by default the batch's turn, else the session's latest. */
  readonly previousTurnId?: string | undefined;
}

export interface ReadSandboxFileOptions extends RequestOptions {
  /**
   * The most bytes read (default {@link DEFAULT_MAX_DOWNLOAD_BYTES}, 20 MiB): a larger file throws
   * `TrueForgeFileError` (`file_too_large`) as soon as its size is known, without reading the rest.
   */
  readonly maxBytes?: number | undefined;
}

export class TurnCalls {
  protected readonly http: HttpClient;

  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * Starts a turn and answers with it as soon as it started (`state.status` is usually `running`); see
   * {@link TurnCalls.wait} and {@link TurnCalls.run}. Sends an `Idempotency-Key`, so it is retried like a GET.
   */
  async create(sessionId: string, body: TurnBody, options: CreateTurnOptions = {}): Promise<Turn> {
    const { idempotencyKey, ...rest } = options;
    return (
      await this.http.call("post", "/api/v1/sessions/{session_id}/turns", {
        ...rest,
        idempotencyKey: idempotencyKey ?? randomId(),
        path: { session_id: sessionId },
        body: { previous_turn_id: "auto", ...body, stream: false },
      })
    ).data;
  }

  async get(sessionId: string, turnId: string, options?: RequestOptions): Promise<Turn> {
    return (
      await this.http.call("get", "/api/v1/sessions/{session_id}/turns/{turn_id}", {
        ...options,
        path: { session_id: sessionId, turn_id: turnId },
      })
    ).data;
  }

  /** One page of a session's turns, newest first. */
  list(sessionId: string, query?: ListTurnsQuery, options?: RequestOptions): Promise<Page<Turn>> {
    return this.http.call("get", "/api/v1/sessions/{session_id}/turns", {
      ...options,
      path: { session_id: sessionId },
      query,
    });
  }

  /** Every page of a session's turns, fetched as the loop asks. */
  pages(
    sessionId: string,
    query: ListTurnsQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<Page<Turn>, void, undefined> {
    return paginate((token) => this.list(sessionId, withPageToken(query, token), options), query.page_token);
  }

  /** One page of a turn's persisted events (no deltas), in order by default. */
  async events(
    sessionId: string,
    turnId: string,
    query?: ListTurnEventsQuery,
    options?: RequestOptions,
  ): Promise<Page<StoredEvent>> {
    const page = await this.http.call("get", "/api/v1/sessions/{session_id}/turns/{turn_id}/events", {
      ...options,
      path: { session_id: sessionId, turn_id: turnId },
      query,
    });
    return { ...page, data: page.data.map(toStoredEvent) };
  }

  /** Every page of a turn's events, fetched as the loop asks. */
  eventPages(
    sessionId: string,
    turnId: string,
    query: ListTurnEventsQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<Page<StoredEvent>, void, undefined> {
    return paginate(
      (token) => this.events(sessionId, turnId, withPageToken(query, token), options),
      query.page_token,
    );
  }

  /**
   * Downloads a file from the sandbox a turn used. Answers the `Response` with its body unread: stream it
   * (`response.body`) or read it whole (`await response.blob()`). Errors (404, 410, 412, 413) throw.
   */
  downloadSandboxFile(
    sessionId: string,
    turnId: string,
    path: string,
    options?: RequestOptions,
  ): Promise<Response> {
    return this.http.callRaw("get", "/api/v1/sessions/{session_id}/turns/{turn_id}/download-sandbox-file", {
      ...options,
      path: { session_id: sessionId, turn_id: turnId },
      query: { path },
    });
  }

  /**
   * Downloads a file from the sandbox a turn used into bytes, reading at most `maxBytes` (the body is
   * streamed and cancelled past the limit). `file` is a path or an artifact of `parseSandboxArtifacts`.
   * Errors of the server throw `TrueForgeApiError` as for `downloadSandboxFile`: 400 a bad path or a
   * directory, 404 no such file (or turn), 410 the sandbox is gone, 412 the turn had no sandbox, 413 over the
   * server's `max_sandbox_file_bytes`, 424 the sandbox provider failed.
   */
  async readSandboxFile(
    sessionId: string,
    turnId: string,
    file: string | SandboxArtifact,
    options: ReadSandboxFileOptions = {},
  ): Promise<SandboxFileContent> {
    const { maxBytes = DEFAULT_MAX_DOWNLOAD_BYTES, ...rest } = options;
    const path = typeof file === "string" ? file : file.path;
    const response = await this.downloadSandboxFile(sessionId, turnId, path, rest);
    const bytes = await readLimitedBody(response, maxBytes, path, rest.signal);
    const name = dispositionFileName(response.headers.get("content-disposition")) ?? baseName(path);
    return { path, name, bytes };
  }

  /** Polls a turn until it ends: `done`, `requires_action`, `failed` or `cancelled`. */
  wait(sessionId: string, turnId: string, options?: WaitOptions): Promise<TurnOutcome> {
    return waitForTurn(this, sessionId, turnId, options);
  }

  /** Starts a turn and polls it until it ends. */
  async run(
    sessionId: string,
    body: TurnBody,
    options: WaitOptions & { readonly idempotencyKey?: string | undefined } = {},
  ): Promise<TurnOutcome> {
    const turn = await this.create(sessionId, body, {
      ...options.request,
      signal: options.signal,
      idempotencyKey: options.idempotencyKey,
    });
    return this.wait(sessionId, turn.id, options);
  }

  /** The continuation turn's body for a complete batch (throws `TrueForgeActionError` when it is not). */
  protected continuation(batch: ActionBatch, previousTurnId: string | undefined): TurnBody {
    const input = batch.toInput();
    const previous = previousTurnId ?? batch.turnId;
    return previous ? { input, previous_turn_id: previous } : { input };
  }

  /**
   * Sends the answers of a batch as the next turn (without a stream; see `respond` for both). MCP
   * authorizations need no answer: a batch of those only continues the turn with an empty input.
   */
  createResponse(sessionId: string, batch: ActionBatch, options: RespondOptions = {}): Promise<Turn> {
    const { previousTurnId, ...rest } = options;
    return this.create(sessionId, this.continuation(batch, previousTurnId), rest);
  }

  /** Continues a session after the user authorized the MCP servers a turn waited on (a turn without input). */
  continueAfterAuthorization(sessionId: string, options: RespondOptions = {}): Promise<Turn> {
    const { previousTurnId, ...rest } = options;
    return this.create(
      sessionId,
      previousTurnId ? { input: [], previous_turn_id: previousTurnId } : { input: [] },
      rest,
    );
  }
}
