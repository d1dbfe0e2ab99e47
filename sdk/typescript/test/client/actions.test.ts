// The batch that answers a paused turn, on its own: what it accepts, what it refuses, the input it builds.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ActionBatch,
  type ActionRequiredEvent,
  TrueForgeActionError,
  TrueForgeError,
} from "../../src/index.js";

const at = "2026-01-01T00:00:00Z";
const actions: ActionRequiredEvent[] = [
  {
    type: "tool.approval_required",
    id: "e1",
    created_at: at,
    thread_id: "main",
    tool_calls: [
      { id: "c1", source_event_id: "m1" },
      { id: "c2", source_event_id: "m1" },
    ],
  },
  {
    type: "tool.response_required",
    id: "e2",
    created_at: at,
    thread_id: "sub-1",
    tool_calls: [{ id: "q1", source_event_id: "m2" }],
  },
  {
    type: "mcp.auth_required",
    id: "e3",
    created_at: at,
    thread_id: null,
    mcp_servers: [{ id: "s1", name: "notion", auth_url: "https://as.example/a" }],
  },
];

function code(expected: string) {
  return (error: unknown) =>
    error instanceof TrueForgeActionError && error instanceof TrueForgeError && error.code === expected;
}

describe("ActionBatch", () => {
  test("lists the calls in order with their kind and thread, and the MCP servers to authorize", () => {
    const batch = ActionBatch.from(actions, "t1");
    assert.deepEqual(
      batch.calls.map((call) => [call.kind, call.toolCallId, call.threadId, call.sourceEventId]),
      [
        ["approval", "c1", "main", "m1"],
        ["approval", "c2", "main", "m1"],
        ["response", "q1", "sub-1", "m2"],
      ],
    );
    assert.deepEqual(batch.mcpAuthorizations, [
      { id: "s1", name: "notion", auth_url: "https://as.example/a" },
    ]);
    assert.equal(batch.turnId, "t1");
    assert.equal(batch.empty, false);
    assert.equal(batch.complete, false);
  });

  test("builds one input item per call once every call is decided; a later decision replaces an earlier one", () => {
    const batch = ActionBatch.from(actions);
    batch.approve("c1", { scope: "agent" }).deny("c2");
    assert.throws(() => batch.toInput(), code("incomplete"));
    assert.deepEqual(
      batch.pending.map((call) => call.toolCallId),
      ["q1"],
    );
    batch.answer("q1", "blue").deny("c1", "changed my mind");
    assert.equal(batch.complete, true);
    assert.deepEqual(batch.decision("c1"), {
      kind: "approval",
      approval: { status: "deny", reason: "changed my mind" },
    });
    assert.deepEqual(batch.toInput(), [
      {
        type: "user.tool_approval",
        thread_id: "main",
        tool_call_id: "c1",
        approval: { status: "deny", reason: "changed my mind" },
      },
      { type: "user.tool_approval", thread_id: "main", tool_call_id: "c2", approval: { status: "deny" } },
      { type: "user.tool_response", thread_id: "sub-1", tool_call_id: "q1", content: "blue" },
    ]);
  });

  test("approve without a scope sends none (the server's default, once); approveAll leaves questions alone", () => {
    const batch = ActionBatch.from(actions).approveAll();
    assert.deepEqual(
      batch.pending.map((call) => call.toolCallId),
      ["q1"],
    );
    assert.deepEqual(batch.decision("c2"), { kind: "approval", approval: { status: "allow" } });
  });

  test("refuses unknown calls and answers of the wrong kind, naming the call", () => {
    const batch = ActionBatch.from(actions);
    assert.throws(() => batch.approve("nope"), code("unknown_call"));
    assert.throws(() => batch.deny("q1"), code("wrong_kind"));
    assert.throws(() => batch.answer("c1", "x"), code("wrong_kind"));
    try {
      batch.answer("c1", "x");
    } catch (error) {
      assert.ok(error instanceof TrueForgeActionError);
      assert.deepEqual(error.toolCallIds, ["c1"]);
      assert.match(error.message, /c1 waits for an approval: approve or deny it/);
    }
  });

  test("fromTurn reads a done turn's actions; a running or failed turn waits on nothing", () => {
    const turn = {
      id: "t9",
      state: { status: "done", required_actions: actions, output: null, completed_at: at },
    };
    assert.equal(ActionBatch.fromTurn(turn).calls.length, 3);
    assert.equal(ActionBatch.fromTurn(turn).turnId, "t9");
    const running = ActionBatch.fromTurn({ id: "t", state: { status: "running" } });
    assert.equal(running.empty, true);
    assert.equal(running.complete, true);
    assert.deepEqual(running.toInput(), []);
  });
});
