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
  compactionsOf,
  isFailed,
  isFinished,
  isPaused,
  lastTurn,
  pendingOf,
  subAgentsOf,
  type TimelineEntry,
  type ToolCallView,
  threadMessages,
  threadTimeline,
  toolCallsOf,
  turnMessages,
} from "./selectors.js";
export {
  type CompactionView,
  type ConversationState,
  type ConversationStatus,
  type FoldInput,
  type MessageView,
  ROOT_THREAD_ID,
  type StoredEventItem,
  type ThreadStatus,
  type ThreadView,
  type TurnStatus,
  type TurnView,
  type UnknownEntry,
} from "./types.js";
