// The browser tests' harness: the real `trueforge` binary (which serves the embedded UI) with the fake model
// server and the stdio MCP stub of the SDK's tests, and Debian's Chromium driven by playwright-core. Nothing
// is mocked: the page talks to the server the README ships.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { FAKE_MODEL, type RunningServer, startServer } from "../../../sdk/typescript/test/support/server.js";

export { FAKE_MODEL };

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
/** The repository root, from `ui/build/ui/test/support`. */
export const REPO = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../../../..");
const MCP_STUB = resolve(REPO, "sdk/typescript/test/fixtures/mcp-stub.mjs");
/** Where the suite saves its screenshots (the README shows two of them). */
export const SCREENSHOTS = resolve(REPO, "docs/ui");

export interface Harness {
  readonly server: RunningServer;
  readonly browser: Browser;
  /** Calls the API: JSON in, JSON out, failing the test on a non-2xx answer. */
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** A fresh browser context (cold cache, empty storage) and page, at `width`×`height`. */
  page(options?: {
    width?: number;
    height?: number;
    colorScheme?: "light" | "dark";
  }): Promise<{ context: BrowserContext; page: Page }>;
  /** A session of an inline agent with the MCP stub, sub-agents and questions on. */
  toolSession(): Promise<string>;
  screenshot(page: Page, name: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startHarness(env: Record<string, string> = {}): Promise<Harness> {
  // The SDK's launcher looks for the binaries relative to its own build; from here, name the workspace's.
  process.env.TRUEFORGE_BIN ??= resolve(REPO, "target/release/trueforge");
  process.env.FAKE_LLM_BIN ??= resolve(REPO, "target/release/fake-llm");
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the browser tests need Debian's Chromium at ${CHROMIUM}: apt-get install -y chromium`);
  }
  const server = await startServer(env);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const contexts: BrowserContext[] = [];
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? null : JSON.stringify(body),
    });
    const text = await response.text();
    assert.ok(response.ok, `${method} ${path} → ${response.status}: ${text}`);
    return (text ? JSON.parse(text) : null) as T;
  };
  await api("POST", "/api/v1/settings/mcp-servers", {
    manifest: {
      type: "stdio",
      name: "stub",
      description: "Looks words up and toggles settings.",
      command: process.execPath,
      args: [MCP_STUB],
    },
  });
  await mkdir(SCREENSHOTS, { recursive: true });
  return {
    server,
    browser,
    api,
    async page(options = {}) {
      const context = await browser.newContext({
        viewport: { width: options.width ?? 1280, height: options.height ?? 800 },
        colorScheme: options.colorScheme ?? "light",
        baseURL: server.baseUrl,
      });
      contexts.push(context);
      const page = await context.newPage();
      page.on("pageerror", (error) => {
        throw new Error(`uncaught error in the page: ${error.message}`);
      });
      return { context, page };
    },
    async toolSession() {
      const created = await api<{ data: { id: string } }>("POST", "/api/v1/sessions", {
        agent: {
          spec: {
            model: { name: FAKE_MODEL },
            mcp_servers: [{ name: "stub", preload: true }],
            config: { dynamic_sub_agents: { enabled: true }, ask_user_questions: { enabled: true } },
          },
        },
      });
      return created.data.id;
    },
    async screenshot(page, name) {
      if (process.env.TRUEFORGE_UI_SCREENSHOTS === "0") {
        return;
      }
      await page.screenshot({ path: resolve(SCREENSHOTS, `${name}.png`) });
    },
    async stop() {
      for (const context of contexts) {
        await context.close().catch(() => {});
      }
      await browser.close();
      await server.stop();
    },
  };
}

/** Types into the composer and sends. */
export async function send(page: Page, text: string): Promise<void> {
  const input = page.getByLabel("Message", { exact: true });
  await input.fill(text);
  await input.press("Enter");
}

/** The text of the last assistant message once its turn is done. */
export async function waitForTurnEnd(page: Page, count = 1): Promise<void> {
  await page.waitForFunction(
    (expected) =>
      document.querySelectorAll('.tf-turn[data-status]:not([data-status="running"])').length >= expected &&
      document.querySelectorAll('.tf-turn[data-status="running"]').length === 0,
    count,
    { timeout: 20_000 },
  );
}
