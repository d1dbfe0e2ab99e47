// The tenant's remote sandbox provider against the testkit's fake Daytona (`fake-daytona`, reached by the
// server at DAYTONA_API_URL): a wrong key is refused (422) and nothing is saved, the right one is saved with
// its key redacted, and deleting it brings the server back to no provider.
//
// The binary: FAKE_DAYTONA_BIN, else the workspace's release build
// (`cargo build --release -p trueforge-testkit --bin fake-daytona`); the file fails without it.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { type SandboxProviderManifest, TrueForgeApiError } from "../../src/index.js";
import { type Harness, harness } from "./helpers.js";

const WORKSPACE = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../../../..");
const FAKE_DAYTONA = process.env.FAKE_DAYTONA_BIN ?? resolve(WORKSPACE, "target/release/fake-daytona");
const RIGHT_KEY = "right-daytona-key";

function manifest(apiKey: string): SandboxProviderManifest {
  return {
    type: "daytona",
    auth: { api_key: apiKey },
    exec_timeout_ms: 60_000,
    auto_stop_interval_in_minutes: 15,
    auto_archive_interval_in_minutes: 60,
    auto_delete_interval_in_minutes: 120,
  };
}

/** Starts `fake-daytona` on a free port; resolves with the API URL it prints once it listens. */
function startFakeDaytona(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(FAKE_DAYTONA, ["--port", "0", "--api-key", RIGHT_KEY], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  return new Promise((resolveStart, reject) => {
    const timer = setTimeout(() => reject(new Error(`fake-daytona did not start:\n${output}`)), 20_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const url = /fake-daytona listening on (\S+)/.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        resolveStart({ url, child });
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

describe("settings.sandboxProvider against a fake Daytona", () => {
  let daytona: ChildProcess | undefined;
  let h: Harness | undefined;

  before(async () => {
    // Fails rather than skips: scripts/test.sh builds the binary, so a missing one is a broken setup.
    assert.ok(
      existsSync(FAKE_DAYTONA),
      `${FAKE_DAYTONA} is missing: cargo build --release -p trueforge-testkit --bin fake-daytona`,
    );
    const started = await startFakeDaytona();
    daytona = started.child;
    h = await harness({ DAYTONA_API_URL: started.url });
  });

  after(async () => {
    await h?.stop();
    await stopChild(daytona);
  });

  test("a wrong key is refused (422), the right one saved with its key redacted, delete removes it", async () => {
    const tf = (h as Harness).tf;
    await assert.rejects(tf.settings.sandboxProvider.put(manifest("wrong-key")), (error: unknown) => {
      assert.ok(error instanceof TrueForgeApiError, String(error));
      assert.equal(error.status, 422, error.message);
      assert.match(error.error?.message ?? "", /rejected the API key/);
      return true;
    });
    await assert.rejects(tf.settings.sandboxProvider.get(), (error: unknown) => {
      assert.ok(error instanceof TrueForgeApiError && error.status === 404, String(error));
      return true;
    });

    const saved = await tf.settings.sandboxProvider.put(manifest(RIGHT_KEY));
    assert.equal(saved.manifest.type, "daytona");
    assert.notEqual(saved.manifest.auth.api_key, RIGHT_KEY, "the key is not sent back");
    assert.equal(typeof saved.status, "string");
    const read = await tf.settings.sandboxProvider.get();
    assert.deepEqual(read.manifest, saved.manifest);
    assert.equal(read.manifest.exec_timeout_ms, 60_000);

    assert.equal(await tf.settings.sandboxProvider.delete(), undefined);
    await assert.rejects(tf.settings.sandboxProvider.get(), (error: unknown) => {
      assert.ok(error instanceof TrueForgeApiError && error.status === 404, String(error));
      return true;
    });
  });
});
