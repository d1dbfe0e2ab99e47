// The example host app (ui/examples/host) in Chromium: built at test time against the package's library build, served by a host
// server of its own that proxies `/api` to the real TrueForge server (the deployment the example's README
// describes). Its custom layout and custom tool card are on screen, and a turn runs through them.

import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, request as httpRequest, type Server } from "node:http";
import { tmpdir } from "node:os";
import { extname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { build } from "vite";
import { freePort } from "../../../sdk/typescript/test/support/server.js";
import { type Harness, REPO, send, startHarness, waitForTurnEnd } from "../support/harness.js";

const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css" };

let harness: Harness;
let host: Server;
let hostUrl: string;
let outDir: string;

before(async () => {
  outDir = await mkdtemp(join(tmpdir(), "trueforge-ui-example-"));
  // The package's library build first: the example imports `@trueforge/ui` as a host would.
  await build({ configFile: resolve(REPO, "ui/vite.lib.config.ts"), logLevel: "error" });
  await build({
    configFile: resolve(REPO, "ui/examples/host/vite.config.ts"),
    logLevel: "error",
    build: { outDir },
  });
  const port = await freePort();
  hostUrl = `http://127.0.0.1:${port}`;
  harness = await startHarness({ TRUEFORGE_ALLOWED_ORIGINS: hostUrl });
  const upstream = new URL(harness.server.baseUrl);
  host = createServer(async (req, res) => {
    const path = new URL(req.url ?? "/", hostUrl).pathname;
    if (path.startsWith("/api/")) {
      // The host's proxy: the API answers for the server's own host name; the page's origin is the host's.
      const proxied = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      proxied.on("error", () => res.writeHead(502).end());
      req.pipe(proxied);
      return;
    }
    const file = path === "/" ? "index.html" : path.slice(1);
    try {
      const body = await readFile(join(outDir, file));
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((done) => host.listen(port, "127.0.0.1", done));
});

after(async () => {
  // The browser first: its pages hold connections to the host (an event stream among them), and the
  // host's close waits for every connection to end.
  await harness?.stop();
  host?.closeAllConnections();
  await new Promise((done) => host?.close(done));
  await rm(outDir, { recursive: true, force: true });
});

test("the example host embeds the chat with its own layout and tool card", async () => {
  const sessionId = await harness.toolSession();
  const { page } = await harness.page();
  await page.goto(`${hostUrl}/`);
  await page.getByTestId("host-header").waitFor();
  assert.equal(await page.getByTestId("host-header").innerText(), "Acme support");
  // The embedded session list shows the session; open it and run a tool through the custom card.
  // Its link, not the row: the row also holds the session's menu button, which its middle may fall on.
  await page.locator(".tf-session a").first().click();
  await page.getByLabel("Message", { exact: true }).waitFor();
  assert.equal(await page.locator(".tf-chat").getAttribute("data-session-id"), sessionId);
  await send(page, 'Look it up. #steps=1 #tool=lookup #args={"word":"embed"}');
  await waitForTurnEnd(page);
  const card = page.getByTestId("custom-tool-card");
  await card.waitFor();
  assert.match(await card.innerText(), /Acme tool · lookup · finished/);
  assert.equal(await page.locator(".tf-tool").count(), 0, "the default card is replaced");
  assert.equal(await page.getByRole("button", { name: "Settings" }).count(), 0, "settings are switched off");
  assert.equal(new URL(page.url()).pathname, "/", "memory routing leaves the host's address alone");
  // `@trueforge/ui/style.css` styles the UI (its tokens and type on the UI's root) and leaves the
  // host's own page alone (no rule for the host's body).
  const styles = await page.evaluate(() => {
    const root = document.querySelector(".tf-root");
    return {
      accent: root ? getComputedStyle(root).getPropertyValue("--tf-accent").trim() : "",
      rootFont: root ? getComputedStyle(root).fontSize : "",
      bodyMargin: getComputedStyle(document.body).margin,
    };
  });
  assert.notEqual(styles.accent, "", "the UI's tokens are in the package's stylesheet");
  assert.equal(styles.rootFont, "15px");
  assert.equal(styles.bodyMargin, "8px", "the host's body keeps the browser's margin");
  await harness.screenshot(page, "embed-example");
});
