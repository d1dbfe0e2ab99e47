// The event fold: from a turn stream or stored history to the conversation a chat UI renders.

export {
  answerOf,
  emptyConversation,
  fold,
  foldAll,
  messageById,
  reasoningOf,
  toolResponseOf,
} from "./fold.js";
export { foldHistoryPages, foldTurnEvents } from "./history.js";
export { applyDelta, type Merged, mergeAll } from "./merge.js";
export {
  isFailed,
  isFinished,
  isPaused,
  lastTurn,
  pendingOf,
  subAgentsOf,
  type ToolCallView,
  threadMessages,
  toolCallsOf,
  turnMessages,
} from "./selectors.js";
export {
  type ActionRequiredEvent,
  type AgentInfo,
  type AgentParent,
  type ConversationState,
  type ConversationStatus,
  type FoldInput,
  type McpServerInitInfo,
  type MessageView,
  ROOT_THREAD_ID,
  type StoredEventItem,
  type ThreadStatus,
  type ThreadView,
  type TurnInputItem,
  type TurnMetrics,
  type TurnState,
  type TurnStatus,
  type TurnView,
  type UnknownEntry,
  type UserToolApprovalEvent,
  type UserToolResponseEvent,
} from "./types.js";
