// Folding stored history. `GET /sessions/{id}/events` serves `{turn_id, event}` items newest first, page
// after page; the fold needs them oldest first, so the pages and the items of each page are folded in
// reverse. `GET /sessions/{id}/turns/{turn_id}/events` serves bare events of one turn, oldest first by
// default (`order=asc`).
//
// To show older history after newer (lazy loading), fold every page fetched so far, in fetch order, into a
// fresh state: a thread's messages are ordered by the order they were folded in.

import type { StoredEvent } from "../events.js";
import { emptyConversation, fold } from "./fold.js";
import type { ConversationState, StoredEventItem } from "./types.js";

/**
 * Folds pages of `GET /sessions/{id}/events` given in the order they were fetched (the first page holds the
 * newest events), each page as served (newest first).
 */
export function foldHistoryPages(
  pages: Iterable<readonly StoredEventItem[]>,
  state: ConversationState = emptyConversation(),
): ConversationState {
  const all = [...pages];
  let next = state;
  for (let page = all.length - 1; page >= 0; page -= 1) {
    const items = all[page] ?? [];
    for (let item = items.length - 1; item >= 0; item -= 1) {
      next = fold(next, items[item] as StoredEventItem);
    }
  }
  return next;
}

/**
 * Folds the events of one turn (`GET /sessions/{id}/turns/{turn_id}/events`), in the order they were
 * requested with (`asc`, the endpoint's default, or `desc`).
 */
export function foldTurnEvents(
  turnId: string,
  events: readonly StoredEvent[],
  order: "asc" | "desc" = "asc",
  state: ConversationState = emptyConversation(),
): ConversationState {
  let next = state;
  const count = events.length;
  for (let index = 0; index < count; index += 1) {
    const event = events[order === "asc" ? index : count - 1 - index] as StoredEvent;
    next = fold(next, { turn_id: turnId, event });
  }
  return next;
}
