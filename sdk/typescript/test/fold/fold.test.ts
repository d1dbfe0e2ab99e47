// The fold's rules, one by one, on hand-made events.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  type ContextCompactedEvent,
  isKnownEventType,
  type SequencedEvent,
  type StoredEvent,
  type TurnEvent,
  toTurnEvent,
} from "../../src/events.js";
import {
  type ConversationState,
  compactionsOf,
  emptyConversation,
  type FoldInput,
  fold,
  foldAll,
  foldHistoryPages,
  foldTurnEvents,
  isFailed,
  isFinished,
  isPaused,
  messageById,
  pendingOf,
  reasoningOf,
  type StoredEventItem,
  subAgentsOf,
  threadMessages,
  threadTimeline,
  toolCallsOf,
  toolResponseOf,
  turnMessages,
} from "../../src/fold/index.js";

const T = "2026-01-01T00:00:00Z";
const USAGE = {
  input_tokens: 10,
  output_tokens: 2,
  input_tokens_breakdown: { harness: 1, skills: 0, instructions: 0, tool_definitions: 0, messages: 9 },
};
const INFO = { type: "truefoundry-system", name: "create_sub_agent" } as const;

function turnCreated(turnId: string, input: unknown[] = [], previous: string | null = null): TurnEvent {
  return {
    type: "turn.created",
    id: `created-${turnId}`,
    created_at: T,
    thread_id: null,
    turn_id: turnId,
    previous_turn_id: previous,
    input,
    state: { status: "running" },
  } as TurnEvent;
}

function turnDone(turnId: string, state: Record<string, unknown>): TurnEvent {
  return {
    type: "turn.done",
    id: `done-${turnId}`,
    created_at: T,
    thread_id: null,
    state: { completed_at: T, ...state },
  } as TurnEvent;
}

function placeholder(id: string, thread = "main"): TurnEvent {
  return { type: "model.message", id, thread_id: thread, created_at: T };
}

function delta(id: string, fields: Record<string, unknown>, thread = "main"): TurnEvent {
  return { type: "model.message.delta", id, thread_id: thread, ...fields } as TurnEvent;
}

/** Numbers the events as one live stream from seq 1. */
function live(...events: TurnEvent[]): SequencedEvent[] {
  return events.map((event, index) => ({ seq: index + 1, event }));
}

const USER = [{ type: "user.message", content: "hi" }];

function msg(state: ConversationState, id: string) {
  return messageById(state, id);
}

function streamed(...events: TurnEvent[]): ConversationState {
  return foldAll(live(turnCreated("t1", USER), ...events));
}

describe("delta merge", () => {
  test("content is appended to a string", () => {
    const state = streamed(placeholder("m"), delta("m", { content: "Hel" }), delta("m", { content: "lo" }));
    assert.equal(msg(state, "m")?.message.content, "Hello");
    assert.deepEqual(state.threads.main?.messageIds, ["m"]);
    assert.equal(msg(state, "m")?.turnId, "t1");
  });

  test("content is appended to the last text part of an array, or as a new text part", () => {
    const base = { ...placeholder("m"), content: [{ type: "text", text: "a" }] } as TurnEvent;
    let state = streamed(base, delta("m", { content: "b" }));
    assert.deepEqual(msg(state, "m")?.message.content, [{ type: "text", text: "ab" }]);
    const refusalLast = {
      ...placeholder("r"),
      content: [{ type: "refusal", refusal: "no" }],
    } as TurnEvent;
    state = streamed(refusalLast, delta("r", { content: "c" }));
    assert.deepEqual(msg(state, "r")?.message.content, [
      { type: "refusal", refusal: "no" },
      { type: "text", text: "c" },
    ]);
  });

  test("reasoning and refusal are appended; the reasoning stays once the call finished", () => {
    let state = streamed(
      placeholder("m"),
      delta("m", { reasoning_content: "Thin" }),
      delta("m", { reasoning_content: "king" }),
      delta("m", { refusal: "I can" }),
      delta("m", { refusal: "not." }),
    );
    assert.equal(msg(state, "m")?.message.reasoning_content, "Thinking");
    assert.equal(msg(state, "m")?.message.refusal, "I cannot.");
    state = fold(state, { seq: 10, event: delta("m", { finish_reason: "stop" }) });
    assert.equal(msg(state, "m")?.message.reasoning_content, "Thinking");
    assert.equal(reasoningOf(state, "m"), "Thinking");
    assert.equal(reasoningOf(state, "nope"), null);
  });

  test("tool calls merge by index: created on first sight, fields set, arguments appended", () => {
    const mcp = { type: "mcp", server_id: "s", server_name: "stub", name: "lookup" };
    const state = streamed(
      placeholder("m"),
      delta("m", {
        tool_calls: [{ index: 5, id: "c5", type: "function", function: { name: "lookup", arguments: "" } }],
      }),
      delta("m", {
        tool_calls: [
          { index: 5, function: { arguments: '{"a"' } },
          { index: 2, id: "c2" },
        ],
      }),
      delta("m", {
        tool_calls: [
          { index: 5, function: { arguments: ":1}" }, tool_info: mcp, provider_specific_fields: { x: 1 } },
        ],
      }),
      delta("m", {
        tool_calls: [
          {
            index: 2,
            type: "function",
            function: { name: "create_sub_agent", arguments: "{}" },
            tool_info: INFO,
          },
          { index: 5, provider_specific_fields: { y: 2 } },
        ],
      }),
    );
    assert.deepEqual(msg(state, "m")?.message.tool_calls, [
      {
        id: "c5",
        type: "function",
        function: { name: "lookup", arguments: '{"a":1}' },
        tool_info: mcp,
        provider_specific_fields: { x: 1, y: 2 },
      },
      {
        id: "c2",
        type: "function",
        function: { name: "create_sub_agent", arguments: "{}" },
        tool_info: INFO,
      },
    ]);
  });

  test("finish_reason and usage are replaced; a null says nothing new", () => {
    const state = streamed(
      placeholder("m"),
      delta("m", { finish_reason: "length", usage: { ...USAGE, output_tokens: 1 } }),
      delta("m", { finish_reason: "stop", usage: USAGE }),
      delta("m", { finish_reason: null }),
    );
    assert.equal(msg(state, "m")?.message.finish_reason, "stop");
    assert.deepEqual(msg(state, "m")?.message.usage, USAGE);
  });

  test("the stored message replaces the merged one; later placeholders and deltas are ignored", () => {
    const stored = { ...placeholder("m"), content: "Final", finish_reason: "stop" } as StoredEvent;
    let state = streamed(placeholder("m"), delta("m", { content: "Fin" }));
    state = fold(state, stored);
    assert.equal(msg(state, "m")?.message.content, "Final");
    const after = foldAll(
      [
        { seq: 3, event: placeholder("m") },
        { seq: 9, event: delta("m", { content: "!" }) },
      ],
      state,
    );
    assert.equal(after, state);
  });

  test("a delta before its base is kept and shown; the base rebuilds the message", () => {
    let state = foldAll([
      { seq: 1, event: turnCreated("t1", USER) },
      { seq: 3, event: delta("m", { content: "lo", created_at: "2026-01-01T00:00:01Z" }) },
    ]);
    assert.equal(msg(state, "m")?.message.content, "lo");
    assert.equal(msg(state, "m")?.message.created_at, "2026-01-01T00:00:01Z");
    state = fold(state, { seq: 2, event: { ...placeholder("m"), name: "agent" } as TurnEvent });
    assert.equal(msg(state, "m")?.message.content, "lo");
    assert.equal(msg(state, "m")?.message.name, "agent");
    assert.equal(msg(state, "m")?.message.created_at, T);
  });

  test("an out-of-order delta takes its place by seq; a replayed one changes nothing", () => {
    const start = foldAll(live(turnCreated("t1", USER), placeholder("m")));
    let state = foldAll(
      [
        { seq: 3, event: delta("m", { content: "a" }) },
        { seq: 5, event: delta("m", { content: "c" }) },
        { seq: 4, event: delta("m", { content: "b" }) },
      ],
      start,
    );
    assert.equal(msg(state, "m")?.message.content, "abc");
    const replayed = foldAll(
      [
        { seq: 4, event: delta("m", { content: "b" }) },
        { seq: 5, event: delta("m", { content: "c" }) },
      ],
      state,
    );
    assert.equal(replayed, state);
    state = fold(state, { seq: 2, event: placeholder("m") });
    assert.equal(msg(state, "m")?.message.content, "abc");
  });

  test("a frozen state folds like any other", () => {
    const frozen = Object.freeze(emptyConversation());
    const state = foldAll(
      live(turnCreated("t1", USER), placeholder("m"), delta("m", { content: "a" })),
      frozen,
    );
    assert.equal(msg(state, "m")?.message.content, "a");
    assert.equal(messageById(Object.freeze({ ...state }), "m")?.message.content, "a");
  });

  test("folding never changes the state it is given", () => {
    const before = streamed(
      placeholder("m"),
      delta("m", { content: "a", tool_calls: [{ index: 0, id: "c" }] }),
    );
    const snapshot = JSON.stringify(before);
    fold(before, {
      seq: 9,
      event: delta("m", { content: "b", tool_calls: [{ index: 0, function: { arguments: "x" } }] }),
    });
    fold(before, turnDone("t1", { status: "cancelled", reason: "client-cancelled" }) as StoredEvent);
    assert.equal(JSON.stringify(before), snapshot);
  });
});

describe("threads", () => {
  test("a sub-agent thread nests under its create_sub_agent call and ends with thread.done", () => {
    const call = {
      index: 0,
      id: "call",
      type: "function",
      function: { name: "create_sub_agent", arguments: "{}" },
    };
    const created = {
      type: "thread.created",
      id: "tc",
      created_at: T,
      thread_id: "sub",
      title: "helper",
      parent: { thread_id: "main", tool_call_id: "call" },
      agent_info: { type: "dynamic", name: "helper", input: "go" },
    } as TurnEvent;
    const output = { ...placeholder("s1", "sub"), content: "result", finish_reason: "stop" };
    let state = streamed(
      placeholder("m"),
      delta("m", { tool_calls: [{ ...call, tool_info: INFO }], finish_reason: "tool_calls" }),
      created,
      placeholder("s1", "sub"),
      delta("s1", { content: "res" }, "sub"),
    );
    assert.deepEqual(
      subAgentsOf(state).map((thread) => thread.id),
      ["sub"],
    );
    assert.equal(toolCallsOf(state, "m")[0]?.subAgentThread?.title, "helper");
    assert.equal(state.threads.sub?.status, "running");
    assert.deepEqual(
      threadMessages(state, "sub").map((view) => view.message.content),
      ["res"],
    );
    state = fold(state, {
      seq: 20,
      event: {
        type: "thread.done",
        id: "td",
        created_at: T,
        thread_id: "sub",
        title: "helper",
        parent: { thread_id: "main", tool_call_id: "call" },
        state: { status: "done", output },
      } as TurnEvent,
    });
    assert.equal(state.threads.sub?.status, "done");
    assert.equal(msg(state, "s1")?.message.content, "result");
    const failed = fold(state, {
      type: "thread.done",
      id: "td2",
      created_at: T,
      thread_id: "sub2",
      title: "other",
      state: { status: "error", error: "boom" },
    } as StoredEvent);
    assert.equal(failed.threads.sub2?.status, "error");
    assert.equal(failed.threads.sub2?.error, "boom");
  });
});

describe("required actions", () => {
  const toolCall = (id: string) => ({
    index: 0,
    id,
    type: "function",
    function: { name: "toggle", arguments: "{}" },
    tool_info: { type: "mcp", server_id: "s", server_name: "stub", name: "toggle" },
  });

  function pausedOn(kind: "tool.approval_required" | "tool.response_required", calls: string[]) {
    const action = {
      type: kind,
      id: `${kind}-1`,
      created_at: T,
      thread_id: "main",
      tool_calls: calls.map((id) => ({ id, source_event_id: "m" })),
    } as TurnEvent;
    return streamed(
      placeholder("m"),
      delta("m", {
        tool_calls: calls.map((id, index) => ({ ...toolCall(id), index })),
        finish_reason: "tool_calls",
      }),
      action,
      turnDone("t1", { status: "done", output: null, required_actions: [action] }),
    );
  }

  test("an approval pauses the turn and is cleared by the next turn's answer", () => {
    const state = pausedOn("tool.approval_required", ["c1"]);
    assert.equal(state.status, "requires_action");
    assert.ok(isPaused(state) && isFinished(state));
    assert.equal(pendingOf(state, "tool.approval_required").length, 1);
    assert.equal(toolCallsOf(state, "m")[0]?.waitingFor, "approval");
    const answer = {
      type: "user.tool_approval",
      thread_id: "main",
      tool_call_id: "c1",
      approval: { status: "allow" },
    };
    const next = fold(state, { seq: 1, event: turnCreated("t2", [answer], "t1") });
    assert.deepEqual(next.pendingActions, []);
    assert.equal(next.status, "running");
    assert.deepEqual(toolCallsOf(next, "m")[0]?.answer, answer);
    assert.equal(toolCallsOf(next, "m")[0]?.waitingFor, null);
  });

  test("a question is cleared call by call: by a tool response, then by the answer", () => {
    const state = pausedOn("tool.response_required", ["q1", "q2"]);
    assert.equal(toolCallsOf(state, "m")[1]?.waitingFor, "response");
    const answered = fold(state, {
      type: "tool.response",
      id: "r1",
      created_at: T,
      thread_id: "main",
      tool_call_id: "q1",
      content: "a",
    } as StoredEvent);
    const [left] = pendingOf(answered, "tool.response_required");
    assert.deepEqual(left?.tool_calls, [{ id: "q2", source_event_id: "m" }]);
    assert.equal(left?.id, "tool.response_required-1");
    const answer = { type: "user.tool_response", thread_id: "main", tool_call_id: "q2", content: "b" };
    assert.deepEqual(fold(answered, { seq: 1, event: turnCreated("t2", [answer], "t1") }).pendingActions, []);
  });

  test("an MCP authorization is cleared by the empty continuation turn", () => {
    const auth = {
      type: "mcp.auth_required",
      id: "auth",
      created_at: T,
      thread_id: null,
      mcp_servers: [{ id: "s", name: "secure", auth_url: "https://example.test/auth" }],
    } as TurnEvent;
    const state = streamed(auth, turnDone("t1", { status: "done", output: null, required_actions: [auth] }));
    assert.equal(state.status, "requires_action");
    assert.deepEqual(state.pendingActions, [auth]);
    const resumed = fold(state, { seq: 1, event: turnCreated("t2", [], "t1") });
    assert.deepEqual(resumed.pendingActions, []);
    assert.deepEqual(resumed.turns[1]?.input, []);
  });

  test("an action of an earlier turn does not become pending again", () => {
    const state = pausedOn("tool.approval_required", ["c1"]);
    const next = fold(state, { seq: 1, event: turnCreated("t2", USER, "t1") });
    const again = fold(next, { turn_id: "t1", event: next.turns[0]?.state as never });
    assert.deepEqual(again.pendingActions, []);
  });
});

describe("turn status", () => {
  test("done, with metrics and the output", () => {
    const output = { ...placeholder("m"), content: "Hi", finish_reason: "stop" };
    const metrics = { total_tokens: 12 };
    const state = streamed(
      placeholder("m"),
      delta("m", { content: "H" }),
      turnDone("t1", { status: "done", output, required_actions: [], metrics }),
    );
    assert.equal(state.status, "done");
    assert.deepEqual(state.turns[0]?.metrics, metrics);
    assert.equal(msg(state, "m")?.message.content, "Hi");
    assert.ok(isFinished(state) && !isPaused(state) && !isFailed(state));
  });

  test("failed, with its error; the unfinished model call is discarded", () => {
    const state = streamed(
      placeholder("m"),
      delta("m", { content: "par" }),
      turnDone("t1", { status: "error", message: "boom" }),
    );
    assert.equal(state.status, "failed");
    assert.ok(isFailed(state));
    assert.equal(state.turns[0]?.error, "boom");
    assert.deepEqual(state.turns[0]?.messages, {});
    assert.deepEqual(state.threads.main?.messageIds, []);
    // A replay of the discarded call does not bring it back.
    assert.equal(
      foldAll(live(turnCreated("t1", USER), placeholder("m"), delta("m", { content: "par" })), state),
      state,
    );
  });

  test("cancelled, with its reason; a finished call stays", () => {
    const state = streamed(
      placeholder("a"),
      delta("a", { content: "x", finish_reason: "tool_calls" }),
      placeholder("b"),
      turnDone("t1", { status: "cancelled", reason: "client-cancelled" }),
    );
    assert.equal(state.status, "cancelled");
    assert.deepEqual(Object.keys(state.turns[0]?.messages ?? {}), ["a"]);
    assert.equal(state.turns[0]?.state?.status, "cancelled");
  });

  test("running until turn.done; idle before any turn", () => {
    assert.equal(emptyConversation().status, "idle");
    assert.equal(streamed(placeholder("m")).status, "running");
    assert.ok(!isFinished(streamed()));
  });
});

describe("other events", () => {
  test("an unknown event is kept once, with its turn", () => {
    const custom = { type: "custom.progress", id: "u1", created_at: T, percent: 50 } as unknown as TurnEvent;
    const state = foldAll([...live(turnCreated("t1", USER), custom), { seq: 2, event: custom }]);
    assert.equal(state.unknown.length, 1);
    assert.equal(state.unknown[0]?.turnId, "t1");
    assert.equal(state.unknown[0]?.event.receivedType, "custom.progress");
  });

  test("sandbox and MCP servers", () => {
    const state = streamed(
      { type: "sandbox.created", id: "sb", created_at: T, thread_id: null, sandbox_id: "v1:local:1" },
      {
        type: "mcp.initialize",
        id: "mi",
        created_at: T,
        thread_id: "main",
        mcp_servers: [{ id: "s", name: "stub" }],
      },
    );
    assert.equal(state.sandbox?.sandbox_id, "v1:local:1");
    assert.deepEqual(state.mcpServers, { s: { id: "s", name: "stub" } });
  });
});

describe("compactions", () => {
  const compacted = (id: string, thread = "main"): ContextCompactedEvent => ({
    type: "context.compacted",
    id,
    created_at: T,
    thread_id: thread,
    method: "summary",
    summary: `summary ${id}`,
    replaced_messages: 3,
    tokens_before: 9000,
    tokens_after: 120,
  });
  const answer = (id: string, content: string, thread = "main") =>
    ({ ...placeholder(id, thread), content, finish_reason: "stop", usage: USAGE }) as TurnEvent;
  const response = (callId: string, thread = "main") =>
    ({
      type: "tool.response",
      id: `r-${callId}`,
      created_at: T,
      thread_id: thread,
      tool_call_id: callId,
      content: "x",
    }) as TurnEvent;
  const call = (id: string, callId: string, thread = "main") =>
    ({
      ...placeholder(id, thread),
      tool_calls: [
        { id: callId, type: "function", function: { name: "lookup", arguments: "{}" }, tool_info: INFO },
      ],
      finish_reason: "tool_calls",
      usage: USAGE,
    }) as TurnEvent;

  /** One turn as the server stores it: a call, its result, a compaction, the answer from the summary. */
  const stored: TurnEvent[] = [
    turnCreated("t1", USER),
    call("m1", "c1"),
    response("c1"),
    compacted("k1"),
    answer("m2", "From the summary."),
    turnDone("t1", { status: "done", output: answer("m2", "From the summary."), required_actions: [] }),
  ];

  /** The same turn as it streams: placeholders and deltas instead of the complete messages. */
  function streamedTurn(): SequencedEvent[] {
    return live(
      turnCreated("t1", USER),
      placeholder("m1"),
      delta("m1", {
        tool_calls: [
          {
            index: 0,
            id: "c1",
            type: "function",
            function: { name: "lookup", arguments: "{}" },
            tool_info: INFO,
          },
        ],
      }),
      delta("m1", { finish_reason: "tool_calls", usage: USAGE }),
      response("c1"),
      compacted("k1"),
      placeholder("m2"),
      delta("m2", { content: "From the " }),
      delta("m2", { content: "summary.", finish_reason: "stop", usage: USAGE }),
      turnDone("t1", { status: "done", output: answer("m2", "From the summary."), required_actions: [] }),
    );
  }

  test("is a known event type, typed as itself", () => {
    assert.ok(isKnownEventType("context.compacted"));
    assert.equal(toTurnEvent(compacted("k"))?.type, "context.compacted");
  });

  test("is kept on its thread after the message before it, once, and placed in the timeline", () => {
    const state = foldAll(streamedTurn());
    assert.deepEqual(compactionsOf(state), [
      { turnId: "t1", threadId: "main", afterMessageId: "m1", event: compacted("k1") },
    ]);
    assert.deepEqual(
      threadTimeline(state).map((entry) =>
        entry.kind === "message" ? entry.message.id : entry.compaction.event.id,
      ),
      ["m1", "k1", "m2"],
    );
    assert.equal(fold(state, { seq: 6, event: compacted("k1") }), state, "a replay changes nothing");
    assert.equal(fold(state, compacted("k1") as StoredEvent), state, "nor the stored copy");
  });

  test("live and stored fold to the same view, whatever replays a reconnect adds", () => {
    const expected = foldTurnEvents("t1", stored as StoredEvent[]);
    const frames = streamedTurn();
    assert.deepEqual(foldAll(frames), expected);
    fc.assert(
      fc.property(fc.nat(frames.length), fc.nat(frames.length), (a, b) => {
        const [from, seen] = [Math.min(a, b), Math.max(a, b)];
        assert.deepEqual(foldAll([...frames.slice(0, seen), ...frames.slice(from)]), expected);
      }),
      { numRuns: 100 },
    );
  });

  test("a sub-agent's compaction stays on its thread; a thread's first one has no message before it", () => {
    const state = foldAll(
      live(
        turnCreated("t1", USER),
        compacted("k0"),
        placeholder("s1", "sub"),
        delta("s1", { content: "working", finish_reason: "stop" }, "sub"),
        compacted("k2", "sub"),
      ),
    );
    assert.deepEqual(
      compactionsOf(state).map((compaction) => [compaction.event.id, compaction.afterMessageId]),
      [["k0", null]],
    );
    assert.deepEqual(
      compactionsOf(state, "sub").map((compaction) => [compaction.event.id, compaction.afterMessageId]),
      [["k2", "s1"]],
    );
    assert.deepEqual(
      threadTimeline(state).map((entry) => entry.kind),
      ["compaction"],
    );
    assert.deepEqual(
      threadTimeline(state, "sub").map((entry) => entry.kind),
      ["message", "compaction"],
    );
    assert.deepEqual(compactionsOf(state, "nowhere"), []);
    assert.deepEqual(threadTimeline(state, "nowhere"), []);
  });
});

describe("history", () => {
  const items = (turnId: string, events: TurnEvent[]): StoredEventItem[] =>
    events.map((event) => ({ turn_id: turnId, event: event as StoredEvent }));
  const first = items("t1", [
    turnCreated("t1", USER),
    { ...placeholder("a"), content: "one", finish_reason: "stop" } as TurnEvent,
    turnDone("t1", { status: "done", output: null, required_actions: [] }),
  ]);
  const second = items("t2", [
    turnCreated("t2", USER, "t1"),
    { ...placeholder("b"), content: "two", finish_reason: "stop" } as TurnEvent,
    turnDone("t2", { status: "done", output: null, required_actions: [] }),
  ]);
  const newestFirst = [...first, ...second].reverse();

  test("pages newest first fold oldest first", () => {
    const pages = [newestFirst.slice(0, 4), newestFirst.slice(4)];
    const state = foldHistoryPages(pages);
    assert.deepEqual(
      state.turns.map((turn) => turn.id),
      ["t1", "t2"],
    );
    assert.deepEqual(
      threadMessages(state).map((view) => view.message.content),
      ["one", "two"],
    );
    assert.deepEqual(
      turnMessages(state, "t2").map((view) => view.id),
      ["b"],
    );
    assert.deepEqual(state, foldAll([...first, ...second]));
  });

  test("a turn cut by a page boundary is completed, and an older turn goes before the turn continuing it", () => {
    const state = foldHistoryPages([newestFirst.slice(0, 4)]);
    assert.deepEqual(
      state.turns.map((turn) => [turn.id, turn.createdAt]),
      [
        ["t1", null],
        ["t2", T],
      ],
    );
    const completed = foldAll(first.slice(0, 1), state);
    assert.deepEqual(
      completed.turns.map((turn) => [turn.id, turn.createdAt, turn.status]),
      [
        ["t1", T, "done"],
        ["t2", T, "done"],
      ],
    );
    const older = foldAll([...second, ...first]);
    assert.deepEqual(
      older.turns.map((turn) => turn.id),
      ["t1", "t2"],
    );
  });

  test("the events of one turn, ascending or descending", () => {
    const events = first.map((item) => item.event);
    const asc = foldTurnEvents("t1", events);
    assert.deepEqual(asc, foldTurnEvents("t1", [...events].reverse(), "desc"));
    assert.equal(asc.status, "done");
  });

  test("a stored event alone belongs to the last turn; folding it twice changes nothing", () => {
    const state = foldAll(first as FoldInput[]);
    const response = {
      type: "tool.response",
      id: "r",
      created_at: T,
      thread_id: "main",
      tool_call_id: "c",
      content: "x",
    } as StoredEvent;
    const once = fold(state, response);
    assert.equal(fold(once, response), once);
    assert.equal(toolResponseOf(once, "c")?.content, "x");
    assert.equal(once.turns[0]?.toolResponses.c?.id, "r");
  });
});
