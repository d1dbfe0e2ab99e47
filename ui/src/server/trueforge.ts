// The port over our own HTTP API, through the SDK: what the bundled app uses.

import {
  type AgentSpec,
  type FetchFunction,
  type Schedule,
  type TokenSupplier,
  TrueForge,
  TrueForgeApiError,
  TrueForgeAuthenticationError,
  type TurnStream,
} from "@trueforge/sdk";
import type { AgentUIServer, TurnEventStream } from "./port.js";

export interface TrueForgeServerOptions {
  /** The server's address; `""` for the page's own origin (the bundled app). */
  readonly baseUrl: string;
  /** A Bearer token (or a supplier of one), for a host app that holds the user's credentials. */
  readonly token?: TokenSupplier;
  /** Sends cookies (the OIDC login cookie) with every call; on by default for the page's own origin. */
  readonly credentials?: RequestCredentials;
  readonly fetch?: FetchFunction;
  /** The largest request body the server takes (it refuses larger ones with 413). */
  readonly maxRequestBytes?: number;
}

/** The request-body limit of a default server (`TRUEFORGE_BODY_LIMIT`), used when the host says nothing. */
export const DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024;

function asEventStream(stream: TurnStream): TurnEventStream {
  return {
    get turnId() {
      return stream.turnId;
    },
    close: () => stream.close(),
    [Symbol.asyncIterator]: () => stream[Symbol.asyncIterator](),
  };
}

function isStatus(error: unknown, status: number): boolean {
  return error instanceof TrueForgeApiError && error.status === status;
}

/** An `AgentUIServer` talking to a TrueForge server (ours, or any server of the same API). */
export function createTrueForgeServer(options: TrueForgeServerOptions): AgentUIServer {
  // Every call goes through this fetch: a 401 from any of them (a call, a turn stream) tells the listeners
  // that the login is gone.
  const unauthorized = new Set<() => void>();
  const baseFetch: FetchFunction = options.fetch ?? ((input, init) => fetch(input, init));
  const watchedFetch: FetchFunction = async (input, init) => {
    const response = await baseFetch(input, init);
    if (response.status === 401) {
      for (const listener of [...unauthorized]) {
        listener();
      }
    }
    return response;
  };
  const client = new TrueForge({
    baseUrl: options.baseUrl,
    token: options.token,
    credentials: options.credentials ?? (options.baseUrl === "" ? "same-origin" : undefined),
    fetch: watchedFetch,
  });
  return {
    maxRequestBytes: options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES,
    chat: {
      createSession: (agent) => client.sessions.create({ agent }),
      listSessions: (query) =>
        client.sessions.list({
          limit: query.limit ?? 25,
          ...(query.pageToken ? { page_token: query.pageToken } : {}),
          ...(query.agentId ? { agent_id: query.agentId } : {}),
        }),
      getSession: (sessionId) => client.sessions.get(sessionId),
      renameSession: (sessionId, title) => client.sessions.update(sessionId, { title }),
      deleteSession: (sessionId) => client.sessions.delete(sessionId),
      createTurn: (sessionId, turn) =>
        asEventStream(
          client.turns.stream(
            sessionId,
            { input: turn.input, previous_turn_id: turn.previousTurnId },
            turn.signal ? { signal: turn.signal } : {},
          ),
        ),
      subscribeTurn: (sessionId, turnId, after, signal) =>
        asEventStream(client.turns.subscribe(sessionId, turnId, signal ? { after, signal } : { after })),
      getTurn: (sessionId, turnId) => client.turns.get(sessionId, turnId),
      cancel: (sessionId) => client.sessions.cancel(sessionId),
      listEvents: (sessionId, query) =>
        client.sessions.events(sessionId, {
          limit: query.limit ?? 100,
          ...(query.pageToken ? { page_token: query.pageToken } : {}),
          ...(query.lastTurnId ? { last_turn_id: query.lastTurnId } : {}),
        }),
      downloadFile: async (sessionId, turnId, path) =>
        (await client.turns.downloadSandboxFile(sessionId, turnId, path)).blob(),
    },
    agents: {
      capabilities: () => client.capabilities(),
      models: () => client.models.list(),
      skills: () => client.skills.list(),
      mcpServers: () => client.mcpServers.list(),
      mcpTools: (server) => client.mcpServers.tools(server),
      list: () => client.agents.list(),
      create: (name, spec: AgentSpec) => client.agents.create({ name, manifest: spec }),
      update: (agentId, spec) => client.agents.update(agentId, spec),
      delete: (agentId) => client.agents.delete(agentId),
      toolApprovals: (agentId) => client.agents.toolApprovals.list(agentId),
      revokeToolApproval: (agentId, server, tool) =>
        client.agents.toolApprovals.revoke(agentId, server, tool),
    },
    mcpAuth: {
      authorize: (server, returnTo) => client.mcpServers.authorize(server, { returnTo }),
      disconnect: async (server) => {
        await client.mcpServers.disconnect(server);
      },
    },
    settings: {
      modelProviderCatalog: () => client.catalogs.modelProviders(),
      modelProviders: () => client.settings.modelProviders.list(),
      putModelProvider: (manifest) => client.settings.modelProviders.put(manifest),
      deleteModelProvider: (name) => client.settings.modelProviders.delete(name),
      mcpCatalog: () => client.catalogs.mcpServers(),
      mcpServers: () => client.settings.mcpServers.list(),
      putMcpServer: (manifest) => client.settings.mcpServers.put(manifest),
      deleteMcpServer: (name) => client.settings.mcpServers.delete(name),
      skillCatalog: () => client.catalogs.skills(),
      skills: () => client.settings.skills.list(),
      putSkill: (manifest) => client.settings.skills.put(manifest),
      deleteSkill: (name) => client.settings.skills.delete(name),
      sandboxCatalog: () => client.catalogs.sandboxProviders(),
      sandboxProvider: async () => {
        try {
          return await client.settings.sandboxProvider.get();
        } catch (error) {
          if (isStatus(error, 404)) {
            return null;
          }
          throw error;
        }
      },
      putSandboxProvider: (manifest) => client.settings.sandboxProvider.put(manifest),
      deleteSandboxProvider: () => client.settings.sandboxProvider.delete(),
    },
    auth: {
      me: async () => {
        try {
          return await client.auth.me();
        } catch (error) {
          if (error instanceof TrueForgeAuthenticationError) {
            return null;
          }
          throw error;
        }
      },
      loginUrl: (returnTo) => client.auth.loginUrl(returnTo),
      logout: () => client.auth.logout(),
      onUnauthorized: (listener) => {
        unauthorized.add(listener);
        return () => {
          unauthorized.delete(listener);
        };
      },
    },
    apiKeys: {
      list: () => client.apiKeys.list(),
      create: (name) => client.apiKeys.create(name),
      revoke: (keyId) => client.apiKeys.revoke(keyId),
    },
    schedules: {
      list: async () => {
        const all: Schedule[] = [];
        for await (const page of client.schedules.pages({ limit: 100 })) {
          all.push(...page.data);
        }
        return all;
      },
      create: (request) => client.schedules.create(request),
      update: (scheduleId, request) => client.schedules.update(scheduleId, request),
      delete: (scheduleId) => client.schedules.delete(scheduleId),
      pause: (scheduleId) => client.schedules.pause(scheduleId),
      resume: (scheduleId) => client.schedules.resume(scheduleId),
      run: (scheduleId) => client.schedules.run(scheduleId),
      runs: (scheduleId, query) =>
        client.schedules.runs(scheduleId, {
          limit: query.limit ?? 20,
          ...(query.pageToken ? { page_token: query.pageToken } : {}),
        }),
    },
  };
}
