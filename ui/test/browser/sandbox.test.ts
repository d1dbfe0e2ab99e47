// The sandbox in a real browser against the real server and its local sandbox: the fake model calls the
// `exec` tool and the card shows the command, exit code and output; a file the user attaches lands in the
// sandbox and the agent reads it; a file over the sandbox's limit (or one a chat without a sandbox cannot
// take) is refused before anything is sent; a file the agent wrote downloads with its bytes, and a refused
// download says why in the server's words; Settings › Sandbox shows the local sandbox's state.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import type { Locator, Page } from "playwright-core";
import { type Harness, send, startHarness, waitForTurnEnd } from "../support/harness.js";

/** The sandbox's per-file limit this server is started with: small, so a test file goes over it. */
const FILE_LIMIT = 64 * 1024;

let harness: Harness;
let sandboxEnabled = false;
let sandboxReason: string | undefined;

before(async () => {
  harness = await startHarness({ SANDBOX_FILE_MAX_BYTES_FOR_DOWNLOAD: String(FILE_LIMIT) });
  const capabilities = await harness.api<{
    data: {
      sandbox: { enabled: boolean; reason?: string };
      limits: { max_sandbox_file_bytes?: number };
    };
  }>("GET", "/api/v1/capabilities");
  sandboxEnabled = capabilities.data.sandbox.enabled;
  sandboxReason = capabilities.data.sandbox.reason;
  assert.equal(capabilities.data.limits.max_sandbox_file_bytes, FILE_LIMIT);
});

after(async () => {
  await harness?.stop();
});

/** Fails the test when this machine's server runs no local sandbox (bubblewrap missing), saying why. */
function needsSandbox(): void {
  assert.ok(sandboxEnabled, `the server runs no local sandbox: ${sandboxReason ?? "no reason given"}`);
}

/** The fake model's directives for one `exec` call (JSON without literal spaces, as `#args=` needs). */
function execCall(intent: string, command: string): string {
  const args = JSON.stringify({ intent, command }).replace(/ /g, "\\u0020");
  return `#steps=1 #tool=exec #args=${args}`;
}

async function openSession(sessionId: string): Promise<Page> {
  const { page } = await harness.page();
  await page.goto(`/sessions/${sessionId}`);
  await page.getByLabel("Message", { exact: true }).waitFor();
  return page;
}

function execCards(page: Page): Locator {
  return page.locator('.tf-tool[data-tool="exec"]');
}

describe("exec tool cards", () => {
  test("a command's card shows its intent, command, exit code and output", async () => {
    needsSandbox();
    const page = await openSession(await harness.sandboxSession());
    await send(page, `Greet me. ${execCall("Say hello", "echo hello")}`);
    await waitForTurnEnd(page);
    const card = execCards(page).first();
    assert.equal(await card.getAttribute("data-status"), "done");
    assert.equal(await card.locator(".tf-tool-title").innerText(), "Say hello");
    assert.match(await card.getByTestId("exec-command").innerText(), /echo hello/);
    const exit = card.getByTestId("exec-exit-code");
    assert.equal(await exit.getAttribute("data-exit-code"), "0");
    assert.equal((await exit.innerText()).trim(), "exit 0");
    assert.equal((await card.getByTestId("exec-output").innerText()).trim(), "hello");
    // The command is highlighted as shell once highlight.js (a lazy chunk) is in.
    await card.locator("[data-testid=exec-command] code.hljs").waitFor();
    assert.match(await page.locator(".tf-message-assistant").last().innerText(), /Done after 1 tool results/);
    await harness.screenshot(page, "exec-card");
    // The head folds the output away and back.
    await card.locator(".tf-tool-head").click();
    assert.equal(await card.getByTestId("exec-output").count(), 0);
    await card.locator(".tf-tool-head").click();
    await card.getByTestId("exec-output").waitFor();
  });

  test("a running command shows with a spinner, a failing one its non-zero exit code", async () => {
    needsSandbox();
    const page = await openSession(await harness.sandboxSession());
    await send(page, `Wait, then fail. ${execCall("Wait and look", "sleep 2 && ls /no/such/dir")}`);
    const running = page.locator('.tf-tool[data-tool="exec"][data-status="running"]');
    await running.locator(".tf-exec-spinner").waitFor();
    assert.match(await running.getByTestId("exec-command").innerText(), /sleep 2 && ls \/no\/such\/dir/);
    await waitForTurnEnd(page);
    const card = execCards(page).first();
    const exit = card.getByTestId("exec-exit-code");
    assert.notEqual(await exit.getAttribute("data-exit-code"), "0");
    assert.match((await exit.getAttribute("class")) ?? "", /tf-exit-bad/);
    assert.match((await card.getAttribute("class")) ?? "", /tf-exec-nonzero/);
    assert.match(await card.getByTestId("exec-output").innerText(), /No such file or directory/);
    assert.equal(await card.locator(".tf-exec-spinner").count(), 0);
  });

  test("a long output is cut in the middle until Show all", async () => {
    needsSandbox();
    const page = await openSession(await harness.sandboxSession());
    await send(page, `Count. ${execCall("Count to 500", "seq 1 500")}`);
    await waitForTurnEnd(page);
    const output = execCards(page).first().getByTestId("exec-output");
    const cut = await output.innerText();
    assert.match(cut, /^1\n2\n3\n/);
    assert.match(cut, /500\s*$/);
    assert.doesNotMatch(cut, /\n250\n/);
    await output.getByRole("button", { name: /more lines\. Show all/ }).click();
    const whole = await output.innerText();
    assert.match(whole, /\n250\n/);
    assert.equal(whole.trim().split("\n").length, 500);
  });
});

describe("attachments into the sandbox", () => {
  test("a CSV file goes into the sandbox, and the agent's exec reads it", async () => {
    needsSandbox();
    const page = await openSession(await harness.sandboxSession());
    const csv = "region,amount\nnorth,12\nsouth,30\n";
    await page
      .getByTestId("file-input")
      .setInputFiles({ name: "sales.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    const chip = page.getByTestId("attachment");
    await chip.waitFor();
    assert.match(await chip.innerText(), /sales\.csv/);
    assert.match(await chip.innerText(), /sandbox/i);
    await send(page, `Read it. ${execCall("Read the upload", "cat /workspace/uploads/sales.csv")}`);
    await waitForTurnEnd(page);
    assert.match(await page.locator(".tf-message-user").innerText(), /sales\.csv/);
    const output = await execCards(page).first().getByTestId("exec-output").innerText();
    assert.equal(output.trim(), csv.trim());
  });

  test("a file over the sandbox's limit is refused before anything is sent", async () => {
    const page = await openSession(await harness.sandboxSession());
    let turnPosts = 0;
    page.on("request", (request) => {
      if (request.method() === "POST" && request.url().endsWith("/turns")) {
        turnPosts += 1;
      }
    });
    await page
      .getByTestId("file-input")
      .setInputFiles({ name: "huge.csv", mimeType: "text/csv", buffer: Buffer.alloc(FILE_LIMIT + 1, "a") });
    const problem = page.getByTestId("composer-problem");
    await problem.waitFor();
    assert.match(await problem.innerText(), /huge\.csv is too large: 65,537 bytes.*at most 65,536 bytes/);
    assert.equal(await page.getByTestId("attachment").count(), 0, "the file is not attached");
    // A file under the limit still goes.
    await page
      .getByTestId("file-input")
      .setInputFiles({ name: "small.csv", mimeType: "text/csv", buffer: Buffer.alloc(FILE_LIMIT, "a") });
    await page.getByTestId("attachment").waitFor();
    assert.equal(await page.getByTestId("composer-problem").count(), 0);
    assert.equal(turnPosts, 0);
  });

  test("a chat whose agent has no sandbox takes images and PDFs only, and says why", async () => {
    const page = await openSession(await harness.toolSession());
    const input = page.getByTestId("file-input");
    // Once the chat is known to have no sandbox, the picker offers images and PDFs only.
    await page
      .locator('[data-testid="file-input"][accept="image/*,application/pdf"]')
      .waitFor({ state: "attached" });
    await input.setInputFiles({ name: "data.csv", mimeType: "text/csv", buffer: Buffer.from("a,b\n") });
    const problem = page.getByTestId("composer-problem");
    await problem.waitFor();
    assert.match(
      await problem.innerText(),
      /data\.csv: only images and PDFs can be attached here\. .*this chat's agent has none/,
    );
    assert.equal(await page.getByTestId("attachment").count(), 0);
    await input.setInputFiles({
      name: "scan.pdf",
      mimeType: "application/pdf",
      buffer: Buffer.from("%PDF-1.4\n"),
    });
    await page.getByTestId("attachment").waitFor();
    assert.doesNotMatch(await page.getByTestId("attachment").innerText(), /sandbox/i);
  });
});

describe("artifact downloads", () => {
  test("a file the agent wrote downloads with its bytes; a refused one shows the server's reason", async () => {
    needsSandbox();
    const sessionId = await harness.sandboxSession();
    const page = await openSession(sessionId);
    const command =
      "printf 'total,42\\nitems,7\\n' > /workspace/out.txt && head -c 70000 /dev/zero > /workspace/big.bin";
    // `#echo`: after the call, the fake answers with this message, whose fence lists the files.
    await send(
      page,
      [
        `Here is the report. ${execCall("Write the report", command)} #echo`,
        "",
        "```sandbox_artifacts",
        "[out.txt](/workspace/out.txt)",
        "[missing.txt](/workspace/missing.txt)",
        "[big.bin](/workspace/big.bin)",
        "```",
      ].join("\n"),
    );
    await waitForTurnEnd(page);
    const artifacts = page.locator(".tf-message-assistant .tf-artifacts").last();
    await artifacts.waitFor();
    assert.match(await artifacts.locator("summary").innerText(), /3 files generated/);

    const [download] = await Promise.all([
      page.waitForEvent("download"),
      artifacts.getByRole("button", { name: "out.txt" }).click(),
    ]);
    assert.equal(download.suggestedFilename(), "out.txt");
    const saved = await download.path();
    assert.equal(await readFile(saved, "utf8"), "total,42\nitems,7\n");

    // The server's own words for each refusal: asked directly, then compared with what the page shows.
    const turns = await harness.api<{ data: { id: string }[] }>(
      "GET",
      `/api/v1/sessions/${sessionId}/turns?order=asc`,
    );
    const turnId = turns.data.at(-1)?.id ?? "";
    for (const [name, status] of [
      ["missing.txt", 404],
      ["big.bin", 413],
    ] as const) {
      const response = await fetch(
        `${harness.server.baseUrl}/api/v1/sessions/${sessionId}/turns/${turnId}/download-sandbox-file?path=${encodeURIComponent(`/workspace/${name}`)}`,
      );
      assert.equal(response.status, status, `${name}: ${status}`);
      const body = (await response.json()) as { error: { message: string } };
      await artifacts.getByRole("button", { name }).click();
      const error = artifacts.getByTestId("artifact-error");
      await error.getByText(`/workspace/${name}`).waitFor();
      assert.equal(await error.innerText(), `Could not download /workspace/${name}: ${body.error.message}`);
    }
  });
});

describe("settings", () => {
  test("Settings › Sandbox shows the local sandbox's state when no provider is configured", async () => {
    const { page } = await harness.page();
    await page.goto("/settings/sandbox");
    const runtime = page.getByTestId("sandbox-runtime");
    await runtime.locator("strong").waitFor();
    assert.equal(await runtime.getAttribute("data-runtime"), "local");
    const text = await runtime.innerText();
    if (sandboxEnabled) {
      assert.match(text, /Local sandbox \(bubblewrap\): on/);
    } else {
      assert.match(text, /Local sandbox \(bubblewrap\): off/);
      assert.ok(text.includes(sandboxReason ?? "The server runs no local sandbox."));
    }
    await page.getByTestId("sandbox-empty").waitFor();
    await page.getByTestId("sandbox-catalog-row").first().waitFor();
    assert.doesNotMatch(await page.getByTestId("settings-sandbox").innerText(), /does not run/);
    await harness.screenshot(page, "settings-sandbox");
  });
});
