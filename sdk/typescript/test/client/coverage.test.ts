// Every operation of the server's document has a call in the SDK: the table below names the method that
// covers each `operationId`, and the test fails when the document gains an operation the table does not
// name (so a new route reaches the SDK), or when a named method is missing from the client.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { TrueForge } from "../../src/index.js";

const COVERED_BY: Readonly<Record<string, string>> = {
  list_agents: "agents.list",
  create_agent: "agents.create",
  get_agent: "agents.get",
  update_agent: "agents.update",
  delete_agent: "agents.delete",
  list_agent_tool_approvals: "agents.toolApprovals.list",
  revoke_agent_tool_approvals: "agents.toolApprovals.revokeAll",
  revoke_agent_tool_approval: "agents.toolApprovals.revoke",
  list_api_keys: "apiKeys.list",
  create_api_key: "apiKeys.create",
  revoke_api_key: "apiKeys.revoke",
  // A browser navigation, not a fetch: the SDK builds the URL.
  login_callback: "auth.callbackUrl",
  login: "auth.loginUrl",
  logout: "auth.logout",
  get_me: "auth.me",
  get_capabilities: "capabilities",
  list_mcp_server_catalog: "catalogs.mcpServers",
  list_model_provider_catalog: "catalogs.modelProviders",
  list_sandbox_provider_catalog: "catalogs.sandboxProviders",
  list_skill_catalog: "catalogs.skills",
  list_available_mcp_servers: "mcpServers.list",
  mcp_oauth_callback: "mcpServers.completeAuthorization",
  authorize_mcp_server: "mcpServers.authorize",
  disconnect_mcp_server: "mcpServers.disconnect",
  list_mcp_server_tools: "mcpServers.tools",
  list_models: "models.list",
  list_sessions: "sessions.list",
  create_session: "sessions.create",
  get_session: "sessions.get",
  delete_session: "sessions.delete",
  update_session: "sessions.update",
  cancel_session: "sessions.cancel",
  list_session_events: "sessions.events",
  list_turns: "turns.list",
  create_turn: "turns.create",
  get_turn: "turns.get",
  download_sandbox_file: "turns.downloadSandboxFile",
  list_turn_events: "turns.events",
  subscribe_to_turn: "turns.subscribe",
  list_mcp_servers: "settings.mcpServers.list",
  put_mcp_server: "settings.mcpServers.put",
  create_mcp_server: "settings.mcpServers.create",
  get_mcp_server: "settings.mcpServers.get",
  delete_mcp_server: "settings.mcpServers.delete",
  list_model_providers: "settings.modelProviders.list",
  put_model_provider: "settings.modelProviders.put",
  create_model_provider: "settings.modelProviders.create",
  delete_model_provider: "settings.modelProviders.delete",
  get_sandbox_provider: "settings.sandboxProvider.get",
  put_sandbox_provider: "settings.sandboxProvider.put",
  delete_sandbox_provider: "settings.sandboxProvider.delete",
  list_skills: "settings.skills.list",
  put_skill: "settings.skills.put",
  create_skill: "settings.skills.create",
  delete_skill: "settings.skills.delete",
  list_available_skills: "skills.list",
  list_schedules: "schedules.list",
  create_schedule: "schedules.create",
  get_schedule: "schedules.get",
  update_schedule: "schedules.update",
  delete_schedule: "schedules.delete",
  pause_schedule: "schedules.pause",
  resume_schedule: "schedules.resume",
  run_schedule: "schedules.run",
  list_schedule_runs: "schedules.runs",
};

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

function documentOperations(): string[] {
  // From build/test/client/ back to the package root, where the document lives.
  const text = readFileSync(new URL("../../../openapi.json", import.meta.url), "utf8");
  const document = JSON.parse(text) as { paths: Record<string, Record<string, { operationId?: string }>> };
  const ids: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (METHODS.includes(method)) {
        assert.ok(operation.operationId, `${method} ${path} has no operationId`);
        ids.push(operation.operationId);
      }
    }
  }
  return ids.sort();
}

function lookup(root: unknown, dotted: string): unknown {
  let value = root;
  for (const part of dotted.split(".")) {
    value = (value as Record<string, unknown> | undefined)?.[part];
  }
  return value;
}

test("every operation of openapi.json is named in the coverage table, and nothing else", () => {
  assert.deepEqual(Object.keys(COVERED_BY).sort(), documentOperations());
});

test("every method of the coverage table exists on the client", () => {
  const client = new TrueForge({ baseUrl: "http://127.0.0.1:1" });
  for (const [operation, method] of Object.entries(COVERED_BY)) {
    assert.equal(typeof lookup(client, method), "function", `${operation}: tf.${method} is not a function`);
  }
});
