// The fold: `fold(state, input) → state`, a pure reducer from the protocol's events to the conversation
// view. It never changes the state it is given (unchanged parts are shared), and it returns that very state
// when an input adds nothing, so folding an input twice, or replaying a stream range, changes nothing.
//
// Live and stored events give the same view. A live stream carries a content-less `model.message`
// placeholder and the `model.message.delta`s of each model call; the history carries the complete stored
// `model.message` instead. The rules that make the two agree:
// - deltas merge into their message by the rules of `applyDelta`; a complete stored copy (a stored
//   `model.message`, or the `output` of `turn.done` / `thread.done`) replaces the merged message, and later
//   placeholders and deltas of that message are ignored;
// - each delta is applied once: the deltas applied to a message are kept by `seq`, a replayed one is
//   ignored, and one that arrives out of order is put in its place (the message is rebuilt from its base);
// - a delta that arrives before its placeholder is kept, merged into a provisional base (its id, thread and
//   `created_at`), and the message is rebuilt when the placeholder arrives;
// - model calls that never finished (a failed or cancelled turn) are not stored: at its `turn.done` a
//   turn's unfinished messages leave the view, and a replayed placeholder of a finished turn is ignored.

import {
  type ContextCompactedEvent,
  isKnownEventType,
  type McpAuthRequiredEvent,
  type McpInitializeEvent,
  type ModelMessageDeltaEvent,
  type ModelMessageEvent,
  type SandboxCreatedEvent,
  type StoredEvent,
  type ThreadCreatedEvent,
  type ThreadDoneEvent,
  type ToolApprovalRequiredEvent,
  type ToolResponseEvent,
  type ToolResponseRequiredEvent,
  type TurnCreatedEvent,
  type TurnDoneEvent,
  type TurnEvent,
  toTurnEvent,
  UNKNOWN_EVENT,
  type UnknownEvent,
} from "../events.js";
import type {
  ActionRequiredEvent,
  UserToolApprovalEvent,
  UserToolResponseEvent,
} from "../resources/types.js";
import { applyDelta, type Merged, mergeAll, provisionalBase } from "./merge.js";
import {
  type ConversationState,
  type FoldInput,
  type MessageView,
  ROOT_THREAD_ID,
  type ThreadView,
  type TurnStatus,
  type TurnView,
} from "./types.js";

// ---- what the fold keeps off the view ----------------------------------------------------------------

/** The deltas applied to a message, newest first (a persistent list: appending shares the rest). */
interface AppliedDelta {
  readonly seq: number | null;
  readonly delta: ModelMessageDeltaEvent;
  readonly next: AppliedDelta | null;
}

interface Track {
  /** The streamed placeholder; `null` while only deltas arrived. */
  readonly base: ModelMessageEvent | null;
  readonly deltas: AppliedDelta | null;
  /** Whether the complete stored copy replaced the merged message. */
  readonly final: boolean;
  /** The merged message. */
  readonly merged: Merged;
}

const TRACK: unique symbol = Symbol("trueforge.fold.track");

type TrackedMessage = MessageView & { readonly [TRACK]?: Track };

function trackOf(view: MessageView | undefined): Track | undefined {
  return view === undefined ? undefined : (view as TrackedMessage)[TRACK];
}

function finished(message: ModelMessageEvent): boolean {
  return message.finish_reason !== undefined && message.finish_reason !== null;
}

function messageView(id: string, turnId: string, threadId: string, track: Track): MessageView {
  const view: MessageView = { id, turnId, threadId, message: track.merged.message };
  Object.defineProperty(view, TRACK, { value: track, enumerable: false });
  return view;
}

// ---- the empty state and small helpers ---------------------------------------------------------------

/** The state before any event: no turns, and the root thread with no messages yet. */
export function emptyConversation(): ConversationState {
  return {
    turns: [],
    threads: { [ROOT_THREAD_ID]: emptyThread(ROOT_THREAD_ID) },
    subAgentThreads: {},
    pendingActions: [],
    mcpServers: {},
    sandbox: null,
    unknown: [],
    status: "idle",
  };
}

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

function lastTurn(state: ConversationState): TurnView | undefined {
  return state.turns.at(-1);
}

function withTurns(state: ConversationState, turns: readonly TurnView[]): ConversationState {
  const last = turns.at(-1);
  return { ...state, turns, status: last === undefined ? "idle" : last.status };
}

function stubTurn(id: string): TurnView {
  return {
    id,
    previousTurnId: null,
    input: [],
    createdAt: null,
    status: "running",
    state: null,
    error: null,
    metrics: null,
    messages: {},
    toolResponses: {},
  };
}

function emptyThread(id: string): ThreadView {
  return {
    id,
    parent: null,
    title: null,
    agentInfo: null,
    status: "running",
    error: null,
    messageIds: [],
    compactions: [],
    created: null,
    done: null,
  };
}

function ensureTurn(state: ConversationState, turnId: string | null): ConversationState {
  if (turnId === null || turnIndex(state, turnId) >= 0) {
    return state;
  }
  return withTurns(state, [...state.turns, stubTurn(turnId)]);
}

function turnIndex(state: ConversationState, turnId: string | null): number {
  if (turnId !== null) {
    for (let index = state.turns.length - 1; index >= 0; index -= 1) {
      if (state.turns[index]?.id === turnId) {
        return index;
      }
    }
  }
  return -1;
}

function turnById(state: ConversationState, turnId: string | null): TurnView | undefined {
  const index = turnIndex(state, turnId);
  return index < 0 ? undefined : state.turns[index];
}

function replaceTurn(state: ConversationState, index: number, turn: TurnView): ConversationState {
  const turns = state.turns.slice();
  turns[index] = turn;
  return withTurns(state, turns);
}

// ---- where things are -------------------------------------------------------------------------------------
//
// Which turn holds a message, a tool response or an answer never changes once known, so an index of it is
// shared, append-only, by a state and every state folded from it (off the view, like the tracks). An id
// the index lacks is in none of these states; an id it has is looked up in its turn, and only if that
// state lacks it there (a state of another branch of folds) are all turns searched.

interface Index {
  readonly messages: Map<string, string>;
  readonly responses: Map<string, string>;
}

const INDEX: unique symbol = Symbol("trueforge.fold.index");

/** The index of the state being folded (set by `fold` for the helpers it calls). */
let current: Index = { messages: new Map(), responses: new Map() };

function indexOf(state: ConversationState): Index {
  const existing = (state as { [INDEX]?: Index })[INDEX];
  if (existing !== undefined) {
    return existing;
  }
  const index: Index = { messages: new Map(), responses: new Map() };
  for (const turn of state.turns) {
    for (const id of Object.keys(turn.messages)) {
      index.messages.set(id, turn.id);
    }
    for (const id of Object.keys(turn.toolResponses)) {
      index.responses.set(id, turn.id);
    }
  }
  if (Object.isExtensible(state)) {
    // Cached on the state (invisibly); a frozen state (e.g. from a store that freezes) is indexed anew.
    Object.defineProperty(state, INDEX, { value: index, enumerable: false });
  }
  return index;
}

function lookUp<Value>(
  state: ConversationState,
  known: Map<string, string>,
  id: string,
  inTurn: (turn: TurnView) => Value | undefined,
): Value | undefined {
  const turnId = known.get(id);
  if (turnId === undefined) {
    return undefined;
  }
  const turn = turnById(state, turnId);
  const found = turn === undefined ? undefined : inTurn(turn);
  if (found !== undefined) {
    return found;
  }
  for (let at = state.turns.length - 1; at >= 0; at -= 1) {
    const candidate = state.turns[at];
    const value = candidate === undefined ? undefined : inTurn(candidate);
    if (value !== undefined) {
      return value;
    }
  }
  return undefined;
}

function findMessage(state: ConversationState, messageId: string): MessageView | undefined {
  return lookUp(state, current.messages, messageId, (turn) => turn.messages[messageId]);
}

function findResponse(state: ConversationState, toolCallId: string): ToolResponseEvent | undefined {
  return lookUp(state, current.responses, toolCallId, (turn) => turn.toolResponses[toolCallId]);
}

/** The message with this id, whichever turn it belongs to. */
export function messageById(state: ConversationState, messageId: string): MessageView | undefined {
  return lookUp(state, indexOf(state).messages, messageId, (turn) => turn.messages[messageId]);
}

/** The response to a tool call, whichever turn it came in. */
export function toolResponseOf(state: ConversationState, toolCallId: string): ToolResponseEvent | undefined {
  return lookUp(state, indexOf(state).responses, toolCallId, (turn) => turn.toolResponses[toolCallId]);
}

/** The user's answer to a tool call that waited on one (from the input of a later turn). */
export function answerOf(
  state: ConversationState,
  toolCallId: string,
): UserToolApprovalEvent | UserToolResponseEvent | undefined {
  for (let index = state.turns.length - 1; index >= 0; index -= 1) {
    for (const item of state.turns[index]?.input ?? []) {
      if (item.type !== "user.message" && item.tool_call_id === toolCallId) {
        return item;
      }
    }
  }
  return undefined;
}

function isTerminal(turn: TurnView | undefined): boolean {
  return turn?.state !== undefined && turn.state !== null && turn.state.status !== "running";
}

function setThread(state: ConversationState, thread: ThreadView): ConversationState {
  return { ...state, threads: { ...state.threads, [thread.id]: thread } };
}

// ---- inputs --------------------------------------------------------------------------------------------

interface Classified {
  readonly event: TurnEvent;
  /** The stream's sequence number: only live frames have one. */
  readonly seq: number | null;
  /** The turn the input names (history items); otherwise the conversation's last turn. */
  readonly turnId: string | null;
  readonly live: boolean;
}

function normalise(event: TurnEvent): TurnEvent {
  if (event.type === UNKNOWN_EVENT || isKnownEventType(event.type)) {
    return event;
  }
  // A raw event of an unknown type, not yet wrapped by `toTurnEvent`.
  return toTurnEvent(event) ?? event;
}

function classify(state: ConversationState, input: FoldInput): Classified {
  if ("event" in input && typeof input.event === "object" && input.event !== null) {
    if ("seq" in input && typeof input.seq === "number") {
      return {
        event: normalise(input.event),
        seq: input.seq,
        turnId: lastTurn(state)?.id ?? null,
        live: true,
      };
    }
    if ("turn_id" in input && typeof input.turn_id === "string") {
      return { event: normalise(input.event), seq: null, turnId: input.turn_id, live: false };
    }
  }
  return {
    event: normalise(input as StoredEvent),
    seq: null,
    turnId: lastTurn(state)?.id ?? null,
    live: false,
  };
}

// ---- the reducer ---------------------------------------------------------------------------------------

/** Folds one input into the state. Returns `state` itself when the input adds nothing. */
export function fold(state: ConversationState, input: FoldInput): ConversationState {
  const index = indexOf(state);
  const next = dispatch(state, input, index);
  if (next !== state && !Object.hasOwn(next, INDEX)) {
    Object.defineProperty(next, INDEX, { value: index, enumerable: false });
  }
  return next;
}

function dispatch(state: ConversationState, input: FoldInput, index: Index): ConversationState {
  current = index;
  const { event, seq, turnId, live } = classify(state, input);
  switch (event.type) {
    case "turn.created":
      return turnCreated(state, event);
    case "turn.done":
      return turnDone(ensureTurn(state, turnId), event, turnId);
    case "model.message":
      return live
        ? placeholder(state, event, turnId)
        : storedMessage(ensureTurn(state, turnId), event, turnId);
    case "model.message.delta":
      return delta(state, event, seq, turnId);
    case "tool.response":
      return toolResponse(state, event, turnId);
    case "thread.created":
      return threadCreated(ensureTurn(state, turnId), event);
    case "thread.done":
      return threadDone(ensureTurn(state, turnId), event, turnId);
    case "tool.approval_required":
    case "tool.response_required":
    case "mcp.auth_required":
      return raise(ensureTurn(state, turnId), event, turnId);
    case "mcp.initialize":
      return mcpInitialize(ensureTurn(state, turnId), event);
    case "sandbox.created":
      return sandboxCreated(ensureTurn(state, turnId), event);
    case "context.compacted":
      return contextCompacted(state, event, turnId);
    case UNKNOWN_EVENT:
      return unknown(ensureTurn(state, turnId), event, turnId);
    default:
      return state;
  }
}

/** Folds `inputs` in order, from `state` (the empty conversation by default). */
export function foldAll(
  inputs: Iterable<FoldInput>,
  state: ConversationState = emptyConversation(),
): ConversationState {
  let next = state;
  for (const input of inputs) {
    next = fold(next, input);
  }
  return next;
}

// ---- turns ---------------------------------------------------------------------------------------------

function placeTurn(turns: readonly TurnView[], turn: TurnView): TurnView[] {
  const rest = turns.filter((candidate) => candidate.id !== turn.id);
  const successor = rest.findIndex((candidate) => candidate.previousTurnId === turn.id);
  if (successor >= 0) {
    rest.splice(successor, 0, turn);
    return rest;
  }
  const previous = turn.previousTurnId === null ? -1 : rest.findIndex((c) => c.id === turn.previousTurnId);
  if (previous >= 0) {
    rest.splice(previous + 1, 0, turn);
    return rest;
  }
  const at = turns.findIndex((candidate) => candidate.id === turn.id);
  if (at >= 0) {
    rest.splice(at, 0, turn);
    return rest;
  }
  rest.push(turn);
  return rest;
}

function turnCreated(state: ConversationState, event: TurnCreatedEvent): ConversationState {
  const existing = turnById(state, event.turn_id);
  if (existing !== undefined && existing.createdAt !== null) {
    return state;
  }
  const turn: TurnView = {
    ...(existing ?? stubTurn(event.turn_id)),
    previousTurnId: event.previous_turn_id,
    input: event.input ?? [],
    createdAt: event.created_at,
  };
  const created: TurnView = existing?.state ? turn : { ...turn, state: event.state, status: "running" };
  let next = withTurns(state, placeTurn(state.turns, created));
  if (lastTurn(next)?.id === created.id && next.pendingActions.length > 0) {
    // The conversation moved on: what it waited on is answered by this turn's input, or abandoned (the
    // server raises again whatever it still needs).
    next = { ...next, pendingActions: [] };
  }
  return next;
}

function statusOf(state: TurnDoneEvent["state"]): TurnStatus {
  switch (state.status) {
    case "done":
      return state.required_actions.length > 0 ? "requires_action" : "done";
    case "error":
      return "failed";
    case "cancelled":
      return "cancelled";
  }
}

function turnDone(state: ConversationState, event: TurnDoneEvent, turnId: string | null): ConversationState {
  const turn = turnById(state, turnId);
  if (turn === undefined || isTerminal(turn)) {
    return state;
  }
  const done: TurnView = {
    ...turn,
    state: event.state,
    status: statusOf(event.state),
    error: event.state.status === "error" ? event.state.message : null,
    metrics: event.state.metrics ?? null,
  };
  let next = withTurns(
    state,
    state.turns.map((candidate) => (candidate.id === done.id ? done : candidate)),
  );
  if (event.state.status === "done") {
    if (event.state.output) {
      next = storedMessage(next, event.state.output, done.id);
    }
    for (const action of event.state.required_actions) {
      next = raise(next, action, done.id);
    }
  }
  return discardUnfinished(next, done.id);
}

/** Drops the messages of `turnId` whose model call never finished: the server does not store them. */
function discardUnfinished(state: ConversationState, turnId: string): ConversationState {
  const index = turnIndex(state, turnId);
  const turn = state.turns[index];
  if (turn === undefined) {
    return state;
  }
  const dropped = new Set<string>();
  const kept: Record<string, MessageView> = {};
  for (const [id, view] of Object.entries(turn.messages)) {
    const track = trackOf(view);
    if (track !== undefined && !track.final && !finished(track.merged.message)) {
      dropped.add(id);
    } else {
      kept[id] = view;
    }
  }
  if (dropped.size === 0) {
    return state;
  }
  const threads: Record<string, ThreadView> = {};
  for (const [id, thread] of Object.entries(state.threads)) {
    threads[id] = thread.messageIds.some((messageId) => dropped.has(messageId))
      ? { ...thread, messageIds: thread.messageIds.filter((messageId) => !dropped.has(messageId)) }
      : thread;
  }
  return { ...replaceTurn(state, index, { ...turn, messages: kept }), threads };
}

// ---- messages ------------------------------------------------------------------------------------------

function putMessage(
  state: ConversationState,
  id: string,
  threadId: string,
  turnId: string | null,
  track: Track,
): ConversationState {
  const existing = findMessage(state, id);
  const owner = existing?.turnId ?? turnId ?? "";
  let next = ensureTurn(state, owner);
  const index = turnIndex(next, owner);
  const turn = next.turns[index] as TurnView;
  const view = messageView(id, owner, existing?.threadId ?? threadId, track);
  next = replaceTurn(next, index, { ...turn, messages: { ...turn.messages, [id]: view } });
  if (existing === undefined) {
    current.messages.set(id, owner);
    const thread = next.threads[view.threadId] ?? emptyThread(view.threadId);
    next = setThread(next, { ...thread, messageIds: [...thread.messageIds, id] });
  }
  return next;
}

/** Whether a streamed message not seen yet may still join the conversation (its turn has not ended). */
function mayStream(state: ConversationState, turnId: string | null): boolean {
  return !isTerminal(turnById(state, turnId));
}

function placeholder(
  state: ConversationState,
  event: ModelMessageEvent,
  turnId: string | null,
): ConversationState {
  const track = trackOf(findMessage(state, event.id));
  if (track === undefined) {
    if (findMessage(state, event.id) !== undefined || !mayStream(state, turnId)) {
      return state;
    }
    return putMessage(state, event.id, event.thread_id, turnId, {
      base: event,
      deltas: null,
      final: false,
      merged: mergeAll(event, []),
    });
  }
  if (track.final || (track.base !== null && sameJson(track.base, event))) {
    return state;
  }
  const merged = mergeAll(event, deltasInOrder(track.deltas));
  return putMessage(state, event.id, event.thread_id, turnId, {
    ...track,
    base: event,
    merged,
  });
}

function storedMessage(
  state: ConversationState,
  event: ModelMessageEvent,
  turnId: string | null,
): ConversationState {
  const existing = findMessage(state, event.id);
  const track = trackOf(existing);
  if (existing !== undefined && (track === undefined || track.final) && sameJson(existing.message, event)) {
    return state;
  }
  return putMessage(state, event.id, event.thread_id, turnId, {
    base: track?.base ?? null,
    deltas: null,
    final: true,
    merged: { message: event, toolIndexes: [] },
  });
}

function deltasInOrder(list: AppliedDelta | null): ModelMessageDeltaEvent[] {
  const deltas: ModelMessageDeltaEvent[] = [];
  for (let node = list; node !== null; node = node.next) {
    deltas.push(node.delta);
  }
  return deltas.reverse();
}

function delta(
  state: ConversationState,
  event: ModelMessageDeltaEvent,
  seq: number | null,
  turnId: string | null,
): ConversationState {
  const track = trackOf(findMessage(state, event.id));
  if (track === undefined) {
    if (findMessage(state, event.id) !== undefined || !mayStream(state, turnId)) {
      return state;
    }
    const merged = applyDelta(mergeAll(provisionalBase(event), []), event);
    return putMessage(state, event.id, event.thread_id, turnId, {
      base: null,
      deltas: { seq, delta: event, next: null },
      final: false,
      merged,
    });
  }
  if (track.final) {
    return state;
  }
  const newest = track.deltas;
  let deltas: AppliedDelta;
  let merged: Merged;
  if (seq === null || newest === null || newest.seq === null || newest.seq < seq) {
    deltas = { seq, delta: event, next: newest };
    merged = applyDelta(track.merged, event);
  } else {
    // A replay (a seq already applied) or a delta that overtook others: rebuild in seq order.
    const applied: { seq: number | null; delta: ModelMessageDeltaEvent }[] = [];
    for (let node: AppliedDelta | null = newest; node !== null; node = node.next) {
      if (node.seq === seq) {
        return state;
      }
      applied.push({ seq: node.seq, delta: node.delta });
    }
    applied.push({ seq, delta: event });
    applied.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
    let list: AppliedDelta | null = null;
    for (const item of applied) {
      list = { seq: item.seq, delta: item.delta, next: list };
    }
    deltas = list as AppliedDelta;
    const ordered = applied.map((item) => item.delta);
    const first = ordered[0] as ModelMessageDeltaEvent;
    merged = mergeAll(track.base ?? provisionalBase(first), ordered);
  }
  return putMessage(state, event.id, event.thread_id, turnId, {
    ...track,
    deltas,
    merged,
  });
}

// ---- tools, threads, required actions ------------------------------------------------------------------

function answeredCall(state: ConversationState, callId: string): boolean {
  return answerOf(state, callId) !== undefined || findResponse(state, callId) !== undefined;
}

function withoutAnswered(state: ConversationState): readonly ActionRequiredEvent[] {
  let changed = false;
  const pending: ActionRequiredEvent[] = [];
  for (const action of state.pendingActions) {
    if (action.type === "mcp.auth_required") {
      pending.push(action);
      continue;
    }
    const open = action.tool_calls.filter((call) => !answeredCall(state, call.id));
    if (open.length === action.tool_calls.length) {
      pending.push(action);
    } else {
      changed = true;
      if (open.length > 0) {
        pending.push({ ...action, tool_calls: open });
      }
    }
  }
  return changed ? pending : state.pendingActions;
}

function toolResponse(
  state: ConversationState,
  event: ToolResponseEvent,
  turnId: string | null,
): ConversationState {
  const existing = findResponse(state, event.tool_call_id);
  if (existing !== undefined && sameJson(existing, event)) {
    return state;
  }
  const owner = turnId ?? "";
  let next = ensureTurn(state, owner);
  const index = turnIndex(next, owner);
  const turn = next.turns[index] as TurnView;
  next = replaceTurn(next, index, {
    ...turn,
    toolResponses: { ...turn.toolResponses, [event.tool_call_id]: event },
  });
  current.responses.set(event.tool_call_id, owner);
  const pendingActions = withoutAnswered(next);
  return pendingActions === next.pendingActions ? next : { ...next, pendingActions };
}

function threadCreated(state: ConversationState, event: ThreadCreatedEvent): ConversationState {
  const thread = state.threads[event.thread_id] ?? emptyThread(event.thread_id);
  if (thread.created !== null && thread.created.id === event.id) {
    return state;
  }
  const next = setThread(state, {
    ...thread,
    parent: event.parent,
    title: thread.done?.title ?? event.title,
    agentInfo: event.agent_info,
    created: event,
  });
  return {
    ...next,
    subAgentThreads: { ...next.subAgentThreads, [event.parent.tool_call_id]: event.thread_id },
  };
}

function threadDone(
  state: ConversationState,
  event: ThreadDoneEvent,
  turnId: string | null,
): ConversationState {
  const thread = state.threads[event.thread_id] ?? emptyThread(event.thread_id);
  if (thread.done !== null && thread.done.id === event.id) {
    return state;
  }
  let next = setThread(state, {
    ...thread,
    parent: event.parent ?? thread.parent,
    title: event.title,
    status: event.state.status,
    error: event.state.status === "error" ? event.state.error : null,
    done: event,
  });
  if (event.parent !== undefined) {
    next = {
      ...next,
      subAgentThreads: { ...next.subAgentThreads, [event.parent.tool_call_id]: event.thread_id },
    };
  }
  const output = event.state.output;
  return output ? storedMessage(next, output, turnId) : next;
}

function raise(
  state: ConversationState,
  event: ToolApprovalRequiredEvent | ToolResponseRequiredEvent | McpAuthRequiredEvent,
  turnId: string | null,
): ConversationState {
  // Only the last turn can be waiting; an action of an earlier turn was answered or abandoned.
  if (
    turnId !== (lastTurn(state)?.id ?? null) ||
    state.pendingActions.some((action) => action.id === event.id)
  ) {
    return state;
  }
  if (event.type === "mcp.auth_required") {
    return { ...state, pendingActions: [...state.pendingActions, event] };
  }
  const open = event.tool_calls.filter((call) => !answeredCall(state, call.id));
  if (open.length === 0) {
    return state;
  }
  const action = open.length === event.tool_calls.length ? event : { ...event, tool_calls: open };
  return { ...state, pendingActions: [...state.pendingActions, action] };
}

// ---- the rest ------------------------------------------------------------------------------------------

function mcpInitialize(state: ConversationState, event: McpInitializeEvent): ConversationState {
  if (event.mcp_servers.every((server) => sameJson(state.mcpServers[server.id], server))) {
    return state;
  }
  const mcpServers = { ...state.mcpServers };
  for (const server of event.mcp_servers) {
    mcpServers[server.id] = server;
  }
  return { ...state, mcpServers };
}

/**
 * Records a compaction on its thread, after the thread's last message so far: the server emits it after the
 * messages it compacted and before the next answer, live and in the history alike.
 */
function contextCompacted(
  state: ConversationState,
  event: ContextCompactedEvent,
  turnId: string | null,
): ConversationState {
  const thread = state.threads[event.thread_id] ?? emptyThread(event.thread_id);
  if (thread.compactions.some((compaction) => compaction.event.id === event.id)) {
    return state;
  }
  const owner = turnId ?? "";
  const compaction = {
    turnId: owner,
    threadId: event.thread_id,
    afterMessageId: thread.messageIds.at(-1) ?? null,
    event,
  };
  return setThread(ensureTurn(state, owner), { ...thread, compactions: [...thread.compactions, compaction] });
}

function sandboxCreated(state: ConversationState, event: SandboxCreatedEvent): ConversationState {
  return state.sandbox !== null && sameJson(state.sandbox, event) ? state : { ...state, sandbox: event };
}

function unknown(state: ConversationState, event: UnknownEvent, turnId: string | null): ConversationState {
  const id = event.data.id;
  const seen = state.unknown.some((entry) =>
    typeof id === "string" ? entry.event.data.id === id : sameJson(entry.event, event),
  );
  return seen ? state : { ...state, unknown: [...state.unknown, { turnId, event }] };
}

// ---- reading the hidden parts --------------------------------------------------------------------------

/** The reasoning of a message (its `reasoning_content`, streamed or stored); `null` when there is none. */
export function reasoningOf(state: ConversationState, messageId: string): string | null {
  return messageById(state, messageId)?.message.reasoning_content ?? null;
}
