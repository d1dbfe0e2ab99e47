// Schedules against a real server (minimum interval 1 s): made, read, replaced, paused, resumed, run now
// (a session the caller can open), listed with their runs page by page, deleted; the server's refusals
// (a bad cron, an interval under the minimum, an unknown agent) come back as TrueForgeApiError; and a
// per-second schedule runs on its own.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type Schedule, TrueForgeApiError } from "../../src/index.js";
import { FAKE_MODEL, type Harness, harness } from "./helpers.js";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => assert.fail("expected the call to be refused"),
    (error: unknown) => error,
  );
}

describe("schedules", () => {
  let h: Harness;
  let agentId: string;
  before(async () => {
    h = await harness({ TRUEFORGE_SCHEDULE_MIN_INTERVAL_SECONDS: "1" });
    agentId = (await h.tf.agents.create({ name: "reporter", manifest: { model: { name: FAKE_MODEL } } })).id;
  });
  after(() => h.stop());

  test("a schedule is made, replaced, paused, run now, listed with its runs and deleted", async () => {
    const created = await h.tf.schedules.create({
      name: "digest",
      agent_id: agentId,
      manifest: { task: "Summarise", cron: "0 9 * * *", timezone: "Europe/Paris" },
    });
    assert.match(created.id, /^sch_/);
    assert.equal(created.state, "active");
    assert.ok(created.next_run_at);
    assert.deepEqual(await h.tf.schedules.get(created.id), created);

    const replaced = await h.tf.schedules.update(created.id, {
      name: "digest",
      agent_id: agentId,
      manifest: { task: "Summarise again", cron: "30 7 * * *" },
    });
    assert.equal(replaced.manifest.timezone, "UTC");
    assert.match(replaced.next_run_at ?? "", /T07:30:00\.000Z$/);

    const paused = await h.tf.schedules.pause(created.id);
    assert.equal(paused.state, "paused");
    assert.equal(paused.next_run_at, null);
    const first = await h.tf.schedules.run(created.id);
    const second = await h.tf.schedules.run(created.id);
    for (const run of [first, second]) {
      assert.equal(run.status, "started");
      assert.equal(run.trigger, "manual");
      assert.ok(run.session_id && run.turn_id);
    }
    const session = await h.tf.sessions.get(first.session_id ?? "");
    assert.equal(session.agent.type === "reference" ? session.agent.id : undefined, agentId);

    const pages: string[][] = [];
    for await (const page of h.tf.schedules.runPages(created.id, { limit: 1 })) {
      pages.push(page.data.map((run) => run.id));
    }
    assert.deepEqual(pages, [[second.id], [first.id]], "newest first, a page each");
    const resumed = await h.tf.schedules.resume(created.id);
    assert.equal(resumed.state, "active");

    const listed: Schedule[] = [];
    for await (const page of h.tf.schedules.pages()) {
      listed.push(...page.data);
    }
    assert.ok(listed.some((schedule) => schedule.id === created.id));
    await h.tf.schedules.delete(created.id);
    const missing = await rejection(h.tf.schedules.get(created.id));
    assert.ok(missing instanceof TrueForgeApiError && missing.status === 404, String(missing));
  });

  test("refusals say what is wrong", async () => {
    for (const [manifest, agent, status, message] of [
      [{ task: "t", cron: "nope" }, agentId, 400, /invalid cron expression/],
      [{ task: "t", cron: "0 * * * *", timezone: "Nowhere/City" }, agentId, 400, /unknown time zone/],
      [{ task: "t", cron: "* * * * * *" }, "no-such-agent", 404, /Agent not found/],
    ] as const) {
      const error = await rejection(h.tf.schedules.create({ name: "n", agent_id: agent, manifest }));
      assert.ok(error instanceof TrueForgeApiError, String(error));
      assert.equal(error.status, status);
      assert.match(error.error?.message ?? "", message);
    }
  });

  test("a per-second schedule runs on its own", async () => {
    const schedule = await h.tf.schedules.create({
      name: "ticker",
      agent_id: agentId,
      manifest: { task: "tick", cron: "* * * * * *" },
    });
    let started = 0;
    for (let attempt = 0; attempt < 100 && started < 2; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      started = (await h.tf.schedules.runs(schedule.id)).data.filter(
        (run) => run.status === "started",
      ).length;
    }
    await h.tf.schedules.pause(schedule.id);
    assert.ok(started >= 2, `runs started: ${started}`);
  });
});
