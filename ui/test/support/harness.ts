// The browser tests' harness: the real `trueforge` binary (which serves the embedded UI) with the fake model
// server and the stdio MCP stub of the SDK's tests, and Debian's Chromium driven by playwright-core. Nothing
// is mocked: the page talks to the server the README ships.
//
// The binary embeds `ui/dist` as it was when it was built. To test the working tree's UI without rebuilding
// either, build it elsewhere (`npx vite build --outDir /tmp/ui-dist-check`) and set TRUEFORGE_UI_DIST to that
// directory: the pages then get the app's files from there (as the server would serve them, with its
// Content-Security-Policy), and only the API reaches the server. Playwright does not route a navigation
// that follows a redirect: such a page (the MCP OAuth popup's return) is still the embedded build's.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import {
  type Accounts,
  type LoginServer,
  startServerWithLogin,
} from "../../../sdk/typescript/test/support/login.js";
import { FAKE_MODEL, type RunningServer, startServer } from "../../../sdk/typescript/test/support/server.js";

export { FAKE_MODEL };

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
/** The repository root, from `ui/build/ui/test/support`. */
export const REPO = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../../../..");
const MCP_STUB = resolve(REPO, "sdk/typescript/test/fixtures/mcp-stub.mjs");
/** Where the suite saves its screenshots (the README shows two of them). */
export const SCREENSHOTS = resolve(REPO, "docs/ui");

export interface PageOptions {
  width?: number;
  height?: number;
  colorScheme?: "light" | "dark";
}

export interface Harness {
  readonly server: RunningServer;
  readonly browser: Browser;
  /** Calls the API: JSON in, JSON out, failing the test on a non-2xx answer. */
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** A fresh browser context (cold cache, empty storage) and page, at `width`×`height`. */
  page(options?: PageOptions): Promise<{ context: BrowserContext; page: Page }>;
  /** A session of an inline agent with the MCP stub, sub-agents and questions on. */
  toolSession(): Promise<string>;
  /** A session of an inline agent with the sandbox on (the `exec` tool, uploads, downloads). */
  sandboxSession(): Promise<string>;
  screenshot(page: Page, name: string): Promise<void>;
  stop(): Promise<void>;
}

/** The server's policy for the UI (crates/server/src/ui_assets.rs), kept on a dev build's pages too. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
  "font-src 'self' data:; connect-src 'self'; frame-src 'none'; object-src 'none'; frame-ancestors 'none'; " +
  "base-uri 'none'; form-action 'self'";

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
};

/** A file of the dev build for `pathname`, as the server routes it: a file, else `index.html` (not for /assets/). */
async function devBuildFile(dist: string, pathname: string): Promise<{ path: string } | null> {
  const relative = normalize(decodeURIComponent(pathname)).replace(/^\/+/, "");
  if (relative.startsWith("..")) {
    return null;
  }
  const path = join(dist, relative);
  if (relative !== "" && (await stat(path).catch(() => null))?.isFile()) {
    return { path };
  }
  return relative.startsWith("assets/") ? null : { path: join(dist, "index.html") };
}

/** Serves the UI of `context` from the dev build in `dist`; the API (and /healthz) still go to the server. */
async function serveDevBuild(context: BrowserContext, baseUrl: string, dist: string): Promise<void> {
  const origin = new URL(baseUrl).origin;
  await context.route(
    (url) =>
      url.origin === origin &&
      !(url.pathname === "/api" || url.pathname.startsWith("/api/") || url.pathname.startsWith("/healthz")),
    async (route) => {
      const request = route.request();
      if (request.method() !== "GET" && request.method() !== "HEAD") {
        await route.fallback();
        return;
      }
      const file = await devBuildFile(dist, new URL(request.url()).pathname);
      if (file === null) {
        // Not in the dev build: the server's. A page reached through a redirect (the OAuth popup's return
        // from the API's callback) is not routed, so it is the embedded build's, and so are its chunks.
        await route.fallback();
        return;
      }
      await route.fulfill({
        status: 200,
        body: await readFile(file.path),
        headers: {
          "content-type": CONTENT_TYPES[extname(file.path)] ?? "application/octet-stream",
          "content-security-policy": CONTENT_SECURITY_POLICY,
          "cache-control": "no-cache",
        },
      });
    },
  );
}

/** Chromium, with fresh contexts on `baseUrl` (the dev build's files when TRUEFORGE_UI_DIST is set). */
async function launch(baseUrl: string) {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the browser tests need Debian's Chromium at ${CHROMIUM}: apt-get install -y chromium`);
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const contexts: BrowserContext[] = [];
  return {
    browser,
    async page(options: PageOptions = {}) {
      const context = await browser.newContext({
        viewport: { width: options.width ?? 1280, height: options.height ?? 800 },
        colorScheme: options.colorScheme ?? "light",
        baseURL: baseUrl,
      });
      contexts.push(context);
      const dist = process.env.TRUEFORGE_UI_DIST;
      if (dist) {
        await serveDevBuild(context, baseUrl, resolve(dist));
      }
      const page = await context.newPage();
      page.on("pageerror", (error) => {
        throw new Error(`uncaught error in the page: ${error.message}`);
      });
      return { context, page };
    },
    async close() {
      for (const context of contexts) {
        await context.close().catch(() => {});
      }
      await browser.close();
    },
  };
}

/** Saves a screenshot for the README (not with TRUEFORGE_UI_SCREENSHOTS=0). */
async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.TRUEFORGE_UI_SCREENSHOTS === "0") {
    return;
  }
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: resolve(SCREENSHOTS, `${name}.png`) });
}

/** The SDK's launcher looks for the binaries relative to its own build; from here, name the workspace's. */
function pointAtWorkspaceBinaries(): void {
  process.env.TRUEFORGE_BIN ??= resolve(REPO, "target/release/trueforge");
  process.env.FAKE_LLM_BIN ??= resolve(REPO, "target/release/fake-llm");
}

/** Chromium on the server; the server is stopped when Chromium does not start. */
async function launchOrStop(server: {
  baseUrl: string;
  stop(): Promise<void>;
}): Promise<Awaited<ReturnType<typeof launch>>> {
  try {
    return await launch(server.baseUrl);
  } catch (error) {
    await server.stop();
    throw error;
  }
}

export async function startHarness(env: Record<string, string> = {}): Promise<Harness> {
  pointAtWorkspaceBinaries();
  const server = await startServer(env);
  const browser = await launchOrStop(server);
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
  return {
    server,
    browser: browser.browser,
    api,
    page: browser.page,
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
    async sandboxSession() {
      const created = await api<{ data: { id: string } }>("POST", "/api/v1/sessions", {
        agent: {
          spec: {
            model: { name: FAKE_MODEL },
            config: { sandbox: { enabled: true, file_downloads: true } },
          },
        },
      });
      return created.data.id;
    },
    screenshot,
    async stop() {
      await browser.close();
      await server.stop();
    },
  };
}

export interface LoginHarness {
  /** The server in hosted mode with login, and its OpenID provider (see the SDK's test/support/login.ts). */
  readonly server: LoginServer;
  page(options?: PageOptions): Promise<{ context: BrowserContext; page: Page }>;
  stop(): Promise<void>;
}

/**
 * The real server with login (hosted mode on the test run's Postgres and Redis) and the real OpenID
 * provider, with the fake model configured by an admin; Chromium on it.
 */
export async function startLoginHarness(accounts?: Accounts): Promise<LoginHarness> {
  pointAtWorkspaceBinaries();
  const server = await startServerWithLogin(accounts ? { accounts } : {});
  const browser = await launchOrStop(server);
  return {
    server,
    page: browser.page,
    async stop() {
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
