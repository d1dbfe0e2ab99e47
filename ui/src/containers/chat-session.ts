// The chat on screen, for the components deep in its thread: the session, its controller and snapshot, and
// the decisions on the actions the turn waits on (answered one card at a time, sent together).

import type { ActionBatch, ApprovalScope, Session } from "@trueforge/sdk";
import { createContext, useContext } from "react";
import type { ConversationController, ConversationSnapshot } from "../state/conversation.js";

export interface ChatSession {
  readonly sessionId: string | null;
  readonly session: Session | null;
  readonly controller: ConversationController;
  readonly snapshot: ConversationSnapshot;
  /** The decisions on the pending actions, rebuilt whenever the pending actions change. */
  readonly batch: ActionBatch;
  /** Bumped when a decision is recorded (the batch is mutable). */
  readonly decisions: number;
  approve(toolCallId: string, scope: ApprovalScope): void;
  deny(toolCallId: string, reason: string): void;
  answer(toolCallId: string, content: string): void;
  /** Starts a branch: `input` as a new turn after `previousTurnId` (`"none"`: from the start). */
  branch(previousTurnId: string, text: string): void;
}

export const ChatSessionContext = createContext<ChatSession | null>(null);

export function useChatSession(): ChatSession {
  const chat = useContext(ChatSessionContext);
  if (chat === null) {
    throw new Error("useChatSession must be used inside a chat");
  }
  return chat;
}

export function useOptionalChatSession(): ChatSession | null {
  return useContext(ChatSessionContext);
}
