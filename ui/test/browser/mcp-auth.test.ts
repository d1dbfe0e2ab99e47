// MCP authorization from the chat in a real browser: a turn that needs an OAuth-protected MCP server pauses
// with `mcp.auth_required`, the user connects the server in a popup that goes through the testkit's
// authorization server (dynamic registration, PKCE, an auto-approving or a refusing consent) and the server's
// OAuth callback back to the app, which tells the chat and closes; then Continue runs the tool with the user's
// token. Nothing is mocked: the `oauth-mcp` binary is a real authorization server and MCP server.
//
// The binary: OAUTH_MCP_BIN, else the workspace's release build
// (`cargo build --release -p trueforge-testkit --bin oauth-mcp`).

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { FAKE_MODEL, type Harness, REPO, send, startHarness, waitForTurnEnd } from "../support/harness.js";

/** The user the approving authorization server signs in; its `whoami` tool answers it. */
const USER = "ada-in-the-browser";
const APPROVING = "secure";
const DENYING = "secure-denied";

interface OAuthMcp {
  /** The issuer, e.g. `http://127.0.0.1:41234`. */
  readonly baseUrl: string;
  /** The MCP endpoint (the protected resource). */
  readonly mcpUrl: string;
  readonly stop: () => Promise<void>;
}

/** Starts `oauth-mcp` on a free port and reads its URLs from the line it prints once it listens. */
async function startOAuthMcp(args: string[]): Promise<OAuthMcp> {
  const binary = process.env.OAUTH_MCP_BIN ?? resolve(REPO, "target/release/oauth-mcp");
  if (!existsSync(binary)) {
    throw new Error(
      `${binary} does not exist: build it (cargo build --release -p trueforge-testkit --bin oauth-mcp) or set OAUTH_MCP_BIN`,
    );
  }
  const child = spawn(binary, ["--port", "0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const stop = () => stopChild(child);
  try {
    const { baseUrl, mcpUrl } = await new Promise<{ baseUrl: string; mcpUrl: string }>((done, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`oauth-mcp did not start within 20 s:\n${output}`)),
        20_000,
      );
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        const line = /oauth-mcp listening on (\S+) \(MCP endpoint (\S+)\)/.exec(output);
        if (line?.[1] && line[2]) {
          clearTimeout(timer);
          done({ baseUrl: line[1], mcpUrl: line[2] });
        }
      };
      child.stdout?.on("data", read);
      child.stderr?.on("data", read);
      child.once("error", (error) => {
        clearTimeout(timer);
        fail(new Error(`cannot start ${binary}: ${error.message}`));
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        fail(new Error(`oauth-mcp exited with ${code}:\n${output}`));
      });
    });
    return { baseUrl, mcpUrl, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  await new Promise<void>((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
  });
}

let harness: Harness;
let approving: OAuthMcp;
let denying: OAuthMcp;

interface ConfiguredMcpServer {
  name: string;
  auth_status: { status: string };
}

async function configure(name: string, server: OAuthMcp): Promise<void> {
  const created = await harness.api<{ data: ConfiguredMcpServer }>("POST", "/api/v1/settings/mcp-servers", {
    manifest: {
      type: "remote",
      name,
      url: server.mcpUrl,
      description: "An MCP server behind OAuth.",
      auth: { type: "dcr" },
    },
  });
  assert.equal(created.data.auth_status.status, "auth_required");
}

async function authStatus(name: string): Promise<string | undefined> {
  const servers = await harness.api<{ data: ConfiguredMcpServer[] }>("GET", "/api/v1/mcp-servers");
  return servers.data.find((server) => server.name === name)?.auth_status.status;
}

async function sessionWith(server: string): Promise<string> {
  const created = await harness.api<{ data: { id: string } }>("POST", "/api/v1/sessions", {
    agent: { spec: { model: { name: FAKE_MODEL }, mcp_servers: [{ name: server, preload: true }] } },
  });
  return created.data.id;
}

/** Opens the session and sends a message whose tool call needs `server`: the turn pauses for authorization. */
async function pausedForAuthorization(
  server: string,
  message: string,
): Promise<{ context: BrowserContext; page: Page; consoleLog: string[] }> {
  const sessionId = await sessionWith(server);
  const { context, page } = await harness.page();
  const consoleLog: string[] = [];
  context.on("console", (line) => consoleLog.push(`[${line.type()}] ${line.text()}`));
  await page.goto(`/sessions/${sessionId}`);
  await page.getByLabel("Message", { exact: true }).waitFor();
  await send(page, message);
  await waitForTurnEnd(page);
  const pending = page.getByRole("region", { name: "MCP authorization required" });
  await pending.waitFor();
  assert.match(await pending.innerText(), /The agent needs access to a server/);
  assert.match(await pending.innerText(), new RegExp(server));
  assert.equal(await page.locator(".tf-tool").count(), 0, "no tool ran before the authorization");
  return { context, page, consoleLog };
}

/** Every top-level navigation the browser makes in `context` (the popup's hops among them). */
function navigations(context: BrowserContext): string[] {
  const urls: string[] = [];
  context.on("request", (request) => {
    if (request.isNavigationRequest()) {
      urls.push(request.url());
    }
  });
  return urls;
}

before(async () => {
  harness = await startHarness();
  approving = await startOAuthMcp(["--user", USER]);
  denying = await startOAuthMcp(["--deny-consent"]);
  await configure(APPROVING, approving);
  await configure(DENYING, denying);
});

after(async () => {
  await harness?.stop();
  await approving?.stop();
  await denying?.stop();
});

describe("MCP authorization", () => {
  test("connecting in the popup authorizes the server and Continue runs the tool with the user's token", async () => {
    const { context, page, consoleLog } = await pausedForAuthorization(
      APPROVING,
      'Echo it. #steps=1 #tool=echo #args={"message":"hi-from-the-popup"}',
    );
    try {
      const pending = page.getByRole("region", { name: "MCP authorization required" });
      await page.screenshot({ path: "/tmp/mcp-auth-required.png" });
      const visited = navigations(context);
      const popupOpened = page.waitForEvent("popup");
      await pending.getByRole("button", { name: "Connect ↗" }).click();
      const popup = await popupOpened;
      // The authorization server approves and sends the popup to the server's callback, which sends it back
      // to this app's popup page with the outcome; that page tells the chat and closes.
      await popup.waitForURL(/[?&]screenType=mcp-auth&.*isSuccess=true/, { timeout: 20_000 });
      await popup.waitForEvent("close", { timeout: 10_000 });
      await pending.getByText("connected", { exact: true }).waitFor();
      assert.equal(await pending.getByRole("button", { name: "Connect ↗" }).count(), 0);
      const authorize = visited.findIndex((url) => url.startsWith(`${approving.baseUrl}/authorize?`));
      const callback = visited.findIndex((url) =>
        url.startsWith(`${harness.server.baseUrl}/api/v1/mcp-servers/oauth/callback?`),
      );
      assert.ok(authorize >= 0 && callback > authorize, `the popup's hops: ${visited.join("\n")}`);
      assert.equal(await authStatus(APPROVING), "authenticated");

      await pending.getByRole("button", { name: "Continue" }).click();
      await page.waitForFunction(
        () => document.querySelector('.tf-tool[data-tool="echo"]')?.getAttribute("data-status") === "done",
        null,
        { timeout: 20_000 },
      );
      await waitForTurnEnd(page, 2);
      const card = page.locator('.tf-tool[data-tool="echo"]');
      assert.match(await card.innerText(), new RegExp(`MCP · ${APPROVING}`));
      await card.locator(".tf-tool-head").click();
      assert.match(await card.locator(".tf-result").innerText(), /hi-from-the-popup/);
      assert.equal(await pending.count(), 0, "nothing waits on the user any more");

      // The token stays: the next call needs no authorization, and the server knows whose token it is.
      await send(page, "Who am I? #steps=1 #tool=whoami");
      await waitForTurnEnd(page, 3);
      const whoami = page.locator('.tf-tool[data-tool="whoami"]');
      assert.equal(await whoami.getAttribute("data-status"), "done");
      await whoami.locator(".tf-tool-head").click();
      assert.match(await whoami.locator(".tf-result").innerText(), new RegExp(USER));
      assert.equal(await pending.count(), 0);
    } catch (error) {
      await page.screenshot({ path: "/tmp/mcp-auth-approve-failure.png" }).catch(() => {});
      throw new Error(`${(error as Error).message}\nconsole:\n${consoleLog.join("\n")}`, { cause: error });
    }
  });

  test("a refused consent is reported and nothing continues", async () => {
    const { context, page, consoleLog } = await pausedForAuthorization(
      DENYING,
      'Echo it. #steps=1 #tool=echo #args={"message":"never"}',
    );
    try {
      const pending = page.getByRole("region", { name: "MCP authorization required" });
      const turnRequests: string[] = [];
      page.on("request", (request) => {
        if (request.method() === "POST" && /\/api\/v1\/sessions\/[^/]+\/turns/.test(request.url())) {
          turnRequests.push(request.url());
        }
      });
      const popupOpened = context.waitForEvent("page");
      await pending.getByRole("button", { name: "Connect ↗" }).click();
      const popup = await popupOpened;
      await popup.waitForURL(/[?&]screenType=mcp-auth&.*isSuccess=false&reason=access_denied/, {
        timeout: 20_000,
      });
      await popup.waitForEvent("close", { timeout: 10_000 });
      await page.getByText(`${DENYING} was not authorized: access_denied`).waitFor();
      await page.screenshot({ path: "/tmp/mcp-auth-denied.png" });
      // Still waiting on the user: the server is not connected, no turn was started, no tool ran.
      assert.equal(await pending.getByRole("button", { name: "Connect ↗" }).count(), 1);
      assert.equal(await pending.getByText("connected", { exact: true }).count(), 0);
      assert.equal(await authStatus(DENYING), "auth_required");
      await page.waitForTimeout(500);
      assert.deepEqual(turnRequests, [], "no turn was started");
      assert.equal(await page.locator(".tf-tool").count(), 0);
      assert.equal(await page.locator(".tf-turn").count(), 1);
    } catch (error) {
      await page.screenshot({ path: "/tmp/mcp-auth-deny-failure.png" }).catch(() => {});
      throw new Error(`${(error as Error).message}\nconsole:\n${consoleLog.join("\n")}`, { cause: error });
    }
  });
});
