// The schedules screen in Chromium against the real server: reached from the navigation, its empty states,
// a schedule made through the form (and the server's 400 for a cron more frequent than it allows, shown on
// the form), Pause and Resume, Edit, Run now and the run's link to its chat, a failed run's error, and a
// confirmed Delete. The saved agents they run are made through the API.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { FAKE_MODEL, type Harness, startHarness } from "../support/harness.js";

let harness: Harness;

before(async () => {
  harness = await startHarness();
});

after(async () => {
  await harness?.stop();
});

interface Schedule {
  id: string;
  name: string;
  agent_id: string;
  state: "active" | "paused";
  next_run_at: string | null;
  manifest: { task: string; cron: string; timezone: string };
}

interface ScheduleRun {
  id: string;
  status: string;
  trigger: string;
  session_id: string | null;
  error: string | null;
}

async function makeAgent(name: string): Promise<string> {
  const created = await harness.api<{ data: { id: string } }>("POST", "/api/v1/agents", {
    name,
    manifest: { model: { name: FAKE_MODEL }, instructions: "Answer briefly." },
  });
  return created.data.id;
}

async function makeSchedule(name: string, agentId: string, task = "Summarise the day."): Promise<Schedule> {
  const created = await harness.api<{ data: Schedule }>("POST", "/api/v1/schedules", {
    name,
    agent_id: agentId,
    manifest: { task, cron: "0 9 * * *", timezone: "Europe/Paris" },
  });
  return created.data;
}

async function schedules(): Promise<Schedule[]> {
  return (await harness.api<{ data: Schedule[] }>("GET", "/api/v1/schedules")).data;
}

function row(page: Page, name: string) {
  return page.locator(`[data-testid="schedule-row"][data-name="${name}"]`);
}

async function openSchedules(): Promise<Page> {
  const { page } = await harness.page();
  await page.goto("/schedules");
  await page.getByTestId("schedules").waitFor();
  return page;
}

describe("schedules", () => {
  test("without saved agents the screen, reached from the navigation, leads to the agent builder", async () => {
    const { page } = await harness.page();
    await page.goto("/");
    await page.getByRole("complementary").getByRole("button", { name: "Schedules" }).click();
    await page.waitForURL(/\/schedules$/);
    const empty = page.getByTestId("schedules-no-agents");
    await empty.waitFor();
    assert.equal(await page.getByTestId("schedule-new").isDisabled(), true);
    await empty.getByRole("button", { name: "Build an agent" }).click();
    await page.waitForURL(/\/agents\/new$/);
    await page.getByTestId("agent-form").waitFor();
  });

  test("a cron more frequent than the server allows is refused, and the server's reason shown on the form", async () => {
    await makeAgent("digest-agent");
    const page = await openSchedules();
    await page.getByTestId("schedules-empty").waitFor();
    await page.getByTestId("schedule-new").click();
    const form = page.getByTestId("schedule-form");
    await form.getByTestId("schedule-name").fill("too often");
    await form.getByTestId("schedule-agent").selectOption({ label: "digest-agent" });
    await form.getByTestId("schedule-task").fill("Check the queue.");
    // A cron of the wrong shape is refused before anything is sent.
    await form.getByTestId("schedule-cron").fill("*/5 * * *");
    await form.getByRole("button", { name: "Create schedule" }).click();
    await form.getByText(/Use five fields/).waitFor();
    await form.getByTestId("schedule-cron").fill("*/5 * * * *");
    await form.getByRole("button", { name: "Create schedule" }).click();
    const error = page.getByTestId("schedule-form-error");
    await error.getByText(/minimum interval is 3600 s/).waitFor();
    assert.match(await error.innerText(), /"\*\/5 \* \* \* \*" runs 300 s apart/);
    assert.equal(await form.isVisible(), true, "the form stays open for another try");
    assert.equal(await form.getByTestId("schedule-cron").inputValue(), "*/5 * * * *");
    assert.deepEqual(await schedules(), []);
  });

  test("a schedule is made through the form and listed with its agent, cron, zone, state and next run", async () => {
    const agents = await harness.api<{ data: { id: string; name: string }[] }>("GET", "/api/v1/agents");
    const agentId =
      agents.data.find((agent) => agent.name === "digest-agent")?.id ?? (await makeAgent("digest-agent"));
    const page = await openSchedules();
    await page.getByTestId("schedule-new").click();
    const form = page.getByTestId("schedule-form");
    const browserZone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    assert.equal(await form.getByTestId("schedule-timezone").inputValue(), browserZone);
    await form.getByTestId("schedule-name").fill("morning digest");
    await form.getByTestId("schedule-agent").selectOption({ label: "digest-agent" });
    await form.getByRole("button", { name: "Weekdays at 9:00" }).click();
    assert.equal(await form.getByTestId("schedule-cron").inputValue(), "0 9 * * MON-FRI");
    await form.getByTestId("schedule-timezone").fill("Europe/Paris");
    await form.getByTestId("schedule-task").fill("Summarise yesterday's issues.");
    await form.getByRole("button", { name: "Create schedule" }).click();
    const listed = row(page, "morning digest");
    await listed.waitFor();
    await form.waitFor({ state: "detached" });
    assert.equal(await listed.getByTestId("schedule-agent-name").innerText(), "Agent: digest-agent");
    assert.equal(await listed.getByTestId("schedule-cron-text").innerText(), "0 9 * * MON-FRI");
    assert.match(await listed.innerText(), /Europe\/Paris/);
    assert.equal(await listed.getByTestId("schedule-state").innerText(), "Active");
    assert.match(await listed.getByTestId("schedule-next-run").innerText(), /^Next run: /);

    const saved = (await schedules()).find((schedule) => schedule.name === "morning digest");
    assert.ok(saved);
    assert.equal(saved.agent_id, agentId);
    assert.equal(saved.state, "active");
    assert.deepEqual(saved.manifest, {
      task: "Summarise yesterday's issues.",
      cron: "0 9 * * MON-FRI",
      timezone: "Europe/Paris",
    });
  });

  test("a schedule is paused and resumed from its row, as the server and a reload show", async () => {
    const agentId = await makeAgent("pausing-agent");
    // Its name is shown as text, never read as HTML.
    const name = "<img src=x onerror=alert(1)> nightly";
    const schedule = await makeSchedule(name, agentId);
    const page = await openSchedules();
    const listed = row(page, name);
    await listed.waitFor();
    assert.equal(await listed.locator(".tf-list-row-title").innerText(), name);
    assert.equal(await listed.locator("img").count(), 0);

    await listed.getByRole("button", { name: `Pause ${name}` }).click();
    await listed.getByTestId("schedule-state").getByText("Paused").waitFor();
    assert.equal(await listed.getByTestId("schedule-next-run").innerText(), "No next run while paused");
    const paused = (await schedules()).find((entry) => entry.id === schedule.id);
    assert.deepEqual([paused?.state, paused?.next_run_at], ["paused", null]);
    await page.reload();
    await listed.getByTestId("schedule-state").getByText("Paused").waitFor();

    await listed.getByRole("button", { name: `Resume ${name}` }).click();
    await listed.getByTestId("schedule-state").getByText("Active").waitFor();
    assert.match(await listed.getByTestId("schedule-next-run").innerText(), /^Next run: /);
    const resumed = (await schedules()).find((entry) => entry.id === schedule.id);
    assert.equal(resumed?.state, "active");
    assert.ok(resumed?.next_run_at);
  });

  test("a schedule's cron and message are edited in place", async () => {
    const schedule = await makeSchedule("editable", await makeAgent("editing-agent"), "Old message.");
    const page = await openSchedules();
    const listed = row(page, "editable");
    await listed.getByRole("button", { name: "Edit editable" }).click();
    const form = listed.getByTestId("schedule-form");
    assert.equal(await form.getByTestId("schedule-timezone").inputValue(), "Europe/Paris");
    await form.getByTestId("schedule-cron").fill("30 7 * * MON");
    await form.getByTestId("schedule-task").fill("New message.");
    await form.getByRole("button", { name: "Save" }).click();
    await form.waitFor({ state: "detached" });
    assert.equal(await listed.getByTestId("schedule-cron-text").innerText(), "30 7 * * MON");
    const edited = (await schedules()).find((entry) => entry.id === schedule.id);
    assert.deepEqual(edited?.manifest, {
      task: "New message.",
      cron: "30 7 * * MON",
      timezone: "Europe/Paris",
    });
  });

  test("Run now starts a run whose link opens its chat, with the schedule's message", async () => {
    const task = "Write the nightly report. #echo";
    const schedule = await makeSchedule("runner", await makeAgent("running-agent"), task);
    const page = await openSchedules();
    const listed = row(page, "runner");
    await listed.getByRole("button", { name: "Run runner now" }).click();
    const run = listed.locator('[data-testid="schedule-run"][data-status="started"]');
    await run.waitFor();
    assert.match(await run.innerText(), /Started\s*Run now/);
    const runs = await harness.api<{ data: ScheduleRun[] }>("GET", `/api/v1/schedules/${schedule.id}/runs`);
    assert.equal(runs.data.length, 1);
    const sessionId = runs.data[0]?.session_id;
    assert.ok(sessionId);
    assert.equal(
      await run.getByTestId("schedule-run-session").getAttribute("href"),
      `/sessions/${sessionId}`,
    );
    await harness.screenshot(page, "schedules");
    await run.getByRole("link", { name: /Open the chat/ }).click();
    await page.waitForURL(new RegExp(`/sessions/${sessionId}$`));
    await page.locator(".tf-message-user", { hasText: "Write the nightly report." }).waitFor();
  });

  test("a run of a schedule whose agent was deleted fails, and its error is shown", async () => {
    const agentId = await makeAgent("doomed-agent");
    await makeSchedule("orphan", agentId);
    await harness.api("DELETE", `/api/v1/agents/${agentId}`);
    const page = await openSchedules();
    const listed = row(page, "orphan");
    await listed
      .getByTestId("schedule-agent-name")
      .getByText(/deleted/)
      .waitFor();
    await listed.getByRole("button", { name: "Run orphan now" }).click();
    const failed = listed.locator('[data-testid="schedule-run"][data-status="failed"]');
    await failed.waitFor();
    const error = await failed.getByTestId("schedule-run-error").innerText();
    assert.ok(error.length > 0, "the server's reason is shown");
    assert.equal(await failed.getByTestId("schedule-run-session").count(), 0);
  });

  test("a schedule is deleted after a confirmation; the chats of its runs stay", async () => {
    const schedule = await makeSchedule("doomed", await makeAgent("deleting-agent"));
    const run = await harness.api<{ data: ScheduleRun }>("POST", `/api/v1/schedules/${schedule.id}/run`);
    const page = await openSchedules();
    const listed = row(page, "doomed");
    await listed.getByRole("button", { name: "Delete doomed" }).click();
    const dialog = page.getByTestId("confirm-dialog");
    await dialog.getByRole("heading", { name: "Delete doomed?" }).waitFor();
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "detached" });
    assert.ok(
      (await schedules()).some((entry) => entry.id === schedule.id),
      "Cancel keeps it",
    );

    await listed.getByRole("button", { name: "Delete doomed" }).click();
    await dialog.getByRole("button", { name: "Delete", exact: true }).click();
    await listed.waitFor({ state: "detached" });
    assert.ok(!(await schedules()).some((entry) => entry.id === schedule.id));
    const gone = await fetch(`${harness.server.baseUrl}/api/v1/schedules/${schedule.id}`);
    assert.equal(gone.status, 404);
    assert.ok(run.data.session_id);
    await harness.api("GET", `/api/v1/sessions/${run.data.session_id}`);
  });
});
