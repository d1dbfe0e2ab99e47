// The conversation view the fold builds: what a chat UI renders. Every field is plain data (records and
// arrays of the protocol's own event shapes), so two views compare with a deep equality and serialise as
// JSON. What the fold only needs to stay idempotent (the deltas applied to each streamed message, by seq)
// is kept off the view, in non-enumerable properties a deep equality and `JSON.stringify` do not see.

import type {
  ContextCompactedEvent,
  ModelMessageEvent,
  SandboxCreatedEvent,
  SequencedEvent,
  StoredEvent,
  ThreadCreatedEvent,
  ThreadDoneEvent,
  ToolResponseEvent,
  UnknownEvent,
} from "../events.js";
import type {
  ActionRequiredEvent,
  AgentInfo,
  AgentParent,
  McpServerInitInfo,
  TurnInputItem,
  TurnMetrics,
  TurnState,
} from "../resources/types.js";

/** A stored event with the turn it belongs to: one item of `GET /sessions/{id}/events`. */
export interface StoredEventItem {
  readonly turn_id: string;
  readonly event: StoredEvent;
}

/**
 * What `fold` accepts: a frame of a live (or replayed) turn stream, a history item with its turn, or a
 * stored event alone (attributed to the conversation's last turn).
 */
export type FoldInput = SequencedEvent | StoredEventItem | StoredEvent;

/**
 * Where a turn stands. `requires_action`: it ended paused on required actions (approvals, answers to
 * questions, MCP authorization); `failed`: it ended in an error (`TurnView.error`).
 */
export type TurnStatus = "running" | "done" | "requires_action" | "failed" | "cancelled";

/** One turn of the conversation. */
export interface TurnView {
  readonly id: string;
  /** The turn it continues; `null` for the first turn, or while its `turn.created` has not been folded. */
  readonly previousTurnId: string | null;
  /** What started the turn: a user message, answers to required actions, or nothing (an MCP resume). */
  readonly input: readonly TurnInputItem[];
  /** When the turn was created; `null` while only later events of it have been folded (a history page cut). */
  readonly createdAt: string | null;
  readonly status: TurnStatus;
  /** The wire state: `running` from `turn.created`, then the terminal state of `turn.done`. */
  readonly state: TurnState | null;
  /** The error message of a failed turn. */
  readonly error: string | null;
  /** The turn's billable totals, when its `turn.done` gave them. */
  readonly metrics: TurnMetrics | null;
  /** The assistant messages of the turn (every thread), by id; `messageById` finds one in any turn. */
  readonly messages: Readonly<Record<string, MessageView>>;
  /** The tool responses of the turn (every thread), by `tool_call_id`; `toolResponseOf` finds one in any turn. */
  readonly toolResponses: Readonly<Record<string, ToolResponseEvent>>;
}

/** An assistant message: the stored `model.message`, or the streamed one with its deltas merged. */
export interface MessageView {
  readonly id: string;
  /**
   * The turn the message belongs to. Frames of a stream folded before any turn is known go to a turn with
   * the id `""`.
   */
  readonly turnId: string;
  readonly threadId: string;
  readonly message: ModelMessageEvent;
}

/** Where a thread stands: sub-agent threads end with `thread.done`; the root thread ends with its turns. */
export type ThreadStatus = "running" | "done" | "error";

/** The root thread (`"main"`) or a sub-agent's thread. */
export interface ThreadView {
  readonly id: string;
  /** The thread and the `create_sub_agent` tool call that started this one; `null` for the root. */
  readonly parent: AgentParent | null;
  readonly title: string | null;
  readonly agentInfo: AgentInfo | null;
  readonly status: ThreadStatus;
  /** The error of a sub-agent that failed. */
  readonly error: string | null;
  /** The thread's messages, oldest first (see `messageById`). */
  readonly messageIds: readonly string[];
  /** The compactions of the thread's context, oldest first (see `threadTimeline`). */
  readonly compactions: readonly CompactionView[];
  /** The `thread.created` and `thread.done` events as received. */
  readonly created: ThreadCreatedEvent | null;
  readonly done: ThreadDoneEvent | null;
}

/**
 * A compaction of a thread's context (`context.compacted`): from here on the agent works from a summary
 * (`event.summary`, `method: "summary"`), or with its oldest tool outputs cut (`method: "truncation"`).
 */
export interface CompactionView {
  /** The turn it happened in. */
  readonly turnId: string;
  readonly threadId: string;
  /**
   * The thread's last message before the compaction, where a UI places its marker; `null` when the thread
   * had no message yet.
   */
  readonly afterMessageId: string | null;
  /** The event as received: `method`, `summary`, `replaced_messages`, `tokens_before`, `tokens_after`. */
  readonly event: ContextCompactedEvent;
}

/** An event of a type this SDK does not know, kept with the turn it arrived in. */
export interface UnknownEntry {
  readonly turnId: string | null;
  readonly event: UnknownEvent;
}

/** Where the conversation stands: `idle` before its first turn, else the status of its last turn. */
export type ConversationStatus = "idle" | TurnStatus;

/** The fold's state: the conversation as a chat UI renders it. */
export interface ConversationState {
  /**
   * Turns in conversation order (each after the turn it continues), with their messages and tool responses.
   * Keeping those by turn lets a streamed delta copy one turn's messages rather than the conversation's.
   */
  readonly turns: readonly TurnView[];
  /** Threads by id; the root is `"main"`. */
  readonly threads: Readonly<Record<string, ThreadView>>;
  /** The sub-agent thread each `create_sub_agent` call started, by `tool_call_id`. */
  readonly subAgentThreads: Readonly<Record<string, string>>;
  /**
   * The required actions the conversation waits on, in the order they were raised. A tool action lists
   * only its calls still unanswered.
   */
  readonly pendingActions: readonly ActionRequiredEvent[];
  /** The MCP servers connected, by server id (the latest `mcp.initialize` for each). */
  readonly mcpServers: Readonly<Record<string, McpServerInitInfo>>;
  /** The session's sandbox, once `sandbox.created` was folded. */
  readonly sandbox: SandboxCreatedEvent | null;
  /** Events of unknown types, in arrival order. */
  readonly unknown: readonly UnknownEntry[];
  /** The status of the last turn (`idle` before any). */
  readonly status: ConversationStatus;
}

/** The root thread's id. */
export const ROOT_THREAD_ID = "main";
