// The resuming stream in a real browser: Debian's Chromium, driven by playwright-core, loads a page served by
// the cut proxy itself (same origin as the API behind it, so no CORS), and the page streams turns through
// its own `fetch` while the proxy cuts the responses. The page's script is `src/stream.ts` bundled by esbuild
// for the browser platform at test time (a Node-only import would fail the bundle). The events the page gets
// must be those of an uncut replay of the same turn.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { type Browser, chromium, type Page } from "playwright-core";
import type { SequencedEvent } from "../../src/events.js";
import { subscribeTurnStream } from "../../src/stream.js";
import { fetchTransport } from "../stream/fetch-transport.js";
import { type Cut, CutProxy } from "../support/cut-proxy.js";
import { FAKE_MODEL, type RunningServer, startServer } from "../support/server.js";
import type { PageResult, PageRun } from "./page.js";

const CHROMIUM = "/usr/bin/chromium";
const PACKAGE = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../..");
const MESSAGE = "héllo wörld ✓ 日本 😀 #echo #chunks=8 #delay=15";

let server: RunningServer;
let proxy: CutProxy;
let browser: Browser;
let page: Page;

async function newSession(): Promise<string> {
  const response = await fetch(`${server.baseUrl}/api/v1/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ agent: { spec: { model: { name: FAKE_MODEL } } } }),
  });
  assert.ok(response.ok, await response.clone().text());
  return ((await response.json()) as { data: { id: string } }).data.id;
}

async function replay(sessionId: string, turnId: string): Promise<SequencedEvent[]> {
  const events: SequencedEvent[] = [];
  for await (const event of subscribeTurnStream(fetchTransport(server.baseUrl), sessionId, turnId)) {
    events.push(event);
  }
  return events;
}

async function inPage(run: PageRun, cuts: Cut[]): Promise<PageResult> {
  proxy.reset();
  proxy.cut(...cuts);
  const result = await page.evaluate(
    (spec) => (globalThis as unknown as { trueforgeRun(s: PageRun): Promise<PageResult> }).trueforgeRun(spec),
    run,
  );
  assert.equal(result.error, undefined, `the page's stream failed: ${JSON.stringify(result.error)}`);
  assert.equal(proxy.pendingCuts, 0, `every planned cut was reached: ${JSON.stringify(result.requests)}`);
  assert.ok(
    proxy.requests.filter((r) => r.cutAt !== undefined).length === cuts.length,
    "each cut was made on a request of the page",
  );
  return result;
}

function assertDense(result: PageResult): void {
  assert.deepEqual(
    result.events.map((e) => e.seq),
    Array.from({ length: result.events.length }, (_, i) => i + 1),
  );
  const types = result.events.map((e) => (e.event as { type: string }).type);
  assert.equal(types[0], "turn.created");
  assert.equal(types.filter((t) => t === "turn.done").length, 1);
  assert.equal(types.at(-1), "turn.done");
}

before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the browser test needs Debian's Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\``,
    );
  }
  const bundle = await build({
    entryPoints: [resolve(PACKAGE, "test/browser/page.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
  });
  const script = bundle.outputFiles[0]?.text ?? "";
  assert.ok(script.includes("trueforgeRun"), "the page script was bundled");
  server = await startServer();
  // Chromium errors a body as soon as the connection breaks, dropping bytes that arrived just before and were
  // not read yet: the connection lingers a little after a cut so that the page reads what it was sent.
  proxy = await CutProxy.start(server.baseUrl, {
    lingerMs: 100,
    files: {
      "/": {
        type: "text/html; charset=utf-8",
        body: '<!doctype html><meta charset="utf-8"><title>stream</title><script type="module" src="/page.js"></script>',
      },
      "/page.js": { type: "text/javascript; charset=utf-8", body: script },
    },
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(`${proxy.baseUrl}/`);
  await page
    .waitForFunction(() => "trueforgeRun" in globalThis, undefined, { timeout: 10_000 })
    .catch(() => {
      throw new Error(`the page script did not load: ${errors.join("; ")}`);
    });
});

after(async () => {
  await browser?.close();
  await proxy?.close();
  await server?.stop();
});

describe("the turn stream in Chromium through cuts", { timeout: 120_000 }, () => {
  const cases: [string, Cut[]][] = [
    ["uncut", []],
    ["mid-frame", [{ after: '"type":"model.message.delta"', occurrence: 2 }]],
    ["between frames", [{ after: "id: 4\n\n" }]],
    ["inside a 3-byte character", [{ after: "日", offset: -2, occurrence: 2 }]],
    ["inside a 4-byte character", [{ after: "😀", offset: -1, occurrence: 2 }]],
    ["inside the headers of the resuming subscribe", [{ after: "id: 2\n\n" }, { at: 12 }]],
    [
      "several cuts in one turn",
      [
        { after: "id: 1\n\n" },
        { after: '"type":"model.message.delta"' },
        { after: "ö", offset: -1 },
        { after: "😀", offset: -3 },
        { after: '"type":"turn.done"' },
      ],
    ],
  ];
  for (const [label, cuts] of cases) {
    test(`a new turn, cut ${label}`, async () => {
      const sessionId = await newSession();
      const result = await inPage({ mode: "create", sessionId, message: MESSAGE }, cuts);
      assert.match(result.userAgent, /Chrome/);
      assertDense(result);
      assert.ok(result.turnId);
      assert.equal(result.lastSeq, result.events.length);
      assert.deepEqual(result.events, await replay(sessionId, result.turnId), "the same events as a replay");
      assert.equal(result.requests[0]?.startsWith("POST "), true);
      if (cuts.length > 0) {
        assert.ok(
          result.requests.slice(1).some((r) => r.includes("/subscribe")),
          `resumed through subscribe: ${result.requests}`,
        );
      }
    });
  }

  test("subscribing to a finished turn through cuts", async () => {
    const sessionId = await newSession();
    const created = await inPage({ mode: "create", sessionId, message: MESSAGE }, []);
    assert.ok(created.turnId);
    const result = await inPage({ mode: "subscribe", sessionId, turnId: created.turnId }, [
      { after: "id: 3\n\n" },
      { after: "日", offset: -1 },
      { at: 5 },
    ]);
    assertDense(result);
    assert.deepEqual(result.events, created.events);
    assert.ok(result.requests.every((r) => r.startsWith("GET ")));
    assert.ok(
      result.requests.slice(1).every((r) => /subscribe \d+$/.test(r)),
      `Last-Event-ID: ${result.requests}`,
    );
  });
});
