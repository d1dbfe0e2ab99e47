// The shell's addresses without a browser: every route's path and back (links, the back button and a
// refresh land on the same screen), and what an unknown or partial path opens.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseRoute, type Route, routePath } from "../src/app/routes.js";

const ROUTES: readonly [Route, string][] = [
  [{ name: "chat", sessionId: null }, "/"],
  [{ name: "chat", sessionId: "sess_01" }, "/sessions/sess_01"],
  [{ name: "chat", sessionId: "a b/c" }, "/sessions/a%20b%2Fc"],
  [{ name: "agents" }, "/agents"],
  [{ name: "agent", agentId: null }, "/agents/new"],
  [{ name: "agent", agentId: "agent_01" }, "/agents/agent_01"],
  [{ name: "settings", section: "models" }, "/settings/models"],
  [{ name: "settings", section: "mcp" }, "/settings/mcp"],
  [{ name: "settings", section: "skills" }, "/settings/skills"],
  [{ name: "settings", section: "sandbox" }, "/settings/sandbox"],
  [{ name: "apiKeys" }, "/api-keys"],
  [{ name: "schedules" }, "/schedules"],
];

describe("routes", () => {
  test("every route has a path, read back as the same route", () => {
    for (const [route, path] of ROUTES) {
      assert.equal(routePath(route), path, JSON.stringify(route));
      assert.deepEqual(parseRoute(path), route, path);
    }
  });

  test("the schedules, with a trailing slash or more after them", () => {
    assert.deepEqual(parseRoute("/schedules/"), { name: "schedules" });
    assert.deepEqual(parseRoute("/schedules/sch_01"), { name: "schedules" });
  });

  test("an unknown or partial path opens a new chat; an unknown settings section the models", () => {
    assert.deepEqual(parseRoute("/nowhere"), { name: "chat", sessionId: null });
    assert.deepEqual(parseRoute("/sessions"), { name: "chat", sessionId: null });
    assert.deepEqual(parseRoute("/scheduled"), { name: "chat", sessionId: null });
    assert.deepEqual(parseRoute("/settings/nothing"), { name: "settings", section: "models" });
  });
});
