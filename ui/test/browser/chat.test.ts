// The chat in a real browser against the real server: streaming, tool cards, approvals, questions, resuming
// after a refresh, branching, and the session list. Each test drives the page as a person would.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Locator } from "playwright-core";
import { FAKE_MODEL, type Harness, send, startHarness, waitForTurnEnd } from "../support/harness.js";

let harness: Harness;

before(async () => {
  harness = await startHarness();
});

after(async () => {
  await harness?.stop();
});

/** Opens a tool card's details (a card waiting on the user opens by itself). */
async function expand(card: Locator): Promise<void> {
  const head = card.locator(".tf-tool-head");
  if ((await head.getAttribute("aria-expanded")) !== "true") {
    await head.click();
  }
}

async function openSession(sessionId: string) {
  const { page } = await harness.page();
  await page.goto(`/sessions/${sessionId}`);
  await page.getByLabel("Message", { exact: true }).waitFor();
  return page;
}

describe("chat", () => {
  test("a message streams into the thread and the new chat gets its address", async () => {
    const { page } = await harness.page();
    await page.goto("/");
    await page.getByRole("combobox", { name: "Model" }).waitFor();
    await send(page, "Hello streaming world, one word after another. #echo #chunks=12 #delay=60");
    const answer = page.locator(".tf-message-assistant").last();
    // Seen part-way: some text, not all of it yet.
    await page.waitForFunction(() => {
      const text = document.querySelector(".tf-message-assistant")?.textContent ?? "";
      return text.length > 0 && !text.includes("#delay=60");
    });
    await harness.screenshot(page, "chat-streaming");
    await waitForTurnEnd(page);
    assert.match(await answer.innerText(), /Hello streaming world, one word after another\./);
    assert.match(new URL(page.url()).pathname, /^\/sessions\/[^/]+$/);
    await page.getByTestId("turn-metrics").waitFor();
    assert.match(await page.getByTestId("turn-metrics").innerText(), /in .* out/);
    // The new session is in the list, and the user's words are shown once.
    await page.locator(".tf-session").first().waitFor();
    assert.equal(await page.locator(".tf-message-user").count(), 1);
  });

  test("a chat whose model has prices shows what it cost in the history", async () => {
    const pricing = { input_per_mtok: 2000, output_per_mtok: 8000 };
    await harness.api("PUT", "/api/v1/settings/model-providers", {
      manifest: {
        type: "custom",
        name: "costly",
        base_url: `${harness.server.fakeLlmUrl}/v1`,
        models: [
          { model_id: "costly-model", name: "costly-model", properties: { context_length: 8000, pricing } },
        ],
      },
    });
    const session = await harness.api<{ data: { id: string } }>("POST", "/api/v1/sessions", {
      agent: { spec: { model: { name: "costly/costly-model" } } },
    });
    const page = await openSession(session.data.id);
    await send(page, "What does this cost? #echo");
    await waitForTurnEnd(page);
    const read = await harness.api<{ data: { total_cost_in_usd: number | null } }>(
      "GET",
      `/api/v1/sessions/${session.data.id}`,
    );
    const cost = read.data.total_cost_in_usd;
    assert.ok(
      typeof cost === "number" && cost >= 0.01,
      `the session has a cost: ${JSON.stringify(read.data)}`,
    );
    // New chat reads the history again, which shows the session's total.
    await page.getByRole("button", { name: "New chat", exact: true }).click();
    const row = page.locator(".tf-session", { has: page.locator(`a[href="/sessions/${session.data.id}"]`) });
    await row.locator(".tf-session-cost").waitFor();
    assert.equal((await row.locator(".tf-session-cost").innerText()).trim(), `· $${cost.toFixed(2)}`);
  });

  test("a tool call shows as a card with its MCP server, arguments, result and time", async () => {
    const page = await openSession(await harness.toolSession());
    await send(page, 'Look it up. #steps=1 #tool=lookup #args={"word":"fold"}');
    await waitForTurnEnd(page);
    const card = page.locator('.tf-tool[data-tool="lookup"]');
    await card.waitFor();
    assert.equal(await card.getAttribute("data-status"), "done");
    assert.match(await card.innerText(), /MCP · stub/);
    assert.match(await card.locator(".tf-tool-elapsed").innerText(), /s$/);
    await expand(card);
    assert.match(await card.locator(".tf-tool-body").innerText(), /"word": "fold"/);
    assert.match(await card.locator(".tf-result").innerText(), /fold/);
    await harness.screenshot(page, "tool-card");
  });

  test("approving a tool for the session lets its next call run without asking", async () => {
    const page = await openSession(await harness.toolSession());
    await send(page, 'Switch it on. #steps=1 #tool=toggle #args={"on":true}');
    const approval = page.getByRole("region", { name: /Approval required for toggle/ });
    await approval.waitFor();
    await harness.screenshot(page, "approval");
    await approval.getByRole("button", { name: "Allow for this session" }).click();
    await page.waitForFunction(
      () => document.querySelector('.tf-tool[data-tool="toggle"]')?.getAttribute("data-status") === "done",
    );
    await waitForTurnEnd(page, 2);
    await send(page, 'Again. #steps=1 #tool=toggle #args={"on":false}');
    await waitForTurnEnd(page, 3);
    const cards = page.locator('.tf-tool[data-tool="toggle"]');
    assert.equal(await cards.count(), 2);
    assert.equal(await cards.nth(1).getAttribute("data-status"), "done");
    assert.equal(
      await page.getByRole("region", { name: /Approval required/ }).count(),
      0,
      "the second call did not ask",
    );
  });

  test("a denied call carries the reason to the agent", async () => {
    const sessionId = await harness.toolSession();
    const page = await openSession(sessionId);
    await send(page, 'Switch it off. #steps=1 #tool=toggle #args={"on":false}');
    const approval = page.getByRole("region", { name: /Approval required for toggle/ });
    await approval.getByRole("button", { name: "Deny…" }).click();
    await approval.getByLabel("Reason (the agent reads it)").fill("not on a Friday");
    await approval.getByRole("button", { name: "Deny", exact: true }).click();
    await waitForTurnEnd(page, 2);
    const turns = await harness.api<{
      data: { input: { type: string; approval?: { status: string; reason?: string } }[] }[];
    }>("GET", `/api/v1/sessions/${sessionId}/turns?order=asc`);
    const answer = turns.data[1]?.input[0];
    assert.deepEqual(answer?.approval, { status: "deny", reason: "not on a Friday" });
  });

  test("every pending question is asked, and the answers go together", async () => {
    const page = await openSession(await harness.toolSession());
    await send(
      page,
      'Ask me twice. #steps=1 #parallel=2 #tool=ask_user_question #args={"question":"Which?","options":["red","blue"]}',
    );
    const questions = page.locator("form.tf-question");
    await questions.nth(1).waitFor();
    assert.equal(await questions.count(), 2, "both questions are shown");
    await questions.nth(0).getByLabel("blue").check();
    await questions.nth(0).getByRole("button", { name: "Answer" }).click();
    // One answer alone sends nothing: the turn waits for both.
    await page.getByText("Answered: blue").waitFor();
    const other = page.locator("form.tf-question");
    await other.getByLabel("Your answer").fill("green, actually");
    await other.getByRole("button", { name: "Answer" }).click();
    await waitForTurnEnd(page, 2);
    const cards = page.locator('.tf-tool[data-tool="ask_user_question"]');
    assert.equal(await cards.count(), 2);
    assert.equal(await cards.nth(1).getAttribute("data-status"), "done");
    await expand(cards.nth(1));
    assert.match(await cards.nth(1).innerText(), /green, actually/);
  });

  test("a refresh mid-turn resumes from the last event seen and the text is not doubled", async () => {
    const sessionId = await harness.toolSession();
    const page = await openSession(sessionId);
    const text = "Resume me after the refresh without doubling a single word of this answer.";
    await send(page, `${text} #echo #chunks=30 #delay=120`);
    await page.waitForFunction(
      () => (document.querySelector(".tf-message-assistant")?.textContent ?? "").length > 10,
    );
    const subscriptions: { url: string; lastEventId: string | undefined }[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/subscribe")) {
        subscriptions.push({ url: request.url(), lastEventId: request.headers()["last-event-id"] });
      }
    });
    await page.reload();
    await waitForTurnEnd(page);
    const answer = await page.locator(".tf-message-assistant").last().innerText();
    assert.equal(answer.split("Resume me after the refresh").length - 1, 1, `once: ${answer}`);
    assert.match(answer, /single word of this answer\./);
    assert.ok(subscriptions.length > 0, "the running turn was followed through a subscription");
    const cursor = subscriptions[0];
    const after = Number(
      cursor?.lastEventId ?? new URL(cursor?.url ?? "http://x").searchParams.get("after") ?? 0,
    );
    assert.ok(
      after > 0,
      `the subscription started after the events already seen: ${JSON.stringify(subscriptions)}`,
    );
  });

  test("editing an earlier message starts a branch from the turn before it", async () => {
    const sessionId = await harness.toolSession();
    const page = await openSession(sessionId);
    await send(page, "First question #echo");
    await waitForTurnEnd(page, 1);
    await send(page, "Second question #echo");
    await waitForTurnEnd(page, 2);
    const first = page.locator(".tf-message-user").first();
    await first.hover();
    await first.getByRole("button", { name: "Edit and resend" }).click();
    const editor = page.getByLabel("Edit your message");
    await editor.fill("First question, rephrased #echo");
    await page.getByRole("button", { name: "Send as a new branch" }).click();
    await page.getByText("First question, rephrased", { exact: false }).first().waitFor();
    await waitForTurnEnd(page, 1);
    const shown = await page.locator(".tf-thread").innerText();
    assert.doesNotMatch(shown, /Second question/, "the view shows the new branch only");
    const turns = await harness.api<{ data: { previous_turn_id: string | null }[] }>(
      "GET",
      `/api/v1/sessions/${sessionId}/turns?order=asc`,
    );
    assert.equal(turns.data.length, 3);
    assert.equal(turns.data[2]?.previous_turn_id, null, "the branch continues what the first turn continued");
  });

  test("a compaction shows as a marker with the summary the agent went on from", async () => {
    const created = await harness.api<{ data: { id: string } }>("POST", "/api/v1/sessions", {
      agent: {
        spec: {
          model: { name: FAKE_MODEL },
          config: { context_management: { compaction: { compaction_threshold_tokens: 1 } } },
        },
      },
    });
    const page = await openSession(created.data.id);
    await send(page, "Say hello. #echo");
    await waitForTurnEnd(page, 1);
    await send(page, "Say it again. #echo");
    await waitForTurnEnd(page, 2);
    const marker = page.getByTestId("compaction").first();
    await marker.waitFor();
    assert.equal(await marker.getAttribute("data-method"), "summary");
    assert.match(await marker.locator("summary").innerText(), /Context compacted: \d+ messages summarised/);
    await marker.locator("summary").click();
    assert.match(await marker.innerText(), /continues from this summary/);
    assert.match(await page.getByTestId("turn-metrics").last().innerText(), /1 compaction/);
  });

  test("reasoning folds away and a sub-agent's thread is nested in the card of its call", async () => {
    const page = await openSession(await harness.toolSession());
    const args = JSON.stringify({ name: "helper", input: "#steps=1 #tool=lookup" }).replaceAll(
      " ",
      "\\u0020",
    );
    await send(page, `Delegate. #reasoning #steps=1 #tool=create_sub_agent #args=${args}`);
    await waitForTurnEnd(page);
    const reasoning = page.locator(".tf-reasoning").first();
    assert.equal(await reasoning.getAttribute("open"), null, "reasoning is folded once the answer is whole");
    assert.match(await reasoning.innerText(), /Reasoning/);
    const card = page.locator('.tf-tool[data-tool="create_sub_agent"]');
    assert.match(await card.locator(".tf-tool-title").first().innerText(), /Sub-agent: helper/);
    const nested = card.getByRole("region", { name: /Sub-agent helper/ });
    await nested.locator('.tf-tool[data-tool="lookup"][data-status="done"]').waitFor();
  });

  test("an approval is given from the keyboard", async () => {
    const sessionId = await harness.toolSession();
    const page = await openSession(sessionId);
    await send(page, 'Switch it on. #steps=1 #tool=toggle #args={"on":true}');
    const approval = page.getByRole("region", { name: /Approval required for toggle/ });
    await approval.waitFor();
    await approval.getByRole("button", { name: "Allow once" }).focus();
    // Once, session, deny: a saved agent's chat would have a third allow button between them.
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Deny…");
    await page.keyboard.press("Enter");
    await page.keyboard.type("no, thanks");
    await page.keyboard.press("Enter");
    await waitForTurnEnd(page, 2);
    const turns = await harness.api<{
      data: { input: { approval?: { status: string; reason?: string } }[] }[];
    }>("GET", `/api/v1/sessions/${sessionId}/turns?order=asc`);
    assert.deepEqual(turns.data[1]?.input[0]?.approval, { status: "deny", reason: "no, thanks" });
  });

  test("stop cancels the running turn", async () => {
    const page = await openSession(await harness.toolSession());
    await send(page, "Go on and on. #chunks=40 #delay=150");
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByText("Stopped.").waitFor();
    await page.getByRole("button", { name: "Send", exact: true }).waitFor();
  });
});

describe("session list", () => {
  test("sessions are renamed and deleted from the list", async () => {
    const sessionId = await harness.toolSession();
    await harness.api("PATCH", `/api/v1/sessions/${sessionId}`, { title: "Rename me" });
    const page = await openSession(sessionId);
    const row = page.locator(".tf-session", { hasText: "Rename me" });
    await row.waitFor();
    page.once("dialog", (dialog) => void dialog.accept("Renamed chat"));
    await row.getByRole("button", { name: "Actions for Rename me" }).click();
    await page.getByRole("menuitem", { name: "Rename" }).click();
    await page.locator(".tf-session", { hasText: "Renamed chat" }).waitFor();
    const renamed = await harness.api<{ data: { title: string } }>("GET", `/api/v1/sessions/${sessionId}`);
    assert.equal(renamed.data.title, "Renamed chat");
    page.once("dialog", (dialog) => void dialog.accept());
    await page
      .locator(".tf-session", { hasText: "Renamed chat" })
      .getByRole("button", { name: /Actions for/ })
      .click();
    await page.getByRole("menuitem", { name: "Delete" }).click();
    await page.locator(".tf-session", { hasText: "Renamed chat" }).waitFor({ state: "detached" });
    const response = await fetch(`${harness.server.baseUrl}/api/v1/sessions/${sessionId}`);
    assert.equal(response.status, 404);
    assert.equal(new URL(page.url()).pathname, "/", "deleting the open chat leaves it");
  });

  test("the list loads more sessions as it scrolls", async () => {
    for (let index = 0; index < 45; index += 1) {
      await harness.toolSession();
    }
    const { page } = await harness.page({ height: 700 });
    await page.goto("/");
    // One page is 25 sessions; scrolling to its end reads the next.
    await page.locator(".tf-session").nth(24).waitFor();
    assert.ok((await page.locator(".tf-session").count()) < 45, "not everything is read at once");
    await page.locator(".tf-session").nth(24).scrollIntoViewIfNeeded();
    await page.locator(".tf-session").nth(40).waitFor();
  });
});
