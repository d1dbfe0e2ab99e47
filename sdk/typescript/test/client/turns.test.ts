// Turns against the real server: streamed, polled to their end, paused on approvals and questions and
// answered, cancelled.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ActionBatch, TrueForgeActionError, type TurnEvent } from "../../src/index.js";
import { draftsAgent, FAKE_MODEL, type Harness, harness, say } from "./helpers.js";

let h: Harness;
before(async () => {
  h = await harness();
  await draftsAgent(h.tf, "helper");
});
after(() => h.stop());

async function inlineSession(): Promise<string> {
  const session = await h.tf.sessions.create({ agent: { spec: { model: { name: FAKE_MODEL } } } });
  return session.id;
}

async function collect(stream: AsyncIterable<{ seq: number; event: TurnEvent }>) {
  const events: { seq: number; event: TurnEvent }[] = [];
  for await (const item of stream) {
    events.push(item);
  }
  return events;
}

describe("turns", () => {
  test("a streamed turn: events in order from turn.created to turn.done, deltas carry the answer", async () => {
    const sessionId = await inlineSession();
    const stream = await h.tf.turns.stream(sessionId, say("hello #chunks=3"));
    const events = await collect(stream);
    assert.equal(events[0]?.event.type, "turn.created");
    const last = events.at(-1)?.event;
    assert.equal(last?.type, "turn.done");
    assert.ok(last?.type === "turn.done" && last.state.status === "done");
    const seqs = events.map((item) => item.seq);
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
      "sequence numbers grow",
    );
    const text = events
      .map(({ event }) => (event.type === "model.message.delta" ? (event.content ?? "") : ""))
      .join("");
    assert.ok(text.length > 0, "the deltas carry text");
    assert.ok(stream.turnId, "the stream knows its turn");
    const turn = await h.tf.turns.get(sessionId, stream.turnId);
    assert.equal(turn.state.status, "done");
  });

  test("create + wait: polled to done with the answer", async () => {
    const sessionId = await inlineSession();
    const turn = await h.tf.turns.create(sessionId, say("#echo polled"));
    assert.equal(turn.session_id, sessionId);
    const outcome = await h.tf.turns.wait(sessionId, turn.id, { intervalMs: 20 });
    assert.equal(outcome.status, "done");
    assert.ok(outcome.status === "done");
    assert.equal(outcome.output?.content, "#echo polled");
  });

  test("run: a failing model ends as failed", async () => {
    const sessionId = await inlineSession();
    const outcome = await h.tf.turns.run(sessionId, say("#error=400"), { intervalMs: 20 });
    assert.equal(outcome.status, "failed");
    assert.ok(outcome.status === "failed" && outcome.message.length > 0);
  });

  test("approval: approved for the session, the tool runs; the next call does not ask", async () => {
    const session = await h.tf.sessions.create({ agent: { name: "helper" } });
    const outcome = await h.tf.turns.run(session.id, say("clean up #steps=1 #tool=archive_drafts"), {
      intervalMs: 20,
    });
    assert.equal(outcome.status, "requires_action");
    assert.ok(outcome.status === "requires_action");
    const batch = outcome.actions;
    assert.equal(batch.calls.length, 1);
    assert.equal(batch.calls[0]?.kind, "approval");
    assert.equal(batch.complete, false);
    assert.throws(
      () => batch.toInput(),
      (error: unknown) => error instanceof TrueForgeActionError && error.code === "incomplete",
    );
    const callId = batch.calls[0]?.toolCallId ?? "";
    batch.approve(callId, { scope: "session" });
    assert.equal(batch.complete, true);

    const stream = await h.tf.turns.respond(session.id, batch, { stream: true });
    const events = await collect(stream);
    const response = events.find(({ event }) => event.type === "tool.response")?.event;
    assert.ok(response?.type === "tool.response");
    assert.equal(response.tool_call_id, callId);
    assert.match(response.content, /Archived 3 drafts/);
    const done = events.at(-1)?.event;
    assert.ok(done?.type === "turn.done" && done.state.status === "done");
    assert.deepEqual(done.state.required_actions, []);

    const again = await h.tf.turns.run(session.id, say("again #steps=1 #tool=archive_drafts"), {
      intervalMs: 20,
    });
    assert.equal(again.status, "done", "approved for the session: runs without asking");
  });

  test("approval: denied with a reason, the model is told and the turn ends", async () => {
    const session = await h.tf.sessions.create({ agent: { name: "helper" } });
    const outcome = await h.tf.turns.run(session.id, say("clean up #steps=1 #tool=archive_drafts"), {
      intervalMs: 20,
    });
    assert.ok(outcome.status === "requires_action");
    const batch = outcome.actions;
    const callId = batch.calls[0]?.toolCallId ?? "";
    batch.deny(callId, "not today");
    const input = batch.toInput();
    assert.deepEqual(input, [
      {
        type: "user.tool_approval",
        thread_id: batch.calls[0]?.threadId,
        tool_call_id: callId,
        approval: { status: "deny", reason: "not today" },
      },
    ]);
    const next = await h.tf.turns.respond(session.id, batch);
    assert.equal(next.previous_turn_id, outcome.turn.id, "continues the paused turn");
    const result = await h.tf.turns.wait(session.id, next.id, { intervalMs: 20 });
    assert.equal(result.status, "done");
    const events = await h.tf.turns.events(session.id, next.id);
    const response = events.data.find((event) => event.type === "tool.response");
    assert.ok(response?.type === "tool.response");
    assert.match(response.content, /not today/);
  });

  test("a question is answered and the answer reaches the model", async () => {
    const session = await h.tf.sessions.create({ agent: { name: "helper" } });
    const outcome = await h.tf.turns.run(
      session.id,
      say('pick #steps=1 #tool=ask_user_question #args={"question":"Which?","options":["a","b"]}'),
      { intervalMs: 20 },
    );
    assert.ok(outcome.status === "requires_action", outcome.status);
    const batch = outcome.actions;
    const call = batch.calls[0];
    assert.equal(call?.kind, "response");
    assert.throws(
      () => batch.approve(call?.toolCallId ?? ""),
      (error: unknown) => error instanceof TrueForgeActionError && error.code === "wrong_kind",
    );
    assert.throws(
      () => batch.answer("call_nobody", "a"),
      (error: unknown) => error instanceof TrueForgeActionError && error.code === "unknown_call",
    );
    batch.answer(call?.toolCallId ?? "", "b");
    const next = await h.tf.turns.respond(session.id, batch);
    const result = await h.tf.turns.wait(session.id, next.id, { intervalMs: 20 });
    assert.equal(result.status, "done");
    const page = await h.tf.turns.events(session.id, next.id);
    const created = page.data[0];
    assert.ok(created?.type === "turn.created");
    assert.deepEqual(created.input, [
      { type: "user.tool_response", thread_id: call?.threadId, tool_call_id: call?.toolCallId, content: "b" },
    ]);
    assert.ok(result.status === "done");
    assert.equal(
      result.output?.content,
      "Done after 1 tool results.",
      "the model got the answer as the result",
    );
  });

  test("cancel: a running turn ends as cancelled by the client", async () => {
    const sessionId = await inlineSession();
    const turn = await h.tf.turns.create(sessionId, say("slow #chunks=20 #delay=300"));
    await h.tf.sessions.cancel(sessionId);
    const outcome = await h.tf.turns.wait(sessionId, turn.id, { intervalMs: 20 });
    assert.equal(outcome.status, "cancelled");
    assert.ok(outcome.status === "cancelled" && outcome.reason === "client-cancelled");
  });

  test("subscribe after a cursor replays only the later events", async () => {
    const sessionId = await inlineSession();
    const events = await collect(await h.tf.turns.stream(sessionId, say("hello #chunks=4")));
    const turnId = (events[0]?.event.type === "turn.created" && events[0].event.turn_id) || "";
    const cursor = events[2]?.seq ?? 0;
    const rest = await collect(await h.tf.turns.subscribe(sessionId, turnId, { after: cursor }));
    assert.deepEqual(
      rest.map((item) => item.seq),
      events.filter((item) => item.seq > cursor).map((item) => item.seq),
    );
  });

  test("MCP authorization only: the continuation is a turn without input", () => {
    const batch = ActionBatch.from([
      {
        type: "mcp.auth_required",
        id: "e1",
        created_at: "2026-01-01T00:00:00Z",
        thread_id: null,
        mcp_servers: [{ id: "m1", name: "notion", auth_url: "https://as.example/authorize" }],
      },
    ]);
    assert.equal(batch.complete, true);
    assert.equal(batch.mcpAuthorizations[0]?.auth_url, "https://as.example/authorize");
    assert.deepEqual(batch.toInput(), []);
  });
});
