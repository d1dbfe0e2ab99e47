// The screens around the chat, in Chromium against the real server: building, saving and reusing an agent,
// configuring a model provider, the themes and the phone-width layout.

import assert from "node:assert/strict";
import { resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { FAKE_MODEL, type Harness, REPO, send, startHarness, waitForTurnEnd } from "../support/harness.js";

let harness: Harness;

before(async () => {
  harness = await startHarness();
});

after(async () => {
  await harness?.stop();
});

describe("agents", () => {
  test("an agent is created in the builder, saved, found in the library and chatted with", async () => {
    const { page } = await harness.page();
    await page.goto("/agents/new");
    const form = page.getByTestId("agent-form");
    await form.waitFor();
    await form.getByTestId("agent-name").fill("Bad name!");
    await form.getByTestId("agent-save").click();
    assert.equal(
      (await harness.api<{ data: unknown[] }>("GET", "/api/v1/agents")).data.length,
      0,
      "an invalid name is refused before anything is sent",
    );
    await form.getByTestId("agent-name").fill("researcher");
    await form.getByTestId("agent-model").selectOption(FAKE_MODEL);
    await form.getByLabel("Instructions").fill("Answer briefly.");
    await harness.screenshot(page, "agent-builder");
    await form.getByTestId("agent-save").click();
    await page.waitForFunction(async () => {
      const response = await fetch("/api/v1/agents");
      const body = (await response.json()) as { data: { name: string }[] };
      return body.data.some((agent) => agent.name === "researcher");
    });
    const agents = await harness.api<{
      data: { id: string; name: string; manifest: { instructions?: string } }[];
    }>("GET", "/api/v1/agents");
    const saved = agents.data.find((agent) => agent.name === "researcher");
    assert.equal(saved?.manifest.instructions, "Answer briefly.");

    await page.getByRole("complementary").getByRole("button", { name: "Agents" }).click();
    const row = page.locator('[data-testid="agent-row"][data-name="researcher"]');
    await row.waitFor();
    await page.getByTestId("agent-search").fill("nothing like it");
    await row.waitFor({ state: "detached" });
    await page.getByTestId("agent-search").fill("research");
    await row.waitFor();
    await row.getByRole("button", { name: "Chat with researcher" }).click();
    await page.waitForURL(/\/sessions\//);
    await page.getByRole("heading", { name: "researcher" }).waitFor();
    await send(page, "Hello researcher #echo");
    await waitForTurnEnd(page);
    const sessionId = new URL(page.url()).pathname.split("/").at(-1) ?? "";
    const session = await harness.api<{ data: { agent: { type: string; name?: string } } }>(
      "GET",
      `/api/v1/sessions/${sessionId}`,
    );
    assert.deepEqual([session.data.agent.type, session.data.agent.name], ["reference", "researcher"]);
  });
});

describe("settings", () => {
  test("a custom model provider is added in settings and its model becomes available", async () => {
    const { page } = await harness.page();
    await page.goto("/settings/models");
    await page.getByTestId("settings-models").waitFor();
    await page.getByRole("button", { name: "Add a custom provider" }).click();
    const form = page.getByTestId("provider-form");
    await form.getByTestId("provider-name").fill("second");
    await form.getByTestId("provider-base-url").fill(`${harness.server.fakeLlmUrl}/v1`);
    await form.getByTestId("provider-api-key").fill("key-2");
    await form.getByLabel("Model 1: provider's id").fill("other-model");
    await form.getByLabel("Model 1: name for agents").fill("other-model");
    await harness.screenshot(page, "settings");
    await form.getByRole("button", { name: "Add provider" }).click();
    await page.locator('[data-testid="provider-list"]', { hasText: "second" }).waitFor();
    const models = await harness.api<{ data: { name: string }[] }>("GET", "/api/v1/models");
    assert.ok(
      models.data.some((model) => model.name === "second/other-model"),
      JSON.stringify(models.data),
    );
  });

  test("a model's prices are edited in settings, and those the form has no field for are kept", async () => {
    const pricing = {
      input_per_mtok: 0.5,
      output_per_mtok: 1.5,
      cache_read_per_mtok: 0.05,
      reasoning_per_mtok: 2,
    };
    await harness.api("PUT", "/api/v1/settings/model-providers", {
      manifest: {
        type: "custom",
        name: "priced",
        base_url: `${harness.server.fakeLlmUrl}/v1`,
        models: [{ model_id: "model-a", name: "model-a", properties: { context_length: 1000, pricing } }],
      },
    });
    const { page } = await harness.page();
    await page.goto("/settings/models");
    const row = page.getByTestId("provider-list").locator("li", { hasText: "priced" });
    await row.getByRole("button", { name: "Edit priced" }).click();
    const form = page.getByTestId("provider-form");
    await form.getByLabel("Model 1: name for agents").fill("model-b");
    await form.getByText("Properties").click();
    assert.equal(await form.getByTestId("provider-model-input_per_mtok").inputValue(), "0.5");
    // A negative price is refused in the form, nothing sent.
    await form.getByTestId("provider-model-output_per_mtok").fill("-3");
    await form.getByRole("button", { name: "Save" }).click();
    await form.getByText("Use a number of 0 or more.").waitFor();
    await form.getByTestId("provider-model-output_per_mtok").fill("3.25");
    await form.getByTestId("provider-model-cache_read_per_mtok").fill("");
    await form.getByRole("button", { name: "Save" }).click();
    await row.locator(".tf-chip", { hasText: "model-b" }).waitFor();
    const providers = await harness.api<{
      data: { name: string; manifest: { models: { name: string; properties: { pricing?: unknown } }[] } }[];
    }>("GET", "/api/v1/settings/model-providers");
    const models = providers.data.find((provider) => provider.name === "priced")?.manifest.models ?? [];
    assert.deepEqual(
      models.map((model) => [model.name, model.properties.pricing]),
      [["model-b", { input_per_mtok: 0.5, output_per_mtok: 3.25, reasoning_per_mtok: 2 }]],
    );
  });
});

describe("history filter and deletes", () => {
  test("the history filtered by an agent lists only that agent's chats", async () => {
    await harness.api("POST", "/api/v1/agents", {
      name: "filtered",
      manifest: { model: { name: FAKE_MODEL } },
    });
    const mine = await harness.api<{ data: { id: string } }>("POST", "/api/v1/sessions", {
      agent: { name: "filtered" },
    });
    await harness.api("PATCH", `/api/v1/sessions/${mine.data.id}`, { title: "With the filtered agent" });
    const other = await harness.toolSession();
    await harness.api("PATCH", `/api/v1/sessions/${other}`, { title: "Inline agent chat" });
    const { page } = await harness.page();
    await page.goto("/");
    await page.locator(".tf-session", { hasText: "Inline agent chat" }).waitFor();
    await page.getByLabel("Filter by agent").selectOption({ label: "filtered" });
    await page.locator(".tf-session", { hasText: "Inline agent chat" }).waitFor({ state: "detached" });
    assert.deepEqual(await page.locator(".tf-session-title").allInnerTexts(), ["With the filtered agent"]);
  });

  test("a model provider is deleted from settings", async () => {
    await harness.api("PUT", "/api/v1/settings/model-providers", {
      manifest: {
        type: "custom",
        name: "doomed",
        base_url: `${harness.server.fakeLlmUrl}/v1`,
        auth: { api_key: "k" },
        models: [{ model_id: "model-a", name: "model-a", properties: {} }],
      },
    });
    const { page } = await harness.page();
    await page.goto("/settings/models");
    const row = page.getByTestId("provider-list").locator("li", { hasText: "doomed" });
    await row.waitFor();
    await row.getByRole("button", { name: /Delete/ }).click();
    await page
      .getByRole("button", { name: /^Delete/ })
      .last()
      .click();
    await row.waitFor({ state: "detached" });
    const providers = await harness.api<{ data: { name: string }[] }>(
      "GET",
      "/api/v1/settings/model-providers",
    );
    assert.ok(!providers.data.some((provider) => provider.name === "doomed"));
  });
});

describe("standing approvals and stdio servers", () => {
  test("'always allow for this agent' is remembered for the agent, listed in its builder and revoked there", async () => {
    await harness.api("POST", "/api/v1/agents", {
      name: "switcher",
      manifest: { model: { name: FAKE_MODEL }, mcp_servers: [{ name: "stub", preload: true }] },
    });
    const session = await harness.api<{ data: { id: string } }>("POST", "/api/v1/sessions", {
      agent: { name: "switcher" },
    });
    const { page } = await harness.page();
    await page.goto(`/sessions/${session.data.id}`);
    await send(page, 'Switch it on. #steps=1 #tool=toggle #args={"on":true}');
    const approval = page.getByRole("region", { name: /Approval required for toggle/ });
    await approval.getByRole("button", { name: "Always allow for this agent" }).click();
    await waitForTurnEnd(page, 2);
    const agents = await harness.api<{ data: { id: string; name: string }[] }>("GET", "/api/v1/agents");
    const agentId = agents.data.find((agent) => agent.name === "switcher")?.id ?? "";
    const standing = await harness.api<{ data: unknown[] }>(
      "GET",
      `/api/v1/agents/${agentId}/tool-approvals`,
    );
    assert.equal(standing.data.length, 1, JSON.stringify(standing));

    await page.goto(`/agents/${agentId}`);
    const list = page.getByTestId("tool-approvals");
    await list.getByRole("button", { name: /^Revoke toggle/ }).click();
    await list.getByRole("button", { name: /^Revoke toggle/ }).waitFor({ state: "detached" });
    const after = await harness.api<{ data: unknown[] }>("GET", `/api/v1/agents/${agentId}/tool-approvals`);
    assert.equal(after.data.length, 0);
  });

  test("an agent's instructions are updated in the builder", async () => {
    const created = await harness.api<{ data: { id: string } }>("POST", "/api/v1/agents", {
      name: "editable",
      manifest: { model: { name: FAKE_MODEL }, instructions: "Old." },
    });
    const { page } = await harness.page();
    await page.goto(`/agents/${created.data.id}`);
    const form = page.getByTestId("agent-form");
    await form.getByLabel("Instructions").fill("New and better.");
    await form.getByTestId("agent-save").click();
    await page.waitForFunction(async (id) => {
      const body = (await (await fetch(`/api/v1/agents/${id}`)).json()) as {
        data: { manifest: { instructions?: string } };
      };
      return body.data.manifest.instructions === "New and better.";
    }, created.data.id);
  });

  test("a stdio MCP server is added in settings and its tools are listed", async () => {
    const { page } = await harness.page();
    await page.goto("/settings/mcp");
    await page.getByTestId("mcp-add-custom").click();
    const form = page.getByTestId("mcp-form");
    await form.getByTestId("mcp-transport-stdio").check();
    await form.getByTestId("mcp-name").fill("stub-two");
    await form.getByTestId("mcp-description").fill("Looks words up.");
    await form.getByTestId("mcp-command").fill(process.execPath);
    await form.getByTestId("mcp-args").fill(resolve(REPO, "sdk/typescript/test/fixtures/mcp-stub.mjs"));
    await form.getByRole("button", { name: "Add server" }).click();
    await page.getByTestId("mcp-list").locator("li", { hasText: "stub-two" }).waitFor();
    const tools = await harness.api<{ data: { name: string }[] }>(
      "GET",
      "/api/v1/mcp-servers/stub-two/tools",
    );
    assert.deepEqual(tools.data.map((tool) => tool.name).sort(), ["lookup", "toggle"]);
  });
});

describe("look", () => {
  test("the dark theme is switched on and remembered", async () => {
    const { page } = await harness.page();
    await page.goto("/");
    await page.getByRole("button", { name: "Switch to the dark theme" }).click();
    assert.equal(await page.locator(".tf-root").getAttribute("data-theme"), "dark");
    await page.reload();
    assert.equal(await page.locator(".tf-root").getAttribute("data-theme"), "dark");
    await harness.screenshot(page, "dark-theme");
  });

  test("at phone width the history is a drawer that opens and closes from the keyboard", async () => {
    const { page } = await harness.page({ width: 390, height: 844 });
    await page.goto("/");
    assert.equal(await page.locator(".tf-sidebar").count(), 0);
    const opener = page.getByRole("button", { name: "Open the chat history" });
    await opener.focus();
    await page.keyboard.press("Enter");
    await page.getByRole("dialog").getByRole("navigation", { name: "Chat history" }).waitFor();
    await page.keyboard.press("Escape");
    await page.getByRole("dialog").waitFor({ state: "detached" });
    await harness.screenshot(page, "phone");
  });
});
