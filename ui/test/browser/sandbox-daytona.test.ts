// Settings › Sandbox with a remote provider, against the testkit's fake Daytona (`fake-daytona`, reached by
// the server at DAYTONA_API_URL): a wrong key is refused with the server's message, the right one is saved
// and its status shown (polled while the image is prepared), the screen says sandboxes now run remotely, and
// deleting it brings the local sandbox back. A Daytona that does not answer gives the server's 502 message.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { freePort } from "../../../sdk/typescript/test/support/server.js";
import { type Harness, REPO, startHarness } from "../support/harness.js";

const FAKE_DAYTONA = process.env.FAKE_DAYTONA_BIN ?? resolve(REPO, "target/release/fake-daytona");
const RIGHT_KEY = "right-daytona-key";
const REJECTED = "Daytona rejected the API key — check the credentials";

let daytona: ChildProcess | undefined;
let harness: Harness | undefined;

/** Starts `fake-daytona` and resolves with the API URL it prints once it listens. */
async function startFakeDaytona(): Promise<string> {
  const child = spawn(FAKE_DAYTONA, ["--port", "0", "--api-key", RIGHT_KEY], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  daytona = child;
  let output = "";
  return new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`fake-daytona did not start:\n${output}`)), 20_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const url = /fake-daytona listening on (\S+)/.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        resolveUrl(url);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`fake-daytona exited with ${code}:\n${output}`));
    });
  });
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  await new Promise<void>((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
  });
}

const built = existsSync(FAKE_DAYTONA);
const skip = built
  ? false
  : `${FAKE_DAYTONA} is missing: cargo build --release -p trueforge-testkit --bin fake-daytona`;

async function openSandboxSettings(page: Page): Promise<void> {
  await page.goto("/settings/sandbox");
  await page.getByTestId("sandbox-runtime").locator("strong").waitFor();
}

/** Opens the form (Configure, or Edit of the saved provider), types `key` and saves. */
async function saveKey(page: Page, key: string): Promise<void> {
  const form = page.getByTestId("sandbox-form");
  if ((await form.count()) === 0) {
    const configure = page.getByRole("button", { name: "Configure Daytona" });
    if ((await configure.count()) > 0) {
      await configure.click();
    } else {
      await page.getByRole("button", { name: "Edit the sandbox provider" }).click();
    }
  }
  await form.getByTestId("sandbox-api-key").fill(key);
  await form.getByRole("button", { name: "Save" }).click();
}

describe("a remote sandbox provider (fake Daytona)", { skip }, () => {
  before(async () => {
    const url = await startFakeDaytona();
    harness = await startHarness({ DAYTONA_API_URL: url });
  });

  after(async () => {
    await harness?.stop();
    await stopChild(daytona);
  });

  test("a wrong key shows the server's refusal, the right one the provider's status, delete goes back", async () => {
    const h = harness as Harness;
    const { page } = await h.page();
    await openSandboxSettings(page);
    assert.equal(await page.getByTestId("sandbox-runtime").getAttribute("data-runtime"), "local");

    await saveKey(page, "wrong-key");
    const error = page.getByTestId("sandbox-save-error");
    await error.getByText(REJECTED).waitFor();
    assert.equal(await page.getByTestId("sandbox-row").count(), 0, "nothing was saved");

    await saveKey(page, RIGHT_KEY);
    const row = page.getByTestId("sandbox-row");
    await row.waitFor();
    assert.equal(await page.getByTestId("sandbox-form").count(), 0, "the form closed");
    assert.match(await row.innerText(), /Daytona/);
    assert.match(await row.innerText(), /Key stored/);
    // The status chip: pending until the image is ready (the screen asks again meanwhile), then ready.
    assert.match(await row.locator(".tf-list-row-badges").innerText(), /Preparing the image…|Ready|Failed/);
    await row.getByText("Ready", { exact: true }).waitFor({ timeout: 60_000 });
    const runtime = page.getByTestId("sandbox-runtime");
    assert.equal(await runtime.getAttribute("data-runtime"), "remote");
    assert.match(await runtime.innerText(), /Sandboxes run on Daytona/);
    // The server keeps the key to itself.
    const stored = await h.api<{ data: { manifest: { auth: { api_key: string } }; status: string } }>(
      "GET",
      "/api/v1/settings/sandbox-providers",
    );
    assert.notEqual(stored.data.manifest.auth.api_key, RIGHT_KEY);
    assert.equal(stored.data.status, "ready");

    // The page after a reload shows the same (and no toasts, for the screenshot).
    await openSandboxSettings(page);
    await page.getByTestId("sandbox-row").getByText("Ready", { exact: true }).waitFor();
    await h.screenshot(page, "settings-sandbox-daytona");

    await page.getByRole("button", { name: "Delete the sandbox provider" }).click();
    await page.getByTestId("confirm-dialog").getByRole("button", { name: "Delete" }).click();
    await page.getByTestId("sandbox-empty").waitFor();
    await page.locator('[data-testid="sandbox-runtime"][data-runtime="local"]').waitFor();
  });
});

describe("a Daytona that does not answer", () => {
  let unanswered: Harness | undefined;

  before(async () => {
    // A port nobody listens on.
    unanswered = await startHarness({ DAYTONA_API_URL: `http://127.0.0.1:${await freePort()}/api` });
  });

  after(async () => {
    await unanswered?.stop();
  });

  test("saving shows the server's 502 message", async () => {
    const h = unanswered as Harness;
    const manifest = {
      type: "daytona",
      auth: { api_key: "any-key" },
      exec_timeout_ms: 60_000,
      auto_stop_interval_in_minutes: 5,
      auto_archive_interval_in_minutes: 60,
      auto_delete_interval_in_minutes: 7200,
    };
    const direct = await fetch(`${h.server.baseUrl}/api/v1/settings/sandbox-providers`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ manifest }),
    });
    assert.equal(direct.status, 502);
    const message = ((await direct.json()) as { error: { message: string } }).error.message;

    const { page } = await h.page();
    await openSandboxSettings(page);
    await saveKey(page, "any-key");
    const error = page.getByTestId("sandbox-save-error");
    await error.waitFor();
    assert.equal((await error.innerText()).trim(), message);
    assert.equal(await page.getByTestId("sandbox-row").count(), 0);
  });
});
