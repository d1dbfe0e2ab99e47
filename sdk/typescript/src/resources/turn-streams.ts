// The streaming calls of turns, delegated to the stream module (`../stream.js`): a new turn's stream, a
// subscription to a turn from a cursor, and answers to a paused turn sent as a streamed turn.

import type { ActionBatch } from "../actions.js";
import type { HttpClient } from "../http.js";
import { createTurnStream, type StreamOptions, subscribeTurnStream, type TurnStream } from "../stream.js";
import { type RespondOptions, type TurnBody, TurnCalls } from "./turns.js";
import type { Turn } from "./types.js";

/** Options of a new turn's stream: `idempotencyKey` (a random UUID by default) besides the stream's own. */
export type TurnStreamOptions = StreamOptions & { idempotencyKey?: string };
/** Options of a subscription: `after`, the last sequence number seen. */
export type SubscribeOptions = StreamOptions & { after?: number };

/** `respond` with a stream. */
export interface RespondStreamOptions {
  readonly stream: true;
  /** The turn the answers continue; by default the batch's turn, else the session's latest. */
  readonly previousTurnId?: string | undefined;
  /** Options of the stream. */
  readonly streamOptions?: TurnStreamOptions | undefined;
}

export class Turns extends TurnCalls {
  readonly #streamDefaults: TurnStreamOptions | undefined;

  /** `streamDefaults`: options of every stream, under those of a call. */
  constructor(http: HttpClient, streamDefaults?: TurnStreamOptions) {
    super(http);
    this.#streamDefaults = streamDefaults;
  }

  /** Starts a turn and streams its events. */
  stream(sessionId: string, body: TurnBody, options?: TurnStreamOptions): TurnStream {
    const merged = this.#streamDefaults ? { ...this.#streamDefaults, ...options } : options;
    return createTurnStream(
      this.http,
      sessionId,
      { previous_turn_id: "auto", ...body, stream: true },
      merged,
    );
  }

  /** Follows a turn's events, from the start or after `after` (the `seq` of the last event seen). */
  subscribe(sessionId: string, turnId: string, options?: SubscribeOptions): TurnStream {
    const merged = this.#streamDefaults
      ? ({ ...this.#streamDefaults, ...options } as SubscribeOptions)
      : options;
    return subscribeTurnStream(this.http, sessionId, turnId, merged);
  }

  /**
   * Sends the answers of a complete batch as the next turn: streamed with `{stream: true}`, otherwise started
   * and answered as a turn (with an `Idempotency-Key`). Throws `TrueForgeActionError` for an incomplete
   * batch before sending anything.
   */
  respond(sessionId: string, batch: ActionBatch, options: RespondStreamOptions): TurnStream;
  respond(
    sessionId: string,
    batch: ActionBatch,
    options?: RespondOptions & { readonly stream?: false },
  ): Promise<Turn>;
  respond(
    sessionId: string,
    batch: ActionBatch,
    options: RespondStreamOptions | (RespondOptions & { readonly stream?: false }) = {},
  ): TurnStream | Promise<Turn> {
    if (options.stream === true) {
      return this.stream(sessionId, this.continuation(batch, options.previousTurnId), options.streamOptions);
    }
    const { stream: _stream, ...rest } = options;
    return this.createResponse(sessionId, batch, rest);
  }
}
