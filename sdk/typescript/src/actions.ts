// Answering what a paused turn waits on. A turn that ends `done` with `required_actions` waits for the
// user: tool calls to approve or deny (`tool.approval_required`), client-side calls to answer
// (`tool.response_required`, e.g. `ask_user_question`), MCP servers to authorize (`mcp.auth_required`). Every
// pending call is answered in one continuation turn; an `ActionBatch` collects the decisions, says when all
// are made, and builds that turn's input, refusing an incomplete batch or a decision about a call nothing
// waits for.

import { TrueForgeError } from "./errors.js";
import type { components } from "./generated/schema.js";

import type {
  ActionRequiredEvent,
  ApprovalScope,
  McpServerAuthInfo,
  TurnInputItem,
} from "./resources/types.js";

type Schemas = components["schemas"];

/** Why a batch refused something. */
export type ActionErrorCode =
  /** No pending call has this id. */
  | "unknown_call"
  /** The call waits for another kind of answer (an approval answered with content, or the reverse). */
  | "wrong_kind"
  /** `toInput` was called while calls are still undecided. */
  | "incomplete";

/** A batch refused a decision or an incomplete send. */
export class TrueForgeActionError extends TrueForgeError {
  readonly code: ActionErrorCode;
  /** The tool calls concerned. */
  readonly toolCallIds: readonly string[];

  constructor(code: ActionErrorCode, message: string, toolCallIds: readonly string[]) {
    super(message);
    this.code = code;
    this.toolCallIds = toolCallIds;
  }
}

/** One tool call a turn waits on. */
export interface PendingCall {
  /** `approval`: allow or deny it; `response`: the client answers it (a question to the user). */
  readonly kind: "approval" | "response";
  readonly toolCallId: string;
  readonly threadId: string;
  /** The `model.message` event that made the call (its arguments are there). */
  readonly sourceEventId: string;
}

/** A decision recorded in a batch. */
export type Decision =
  | { readonly kind: "approval"; readonly approval: Schemas["ApprovalDecision"] }
  | { readonly kind: "response"; readonly content: string };

/** The state of a turn that may be paused (`Turn["state"]`). */
type TurnStateLike = { readonly status: string; readonly required_actions?: readonly ActionRequiredEvent[] };

/** The decisions on the actions one paused turn waits on. */
export class ActionBatch {
  /** The pending tool calls, in the order the turn listed them. */
  readonly calls: readonly PendingCall[];
  /** MCP servers the user must authorize (with `auth_url`) before the turn can go on. */
  readonly mcpAuthorizations: readonly McpServerAuthInfo[];
  /** The paused turn, when known: the continuation names it as its previous turn. */
  readonly turnId: string | undefined;
  readonly #byId: ReadonlyMap<string, PendingCall>;
  readonly #decisions = new Map<string, Decision>();

  constructor(actions: readonly ActionRequiredEvent[], turnId?: string) {
    const calls: PendingCall[] = [];
    const mcp: McpServerAuthInfo[] = [];
    for (const action of actions) {
      if (action.type === "mcp.auth_required") {
        mcp.push(...action.mcp_servers);
        continue;
      }
      const kind = action.type === "tool.approval_required" ? "approval" : "response";
      for (const call of action.tool_calls) {
        calls.push({
          kind,
          toolCallId: call.id,
          threadId: action.thread_id,
          sourceEventId: call.source_event_id,
        });
      }
    }
    this.calls = calls;
    this.mcpAuthorizations = mcp;
    this.turnId = turnId;
    this.#byId = new Map(calls.map((call) => [call.toolCallId, call]));
  }

  /** The batch of a turn's required actions (none when the turn is not paused). */
  static from(actions: readonly ActionRequiredEvent[] | undefined, turnId?: string): ActionBatch {
    return new ActionBatch(actions ?? [], turnId);
  }

  /** The batch of a turn (as `GET …/turns/{id}` answers it): its required actions when it is done. */
  static fromTurn(turn: { readonly id: string; readonly state: TurnStateLike }): ActionBatch {
    return new ActionBatch(turn.state.status === "done" ? (turn.state.required_actions ?? []) : [], turn.id);
  }

  /** Calls still undecided. */
  get pending(): readonly PendingCall[] {
    return this.calls.filter((call) => !this.#decisions.has(call.toolCallId));
  }

  /** Whether every call is decided (a batch of MCP authorizations only is complete at once). */
  get complete(): boolean {
    return this.pending.length === 0;
  }

  /** Whether the turn waits on anything at all. */
  get empty(): boolean {
    return this.calls.length === 0 && this.mcpAuthorizations.length === 0;
  }

  /** The decision recorded for a call. */
  decision(toolCallId: string): Decision | undefined {
    return this.#decisions.get(toolCallId);
  }

  #call(toolCallId: string, kind: PendingCall["kind"]): PendingCall {
    const call = this.#byId.get(toolCallId);
    if (!call) {
      throw new TrueForgeActionError("unknown_call", `no pending tool call has the id ${toolCallId}`, [
        toolCallId,
      ]);
    }
    if (call.kind !== kind) {
      const wanted = call.kind === "approval" ? "approve or deny" : "answer";
      throw new TrueForgeActionError(
        "wrong_kind",
        `the tool call ${toolCallId} waits for ${call.kind === "approval" ? "an approval" : "an answer"}: ${wanted} it`,
        [toolCallId],
      );
    }
    return call;
  }

  /** Allows a call: `once` (default), for the rest of the `session`, or for every session of the saved `agent`. */
  approve(toolCallId: string, options: { readonly scope?: ApprovalScope } = {}): this {
    this.#call(toolCallId, "approval");
    const approval: Schemas["ApprovalDecision"] = options.scope
      ? { status: "allow", scope: options.scope }
      : { status: "allow" };
    this.#decisions.set(toolCallId, { kind: "approval", approval });
    return this;
  }

  /** Denies a call; the reason reaches the model. */
  deny(toolCallId: string, reason?: string): this {
    this.#call(toolCallId, "approval");
    const approval: Schemas["ApprovalDecision"] =
      reason === undefined ? { status: "deny" } : { status: "deny", reason };
    this.#decisions.set(toolCallId, { kind: "approval", approval });
    return this;
  }

  /** Answers a client-side call (the user's reply to a question). */
  answer(toolCallId: string, content: string): this {
    this.#call(toolCallId, "response");
    this.#decisions.set(toolCallId, { kind: "response", content });
    return this;
  }

  /** Approves every undecided approval with the same options. */
  approveAll(options: { readonly scope?: ApprovalScope } = {}): this {
    for (const call of this.pending) {
      if (call.kind === "approval") {
        this.approve(call.toolCallId, options);
      }
    }
    return this;
  }

  /**
   * The continuation turn's input: one `user.tool_approval` or `user.tool_response` per call, in the turn's
   * order (empty for MCP authorizations only). Throws `TrueForgeActionError` (`incomplete`) while calls are
   * undecided.
   */
  toInput(): TurnInputItem[] {
    const pending = this.pending;
    if (pending.length > 0) {
      throw new TrueForgeActionError(
        "incomplete",
        `${pending.length} tool call(s) are still undecided: ${pending.map((call) => call.toolCallId).join(", ")}`,
        pending.map((call) => call.toolCallId),
      );
    }
    return this.calls.map((call): TurnInputItem => {
      const decision = this.#decisions.get(call.toolCallId) as Decision;
      if (decision.kind === "approval") {
        return {
          type: "user.tool_approval",
          thread_id: call.threadId,
          tool_call_id: call.toolCallId,
          approval: decision.approval,
        };
      }
      return {
        type: "user.tool_response",
        thread_id: call.threadId,
        tool_call_id: call.toolCallId,
        content: decision.content,
      };
    });
  }
}
