// What the client tests share: a real server per test file, a client on it, and the agent setups the
// approval and question flows need.

import { fileURLToPath } from "node:url";
import { TrueForge, type TrueForgeOptions } from "../../src/index.js";
import { FAKE_MODEL, type RunningServer, startServer } from "../support/server.js";

export { FAKE_MODEL };

/** The MCP test server (built next to this file). */
export const MCP_FIXTURE = fileURLToPath(new URL("./fixtures/mcp-stdio.js", import.meta.url));

export interface Harness {
  readonly server: RunningServer;
  readonly tf: TrueForge;
  client(options?: Partial<TrueForgeOptions>): TrueForge;
  stop(): Promise<void>;
}

export async function harness(env: Record<string, string> = {}): Promise<Harness> {
  const server = await startServer(env);
  const client = (options: Partial<TrueForgeOptions> = {}) =>
    new TrueForge({ baseUrl: server.baseUrl, ...options });
  return { server, tf: client(), client, stop: () => server.stop() };
}

/** Configures the `drafts` MCP server (stdio) and saves an agent `name` using it with its tools preloaded. */
export async function draftsAgent(tf: TrueForge, name = "helper"): Promise<string> {
  const existing = await tf.settings.mcpServers.list();
  if (!existing.some((server) => server.name === "drafts")) {
    await tf.settings.mcpServers.create({
      type: "stdio",
      name: "drafts",
      description: "Drafts of the user.",
      command: process.execPath,
      args: [MCP_FIXTURE, "--serve"],
    });
  }
  const agent = await tf.agents.create({
    name,
    manifest: {
      model: { name: FAKE_MODEL },
      mcp_servers: [{ name: "drafts", preload: true }],
      config: { ask_user_questions: { enabled: true } },
    },
  });
  return agent.id;
}

/** A user message. */
export function say(content: string) {
  return { input: [{ type: "user.message" as const, content }] };
}
