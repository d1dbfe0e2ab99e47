// The exec result parser and the pairing of exec calls with their results, on hand-made text and events
// (on the real server's events in test/client/sandbox.test.ts).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  type ExecResult,
  execCallsOf,
  type FoldInput,
  parseExecResult,
  type StoredEvent,
} from "../../src/index.js";

const T = "2026-01-01T00:00:00Z";
const SAVED = "/workspace/tool-results/exec_call_fake_1_0.txt";

/** The text the server gives the model for a result too large to show (see the agent's large_response.rs). */
function preview(full: string, saved: boolean): string {
  const shortened =
    `[This output is too large to show in full: about 30000 tokens (${full.length} characters). Only its ` +
    "first 1500 and last 500 characters are shown below; the complete output is kept.]\n\n" +
    `${full.slice(0, 1500)}\n[… ${full.length - 2000} characters omitted …]\n${full.slice(-500)}\n\n` +
    "To work with the complete output:\n- read it in parts with read_history.";
  return saved
    ? `[The complete output is saved in the sandbox at ${SAVED} (${full.length} bytes). Read parts of it with exec ` +
        `(grep, sed -n, head -c, jq) or process it with a script instead of printing it whole.]\n${shortened}`
    : shortened;
}

describe("parseExecResult", () => {
  test("the two JSON shapes of the exec tool", () => {
    const table: [string, ExecResult][] = [
      [
        '{"success":true,"response":{"exitCode":0,"result":"42\\n"}}',
        { kind: "exited", exitCode: 0, output: "42\n" },
      ],
      ['{"response":{"exitCode":3,"result":""},"success":true}', { kind: "exited", exitCode: 3, output: "" }],
      [
        '{"success":true,"response":{"exitCode":-1,"result":"x"}}',
        { kind: "exited", exitCode: -1, output: "x" },
      ],
      [
        '{"success":false,"error":"The command ran longer than 120 s and was stopped."}',
        { kind: "error", error: "The command ran longer than 120 s and was stopped." },
      ],
    ];
    for (const [text, expected] of table) {
      assert.deepEqual(parseExecResult(text), expected, text);
    }
  });

  test("anything else is unparsed, as it arrived, and never throws", () => {
    for (const text of [
      "",
      "plain text",
      "null",
      "[1,2]",
      '{"success":true}',
      '{"success":true,"response":{"exitCode":"0","result":"x"}}',
      '{"success":true,"response":{"exitCode":1.5,"result":"x"}}',
      '{"success":true,"response":{"exitCode":0}}',
      '{"success":false}',
      '{"success":"false","error":"x"}',
      '{"success":true,"response":{"exitCode":0,"result":"x"}',
    ]) {
      assert.deepEqual(parseExecResult(text), { kind: "unparsed", text }, text);
    }
    fc.assert(
      fc.property(fc.string(), (text) => {
        const result = parseExecResult(text);
        assert.ok(["exited", "error", "preview", "unparsed"].includes(result.kind));
      }),
    );
  });

  test("a large result saved in the sandbox: the path, its size and the exit code from the preview", () => {
    const full = JSON.stringify({ response: { exitCode: 0, result: "row,".repeat(3000) }, success: true });
    const text = preview(full, true);
    assert.deepEqual(parseExecResult(text), {
      kind: "preview",
      savedPath: SAVED,
      savedBytes: full.length,
      exitCode: 0,
      text,
    });
    // The other key order, and a non-zero code.
    const failed = JSON.stringify({ success: true, response: { exitCode: 2, result: "e".repeat(3000) } });
    assert.equal((parseExecResult(preview(failed, true)) as { exitCode?: number }).exitCode, 2);
  });

  test("a shortened result that was not saved: a preview without a path", () => {
    const full = JSON.stringify({ response: { exitCode: 7, result: "x".repeat(3000) }, success: true });
    const text = preview(full, false);
    assert.deepEqual(parseExecResult(text), {
      kind: "preview",
      savedPath: undefined,
      savedBytes: undefined,
      exitCode: 7,
      text,
    });
  });

  test("output that only mentions an exit code does not pass for one", () => {
    // The output's own text is inside a JSON string: its quotes are escaped, so it cannot look like the start.
    const full = JSON.stringify({
      response: { exitCode: 0, result: `${"a".repeat(2000)}\n{"response":{"exitCode":9,` },
      success: true,
    }).replace('"exitCode":0', '"exitCode":"?"');
    const result = parseExecResult(preview(full, true));
    assert.equal(result.kind, "preview");
    assert.equal((result as { exitCode?: number }).exitCode, undefined);
  });

  test("a saved path with a space, and a header without the size", () => {
    const spaced = parseExecResult(
      "[The complete output is saved in the sandbox at /workspace/tool results/a.txt (12 bytes). Read it.]\n…",
    );
    assert.ok(spaced.kind === "preview");
    assert.deepEqual([spaced.savedPath, spaced.savedBytes], ["/workspace/tool results/a.txt", 12]);
    const bare = parseExecResult("[The complete output is saved in the sandbox at /w/r.txt]\n…");
    assert.ok(bare.kind === "preview");
    assert.deepEqual([bare.savedPath, bare.savedBytes], ["/w/r.txt", undefined]);
  });
});

describe("execCallsOf", () => {
  const call = (id: string, name: string, args: string) => ({
    id,
    type: "function" as const,
    function: { name, arguments: args },
    tool_info: { type: "truefoundry-system", name } as never,
  });
  const response = (id: string, toolCallId: string, content: string): StoredEvent => ({
    type: "tool.response",
    id,
    created_at: T,
    thread_id: "main",
    tool_call_id: toolCallId,
    content,
  });
  const created: StoredEvent = {
    type: "turn.created",
    id: "e0",
    created_at: T,
    thread_id: null,
    turn_id: "t1",
    previous_turn_id: null,
    input: [{ type: "user.message", content: "go" }],
  } as StoredEvent;

  test("stored events: exec calls only, in order, with their parsed results and arguments", () => {
    const events: StoredEvent[] = [
      created,
      {
        type: "model.message",
        id: "m1",
        thread_id: "main",
        created_at: T,
        tool_calls: [
          call("c1", "exec", '{"intent":"list","command":"ls","cwd":"out","env":{"A":"1","B":2}}'),
          call("c2", "search_docs", "{}"),
          call("c3", "exec", "not json"),
        ],
      },
      response("r1", "c1", '{"success":true,"response":{"exitCode":0,"result":"a\\n"}}'),
      response("r2", "c2", "docs"),
    ];
    const calls = execCallsOf(events);
    assert.deepEqual(
      calls.map((item) => [item.toolCallId, item.turnId, item.threadId]),
      [
        ["c1", "t1", "main"],
        ["c3", "t1", "main"],
      ],
    );
    assert.deepEqual(calls[0]?.arguments, { intent: "list", command: "ls", cwd: "out", env: { A: "1" } });
    assert.deepEqual(calls[0]?.result, { kind: "exited", exitCode: 0, output: "a\n" });
    assert.equal(calls[0]?.response?.id, "r1");
    assert.equal(calls[1]?.arguments, undefined, "arguments that are not JSON");
    assert.equal(calls[1]?.result, undefined, "no response yet");
  });

  test("stream frames: the call's arguments come from its deltas; a replayed frame changes nothing", () => {
    const frames: FoldInput[] = [
      { seq: 1, event: created },
      { seq: 2, event: { type: "model.message", id: "m1", thread_id: "main", created_at: T } },
      {
        seq: 3,
        event: {
          type: "model.message.delta",
          id: "m1",
          thread_id: "main",
          tool_calls: [
            { index: 0, id: "c1", type: "function", function: { name: "exec", arguments: '{"intent":"x",' } },
          ],
        },
      },
      {
        seq: 4,
        event: {
          type: "model.message.delta",
          id: "m1",
          thread_id: "main",
          tool_calls: [{ index: 0, function: { arguments: '"command":"printf hi"}' } }],
        },
      },
      { seq: 5, event: response("r1", "c1", '{"success":true,"response":{"exitCode":0,"result":"hi"}}') },
    ];
    const expected = [{ intent: "x", command: "printf hi", cwd: undefined, env: undefined }];
    assert.deepEqual(
      execCallsOf(frames).map((item) => item.arguments),
      expected,
    );
    const replayed = [...frames, frames[3] as FoldInput, frames[4] as FoldInput];
    const calls = execCallsOf(replayed);
    assert.deepEqual(
      calls.map((item) => item.arguments),
      expected,
    );
    assert.deepEqual(calls[0]?.result, { kind: "exited", exitCode: 0, output: "hi" });
    // Cut before the arguments are complete: the call is known, its arguments not yet.
    const partial = execCallsOf(frames.slice(0, 3));
    assert.equal(partial.length, 1);
    assert.equal(partial[0]?.arguments, undefined);
  });
});
