// Starts the real `trueforge` binary and the testkit's `fake-llm` model server for a test file, on free ports
// and a temporary data directory, with the fake configured as the model provider `fake` (model
// `fake/fake-model`). No HTTP is mocked: the SDK talks to the server the README ships.
//
// The binaries: TRUEFORGE_BIN and FAKE_LLM_BIN, else the workspace's release builds
// (`cargo build --release -p trueforge --bin trueforge -p trueforge-testkit --bin fake-llm`).

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const WORKSPACE = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../../../..");

export const FAKE_MODEL = "fake/fake-model";

export interface RunningServer {
  /** The server's base URL, e.g. `http://127.0.0.1:41234`. */
  readonly baseUrl: string;
  /** The fake model server's base URL. */
  readonly fakeLlmUrl: string;
  /** Stops both processes and removes the data directory. */
  stop(): Promise<void>;
}

function binary(variable: string, name: string): string {
  const path = process.env[variable] ?? join(WORKSPACE, "target", "release", name);
  if (!existsSync(path)) {
    throw new Error(
      `${path} does not exist: build it (cargo build --release -p trueforge --bin trueforge -p trueforge-testkit --bin fake-llm) or set ${variable}`,
    );
  }
  return path;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export async function waitUntil(
  check: () => Promise<boolean>,
  what: string,
  child: ChildProcess,
  log: () => string,
) {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`${what} exited with ${child.exitCode}:\n${log()}`);
    }
    if (await check().catch(() => false)) {
      return;
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`${what} did not start within 20 s:\n${log()}`);
}

export function start(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; log: () => string } {
  const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  // A process that cannot start (not executable) reports it here; `waitUntil` then sees it never answered.
  child.on("error", (error) => {
    output += `cannot start ${command}: ${error.message}\n`;
  });
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, log: () => output };
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  await new Promise<void>((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
  });
}

export interface StartOptions {
  /** The port to listen on (one the caller had to know first, e.g. for a login redirect); a free one by default. */
  readonly port?: number;
  /** Sent as `Authorization: Bearer` when configuring the fake provider (a server with login needs an admin's). */
  readonly adminToken?: string;
}

/** Starts a fresh server and fake model server. `env` adds server variables. */
export async function startServer(
  env: Record<string, string> = {},
  options: StartOptions = {},
): Promise<RunningServer> {
  const dataDir = await mkdtemp(join(tmpdir(), "trueforge-sdk-test-"));
  const fakePort = await freePort();
  const fake = start(binary("FAKE_LLM_BIN", "fake-llm"), ["--port", String(fakePort)], process.env);
  const fakeLlmUrl = `http://127.0.0.1:${fakePort}`;
  const port = options.port ?? (await freePort());
  const baseUrl = `http://127.0.0.1:${port}`;
  const server = start(binary("TRUEFORGE_BIN", "trueforge"), ["serve", "--port", String(port)], {
    PATH: process.env.PATH ?? "",
    TRUEFORGE_DATA_DIR: dataDir,
    RUST_LOG: process.env.RUST_LOG ?? "warn",
    ...env,
  });
  const stop = async () => {
    await Promise.all([stopChild(server.child), stopChild(fake.child)]);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    // Any HTTP answer from the fake (even a 404) means it is listening.
    await waitUntil(async () => (await fetch(`${fakeLlmUrl}/`)).status > 0, "fake-llm", fake.child, fake.log);
    await waitUntil(
      async () => (await fetch(`${baseUrl}/healthz`)).ok,
      "trueforge",
      server.child,
      server.log,
    );
    const provider = await fetch(`${baseUrl}/api/v1/settings/model-providers`, {
      method: "PUT",
      headers: {
        "content-type": "application/json",
        ...(options.adminToken ? { authorization: `Bearer ${options.adminToken}` } : {}),
      },
      body: JSON.stringify({
        manifest: {
          type: "custom",
          name: "fake",
          base_url: `${fakeLlmUrl}/v1`,
          auth: { api_key: "fake-key" },
          models: [{ model_id: "fake-model", name: "fake-model", properties: {} }],
        },
      }),
    });
    if (!provider.ok) {
      throw new Error(`configuring the fake provider failed: ${provider.status} ${await provider.text()}`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { baseUrl, fakeLlmUrl, stop };
}
