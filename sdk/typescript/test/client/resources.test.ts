// Every resource call against the real server at least once: round trips of what can be created, read,
// changed and deleted, and the refusals typed as `TrueForgeApiError`.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { TrueForgeApiError } from "../../src/index.js";
import { freePort } from "../support/server.js";
import { draftsAgent, FAKE_MODEL, type Harness, harness, MCP_FIXTURE, say } from "./helpers.js";

let h: Harness;
before(async () => {
  // Daytona at a port nothing listens on: a remote provider's key cannot be checked, whatever the network
  // (the fake Daytona's answers are in sandbox-provider.test.ts).
  h = await harness({ DAYTONA_API_URL: `http://127.0.0.1:${await freePort()}/api` });
});
after(() => h.stop());

async function refused(promise: Promise<unknown>, status: number): Promise<TrueForgeApiError> {
  const error = await promise.then(
    () => assert.fail(`expected a ${status}`),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof TrueForgeApiError, String(error));
  assert.equal(error.status, status, error.message);
  assert.equal(typeof error.error?.message, "string", "the server's message is kept");
  return error;
}

describe("meta", () => {
  test("capabilities, me, the login addresses, logout", async () => {
    const capabilities = await h.tf.capabilities();
    assert.equal(typeof capabilities.sandbox.enabled, "boolean");
    assert.equal(typeof capabilities.settings.enabled, "boolean");
    const me = await h.tf.auth.me();
    assert.equal(me.role, "admin");
    assert.equal(
      h.tf.auth.loginUrl("/chat?x=1"),
      `${h.server.baseUrl}/api/v1/auth/login?return_to=%2Fchat%3Fx%3D1`,
    );
    assert.equal(h.tf.auth.loginUrl(), `${h.server.baseUrl}/api/v1/auth/login`);
    assert.equal(
      h.tf.auth.callbackUrl({ state: "s", code: "c" }),
      `${h.server.baseUrl}/api/v1/auth/callback?state=s&code=c`,
    );
    assert.equal(await h.tf.auth.logout(), undefined);
  });

  test("catalogs, models, skills", async () => {
    assert.ok((await h.tf.catalogs.modelProviders()).some((entry) => entry.type === "custom"));
    assert.ok(Array.isArray(await h.tf.catalogs.mcpServers()));
    assert.ok(Array.isArray(await h.tf.catalogs.skills()));
    assert.ok(Array.isArray(await h.tf.catalogs.sandboxProviders()));
    const models = await h.tf.models.list();
    assert.ok(
      models.some((model) => model.name === FAKE_MODEL),
      JSON.stringify(models),
    );
    assert.ok(Array.isArray(await h.tf.skills.list()));
  });
});

describe("settings", () => {
  test("model providers: list, create, put, and a duplicate refused with 409", async () => {
    const manifest = {
      type: "custom" as const,
      name: "other",
      base_url: "http://127.0.0.1:9/v1",
      models: [{ model_id: "mini", name: "mini", properties: {} }],
    };
    const created = await h.tf.settings.modelProviders.create(manifest);
    assert.equal(created.name, "other");
    await refused(h.tf.settings.modelProviders.create(manifest), 409);
    const replaced = await h.tf.settings.modelProviders.put({
      ...manifest,
      models: [...manifest.models, { model_id: "nano", name: "nano", properties: {} }],
    });
    assert.equal(replaced.manifest.models.length, 2);
    const names = (await h.tf.settings.modelProviders.list()).map((provider) => provider.name);
    assert.ok(names.includes("fake") && names.includes("other"), names.join());
  });

  test("MCP servers: create, get, put, list, 404 for an unknown one", async () => {
    await draftsAgent(h.tf, "settings-agent");
    const server = await h.tf.settings.mcpServers.get("drafts");
    assert.equal(server.manifest.type, "stdio");
    const changed = await h.tf.settings.mcpServers.put({
      ...server.manifest,
      description: "The user's drafts.",
    });
    assert.equal(changed.manifest.description, "The user's drafts.");
    assert.ok((await h.tf.settings.mcpServers.list()).some((entry) => entry.name === "drafts"));
    await refused(h.tf.settings.mcpServers.get("nothing-here"), 404);
  });

  test("skills: create, put, list", async () => {
    const manifest = {
      type: "git" as const,
      name: "pdf",
      url: "https://github.com/example/skills",
      path: "pdf",
      ref: "main",
      description: "Reads PDF files.",
    };
    assert.equal((await h.tf.settings.skills.create(manifest)).name, "pdf");
    assert.equal((await h.tf.settings.skills.put({ ...manifest, ref: "v2" })).manifest.ref, "v2");
    assert.ok((await h.tf.settings.skills.list()).some((skill) => skill.name === "pdf"));
  });

  test("deletes answer nothing, the resource leaves its list, and a second delete is a 404", async () => {
    await h.tf.settings.modelProviders.create({
      type: "custom",
      name: "doomed",
      base_url: "http://127.0.0.1:9/v1",
      models: [{ model_id: "mini", name: "mini", properties: {} }],
    });
    assert.equal(await h.tf.settings.modelProviders.delete("doomed"), undefined);
    const providers = (await h.tf.settings.modelProviders.list()).map((provider) => provider.name);
    assert.ok(!providers.includes("doomed") && providers.includes("fake"), providers.join());
    await refused(h.tf.settings.modelProviders.delete("doomed"), 404);
    await refused(h.tf.settings.modelProviders.delete("Not a name"), 400);

    // A server with an open connection (listing its tools started it) is closed and forgotten.
    await h.tf.settings.mcpServers.create({
      type: "stdio",
      name: "scratch",
      description: "Drafts, briefly.",
      command: process.execPath,
      args: [MCP_FIXTURE, "--serve"],
    });
    assert.ok((await h.tf.mcpServers.tools("scratch")).length > 0);
    assert.equal(await h.tf.settings.mcpServers.delete("scratch"), undefined);
    await refused(h.tf.settings.mcpServers.get("scratch"), 404);
    await refused(h.tf.mcpServers.tools("scratch"), 404);
    await refused(h.tf.settings.mcpServers.delete("scratch"), 404);

    await h.tf.settings.skills.create({
      type: "git",
      name: "doomed-skill",
      url: "https://github.com/example/skills",
      path: "doomed",
      ref: "main",
      description: "Goes away.",
    });
    assert.equal(await h.tf.settings.skills.delete("doomed-skill"), undefined);
    assert.ok(!(await h.tf.settings.skills.list()).some((skill) => skill.name === "doomed-skill"));
    await refused(h.tf.settings.skills.delete("doomed-skill"), 404);

    await refused(h.tf.settings.sandboxProvider.delete(), 404);
  });

  test("sandbox provider: none configured (404), a Daytona that does not answer (502, nothing saved)", async () => {
    await refused(h.tf.settings.sandboxProvider.get(), 404);
    const error = await refused(
      h.tf.settings.sandboxProvider.put(
        {
          type: "daytona",
          auth: { api_key: "key" },
          exec_timeout_ms: 1000,
          auto_stop_interval_in_minutes: 15,
          auto_archive_interval_in_minutes: 60,
          auto_delete_interval_in_minutes: 120,
        },
        { maxRetries: 0 }, // a 502 is retried by default
      ),
      502,
    );
    assert.match(error.error?.message ?? "", /Daytona did not answer/);
    await refused(h.tf.settings.sandboxProvider.get(), 404);
  });
});

describe("MCP servers", () => {
  test("list, tools, authorize, disconnect, the OAuth callback", async () => {
    await draftsAgent(h.tf, "mcp-agent");
    const servers = await h.tf.mcpServers.list();
    assert.equal(servers.find((server) => server.name === "drafts")?.auth_status.status, "not_required");
    const tools = await h.tf.mcpServers.tools("drafts");
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ["archive_drafts", "list_drafts"]);
    assert.deepEqual(await h.tf.mcpServers.authorize("drafts", { returnTo: "/chat" }), {
      status: "not_required",
    });
    assert.equal(await h.tf.mcpServers.authorizationUrl("drafts"), undefined);
    assert.equal((await h.tf.mcpServers.disconnect("drafts")).name, "drafts");
    await refused(h.tf.mcpServers.authorize("nothing-here"), 404);
    await refused(h.tf.mcpServers.completeAuthorization({ state: "unknown", code: "c" }), 400);
    assert.equal(
      h.tf.mcpServers.oauthCallbackUrl({ state: "s" }),
      `${h.server.baseUrl}/api/v1/mcp-servers/oauth/callback?state=s`,
    );
  });
});

describe("agents", () => {
  test("create, get, list, update, delete; 404 once deleted; tool approvals", async () => {
    const agent = await h.tf.agents.create({ name: "writer", manifest: { model: { name: FAKE_MODEL } } });
    assert.equal((await h.tf.agents.get(agent.id)).name, "writer");
    assert.ok((await h.tf.agents.list()).some((entry) => entry.id === agent.id));
    const updated = await h.tf.agents.update(agent.id, {
      model: { name: FAKE_MODEL },
      instructions: "Be brief.",
    });
    assert.equal(updated.manifest.instructions, "Be brief.");
    await refused(h.tf.agents.create({ name: "writer", manifest: { model: { name: FAKE_MODEL } } }), 409);
    await refused(h.tf.agents.create({ name: "broken", manifest: { model: { name: "nobody/none" } } }), 422);

    assert.deepEqual(await h.tf.agents.toolApprovals.list(agent.id), []);
    await h.tf.agents.toolApprovals.revoke(agent.id, "drafts", "archive_drafts");
    await h.tf.agents.toolApprovals.revokeAll(agent.id);

    await h.tf.agents.delete(agent.id);
    await h.tf.agents.delete(agent.id); // deleting again succeeds
    const error = await refused(h.tf.agents.get(agent.id), 404);
    assert.match(error.message, /GET \/api\/v1\/agents\/.* failed with 404/);
    await refused(h.tf.agents.toolApprovals.list(agent.id), 404);
  });

  test("an approval for the agent is listed, then revoked", async () => {
    const agentId = await draftsAgent(h.tf, "approver");
    const session = await h.tf.sessions.create({ agent: { name: "approver" } });
    const paused = await h.tf.turns.run(session.id, say("go #steps=1 #tool=archive_drafts"), {
      intervalMs: 20,
    });
    assert.ok(paused.status === "requires_action");
    paused.actions.approveAll({ scope: "agent" });
    const next = await h.tf.turns.respond(session.id, paused.actions);
    assert.equal((await h.tf.turns.wait(session.id, next.id, { intervalMs: 20 })).status, "done");
    const approvals = await h.tf.agents.toolApprovals.list(agentId);
    assert.deepEqual(
      approvals.map((approval) => [approval.mcp_server_name, approval.tool_name]),
      [["drafts", "archive_drafts"]],
    );
    await h.tf.agents.toolApprovals.revoke(agentId, "drafts", "archive_drafts");
    assert.deepEqual(await h.tf.agents.toolApprovals.list(agentId), []);
  });
});

describe("sessions and turns", () => {
  test("create, get, update, list and pages, events and pages, delete", async () => {
    const session = await h.tf.sessions.create({ agent: { spec: { model: { name: FAKE_MODEL } } } });
    assert.equal((await h.tf.sessions.get(session.id)).id, session.id);
    const updated = await h.tf.sessions.update(session.id, {
      agent: { spec: { model: { name: FAKE_MODEL }, instructions: "Answer in French." } },
    });
    assert.ok(updated.agent.type === "inline" && updated.agent.spec.instructions === "Answer in French.");

    for (const text of ["one", "two", "three"]) {
      const outcome = await h.tf.turns.run(session.id, say(text), { intervalMs: 20 });
      assert.equal(outcome.status, "done");
    }
    const turns = await h.tf.turns.list(session.id, { limit: 2 });
    assert.equal(turns.data.length, 2);
    assert.ok(turns.pagination.next_page_token, "a second page");
    const allTurns = [];
    for await (const page of h.tf.turns.pages(session.id, { limit: 2 })) {
      allTurns.push(...page.data);
    }
    assert.equal(allTurns.length, 3);
    const newest = allTurns[0];
    assert.ok(newest);
    assert.equal((await h.tf.turns.get(session.id, newest.id)).id, newest.id);

    const turnEvents = [];
    for await (const page of h.tf.turns.eventPages(session.id, newest.id, { limit: 1 })) {
      turnEvents.push(...page.data);
    }
    assert.equal(turnEvents[0]?.type, "turn.created");
    assert.equal(turnEvents.at(-1)?.type, "turn.done");

    const first = await h.tf.sessions.events(session.id, { limit: 2 });
    assert.equal(first.data.length, 2);
    let count = 0;
    for await (const page of h.tf.sessions.eventPages(session.id, { limit: 2 })) {
      count += page.data.length;
      assert.ok(page.data.every((item) => typeof item.turn_id === "string"));
    }
    assert.ok(count >= 9, `every event of the three turns (${count})`);

    const listed = [];
    for await (const page of h.tf.sessions.pages({ limit: 1 })) {
      listed.push(...page.data);
    }
    assert.ok(listed.some((entry) => entry.id === session.id));
    assert.ok((await h.tf.sessions.list({ limit: 5 })).data.length >= 1);

    await refused(h.tf.turns.downloadSandboxFile(session.id, newest.id, "/workspace/a.txt"), 412);
    await h.tf.sessions.cancel(session.id); // nothing runs: still fine
    await h.tf.sessions.delete(session.id);
    await h.tf.sessions.delete(session.id);
    await refused(h.tf.sessions.get(session.id), 404);
    await refused(h.tf.turns.get(session.id, newest.id), 404);
  });

  test("bad input is a 400 with the server's message", async () => {
    const error = await refused(
      h.tf.sessions.list({ limit: -1 } as unknown as Parameters<typeof h.tf.sessions.list>[0]),
      400,
    );
    assert.ok(error.error?.message);
  });
});
