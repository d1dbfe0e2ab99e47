// Reading the conversation view: the joins a chat UI needs, computed from the state.

import type { ToolResponseEvent } from "../events.js";
import type { components } from "../generated/schema.js";
import type {
  ActionRequiredEvent,
  UserToolApprovalEvent,
  UserToolResponseEvent,
} from "../resources/types.js";
import { answerOf, messageById, toolResponseOf } from "./fold.js";
import {
  type CompactionView,
  type ConversationState,
  type MessageView,
  ROOT_THREAD_ID,
  type ThreadView,
  type TurnView,
} from "./types.js";

type ToolCall = components["schemas"]["ToolCall"];

/** A tool call of a message with what became of it. */
export interface ToolCallView {
  readonly call: ToolCall;
  /** The message that made the call. */
  readonly messageId: string;
  readonly threadId: string;
  /** The tool's response, once there is one (a finished sub-agent's call gets one too). */
  readonly response: ToolResponseEvent | null;
  /** The sub-agent thread a `create_sub_agent` call started. */
  readonly subAgentThread: ThreadView | null;
  /** The user's answer, when the call waited on one. */
  readonly answer: UserToolApprovalEvent | UserToolResponseEvent | null;
  /** What the call waits on now: the user's approval, the user's (client's) response, or nothing. */
  readonly waitingFor: "approval" | "response" | null;
}

/** The tool calls of a message, in the message's order, joined with their responses and sub-agents. */
export function toolCallsOf(state: ConversationState, messageId: string): ToolCallView[] {
  const view = messageById(state, messageId);
  if (view === undefined) {
    return [];
  }
  return (view.message.tool_calls ?? []).map((call) => {
    const threadId = state.subAgentThreads[call.id];
    const pending = state.pendingActions.find(
      (action) => action.type !== "mcp.auth_required" && action.tool_calls.some((ref) => ref.id === call.id),
    );
    return {
      call,
      messageId,
      threadId: view.threadId,
      response: toolResponseOf(state, call.id) ?? null,
      subAgentThread: threadId === undefined ? null : (state.threads[threadId] ?? null),
      answer: answerOf(state, call.id) ?? null,
      waitingFor:
        pending === undefined ? null : pending.type === "tool.approval_required" ? "approval" : "response",
    };
  });
}

/** The messages of a thread (the root by default), oldest first. */
export function threadMessages(state: ConversationState, threadId: string = ROOT_THREAD_ID): MessageView[] {
  const thread = state.threads[threadId];
  if (thread === undefined) {
    return [];
  }
  return thread.messageIds.flatMap((id) => {
    const view = messageById(state, id);
    return view === undefined ? [] : [view];
  });
}

/** The compactions of a thread's context (the root's by default), oldest first. */
export function compactionsOf(state: ConversationState, threadId: string = ROOT_THREAD_ID): CompactionView[] {
  return [...(state.threads[threadId]?.compactions ?? [])];
}

/** One entry of a thread's timeline: a message, or the marker of a compaction. */
export type TimelineEntry =
  | { readonly kind: "message"; readonly message: MessageView }
  | { readonly kind: "compaction"; readonly compaction: CompactionView };

/**
 * A thread's messages (the root's by default) with its compactions placed among them: each after the
 * message it followed, oldest first. What a chat renders, with a "context compacted" marker where the agent
 * went on from a summary.
 */
export function threadTimeline(state: ConversationState, threadId: string = ROOT_THREAD_ID): TimelineEntry[] {
  const messages = threadMessages(state, threadId);
  const pending = compactionsOf(state, threadId);
  const placed = (after: string | null): TimelineEntry[] => {
    const here = pending.filter((compaction) => compaction.afterMessageId === after);
    return here.map((compaction) => ({ kind: "compaction", compaction }));
  };
  const timeline: TimelineEntry[] = placed(null);
  for (const message of messages) {
    timeline.push({ kind: "message", message }, ...placed(message.id));
  }
  // A compaction after a message the view no longer has (never expected) still shows, at the end.
  const shown = new Set([null, ...messages.map((message) => message.id)]);
  for (const compaction of pending) {
    if (!shown.has(compaction.afterMessageId)) {
      timeline.push({ kind: "compaction", compaction });
    }
  }
  return timeline;
}

/** The messages a turn added to a thread (the root by default), oldest first. */
export function turnMessages(
  state: ConversationState,
  turnId: string,
  threadId: string = ROOT_THREAD_ID,
): MessageView[] {
  return threadMessages(state, threadId).filter((view) => view.turnId === turnId);
}

/** The sub-agent threads a thread started (the root's by default), in the order they were created. */
export function subAgentsOf(state: ConversationState, threadId: string = ROOT_THREAD_ID): ThreadView[] {
  return Object.values(state.threads).filter((thread) => thread.parent?.thread_id === threadId);
}

/** The last turn, if any. */
export function lastTurn(state: ConversationState): TurnView | null {
  return state.turns.at(-1) ?? null;
}

/** Whether the last turn ended: done, paused on required actions, failed or cancelled. */
export function isFinished(state: ConversationState): boolean {
  return state.status !== "idle" && state.status !== "running";
}

/** Whether the conversation waits on the user: the last turn paused and actions are still pending. */
export function isPaused(state: ConversationState): boolean {
  return state.status === "requires_action" && state.pendingActions.length > 0;
}

/** Whether the last turn failed; its message is `lastTurn(state)?.error`. */
export function isFailed(state: ConversationState): boolean {
  return state.status === "failed";
}

/** The pending required actions of one kind. */
export function pendingOf<Type extends ActionRequiredEvent["type"]>(
  state: ConversationState,
  type: Type,
): Extract<ActionRequiredEvent, { type: Type }>[] {
  return state.pendingActions.filter(
    (action): action is Extract<ActionRequiredEvent, { type: Type }> => action.type === type,
  );
}
