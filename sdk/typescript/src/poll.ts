// Waiting for a turn without a stream: `GET …/turns/{id}` at growing intervals until the turn leaves
// `running`, told apart into the four ways a turn ends for its caller.

import { ActionBatch } from "./actions.js";
import { TrueForgeAbortError, TrueForgeTimeoutError } from "./errors.js";
import type { components } from "./generated/schema.js";
import type { RequestOptions } from "./http.js";

import type { Turn } from "./resources/types.js";

type Schemas = components["schemas"];
type State<S extends Turn["state"]["status"]> = Extract<Turn["state"], { status: S }>;

/** How a turn ended, for its caller. */
export type TurnOutcome =
  /** Finished with an answer (`output`, `null` when the model said nothing). */
  | {
      readonly status: "done";
      readonly turn: Turn;
      readonly state: State<"done">;
      readonly output: Schemas["ModelMessageEvent"] | null;
    }
  /** Finished but waiting for the user: approvals, answers, MCP authorizations (`actions`). */
  | {
      readonly status: "requires_action";
      readonly turn: Turn;
      readonly state: State<"done">;
      readonly actions: ActionBatch;
    }
  /** Failed (`message`). */
  | {
      readonly status: "failed";
      readonly turn: Turn;
      readonly state: State<"error">;
      readonly message: string;
    }
  /** Cancelled (`reason`: by the client, by a newer turn, by the server's time limit, abandoned). */
  | {
      readonly status: "cancelled";
      readonly turn: Turn;
      readonly state: State<"cancelled">;
      readonly reason: Schemas["TurnStateCancelledReason"];
    };

export interface WaitOptions {
  /** Aborts the wait (`TrueForgeAbortError`). */
  readonly signal?: AbortSignal | undefined;
  /** The longest wait in all (default 10 minutes); then `TrueForgeTimeoutError`. */
  readonly timeoutMs?: number | undefined;
  /** The first interval between polls (default 200 ms). */
  readonly intervalMs?: number | undefined;
  /** The longest interval (default 2 s). */
  readonly maxIntervalMs?: number | undefined;
  /** Growth of the interval after each poll (default 1.5). */
  readonly backoff?: number | undefined;
  /** Options of each `GET` (timeout, headers). */
  readonly request?: Omit<RequestOptions, "signal"> | undefined;
}

/** What polling needs of a client: reading one turn. */
export interface TurnReader {
  get(sessionId: string, turnId: string, options?: RequestOptions): Promise<Turn>;
}

/** The outcome of a turn that is no longer running; `undefined` while it runs. */
export function outcomeOf(turn: Turn): TurnOutcome | undefined {
  const state = turn.state;
  switch (state.status) {
    case "running":
      return undefined;
    case "done":
      return state.required_actions.length > 0
        ? { status: "requires_action", turn, state, actions: ActionBatch.fromTurn(turn) }
        : { status: "done", turn, state, output: state.output };
    case "error":
      return { status: "failed", turn, state, message: state.message };
    case "cancelled":
      return { status: "cancelled", turn, state, reason: state.reason };
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Polls a turn until it ends. */
export async function waitForTurn(
  turns: TurnReader,
  sessionId: string,
  turnId: string,
  options: WaitOptions = {},
): Promise<TurnOutcome> {
  const timeoutMs = options.timeoutMs ?? 600_000;
  const maxInterval = options.maxIntervalMs ?? 2_000;
  const backoff = Math.max(1, options.backoff ?? 1.5);
  let interval = options.intervalMs ?? 200;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const caller = options.signal;
  const signal = caller ? AbortSignal.any([caller, deadline.signal]) : deadline.signal;
  const stopped = (cause?: unknown): Error =>
    caller?.aborted
      ? new TrueForgeAbortError(`waiting for the turn ${turnId} was aborted`, { cause: caller.reason })
      : new TrueForgeTimeoutError(`the turn ${turnId} did not end within ${timeoutMs} ms`, { cause });
  try {
    for (;;) {
      if (signal.aborted) {
        throw stopped();
      }
      let turn: Turn;
      try {
        turn = await turns.get(sessionId, turnId, { ...options.request, signal });
      } catch (error) {
        if (signal.aborted) {
          throw stopped(error);
        }
        throw error;
      }
      const outcome = outcomeOf(turn);
      if (outcome) {
        return outcome;
      }
      await pause(interval, signal);
      interval = Math.min(maxInterval, interval * backoff);
    }
  } finally {
    clearTimeout(timer);
  }
}
