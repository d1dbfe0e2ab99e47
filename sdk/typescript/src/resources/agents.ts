// Saved agents and the tool approvals users gave for all of an agent's sessions.

import type { HttpClient, RequestOptions } from "../http.js";
import type { Agent, AgentSpec, AgentToolApproval, CreateAgentRequest } from "./types.js";

/** The tools allowed for every session of a saved agent (approval scope `agent`). */
export class AgentToolApprovals {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  async list(agentId: string, options?: RequestOptions): Promise<AgentToolApproval[]> {
    return (
      await this.#http.call("get", "/api/v1/agents/{agent_id}/tool-approvals", {
        ...options,
        path: { agent_id: agentId },
      })
    ).data;
  }

  /** Revokes every approval of the agent: its sessions ask again from their next turn. */
  async revokeAll(agentId: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/agents/{agent_id}/tool-approvals", {
      ...options,
      path: { agent_id: agentId },
    });
  }

  /** Revokes one tool (`mcpServer`: the server's id as listed, or its current name). */
  async revoke(agentId: string, mcpServer: string, tool: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/agents/{agent_id}/tool-approvals/{mcp_server}/{tool}", {
      ...options,
      path: { agent_id: agentId, mcp_server: mcpServer, tool },
    });
  }
}

export class Agents {
  readonly #http: HttpClient;
  readonly toolApprovals: AgentToolApprovals;

  constructor(http: HttpClient) {
    this.#http = http;
    this.toolApprovals = new AgentToolApprovals(http);
  }

  async list(options?: RequestOptions): Promise<Agent[]> {
    return (await this.#http.call("get", "/api/v1/agents", options)).data;
  }

  /** Saves an agent; everything its spec names must be configured (422 otherwise). */
  async create(body: CreateAgentRequest, options?: RequestOptions): Promise<Agent> {
    return (await this.#http.call("post", "/api/v1/agents", { ...options, body })).data;
  }

  async get(agentId: string, options?: RequestOptions): Promise<Agent> {
    return (
      await this.#http.call("get", "/api/v1/agents/{agent_id}", { ...options, path: { agent_id: agentId } })
    ).data;
  }

  /** Replaces an agent's spec (its name stays); its sessions use it from their next turn. */
  async update(agentId: string, manifest: AgentSpec, options?: RequestOptions): Promise<Agent> {
    return (
      await this.#http.call("put", "/api/v1/agents/{agent_id}", {
        ...options,
        path: { agent_id: agentId },
        body: { manifest },
      })
    ).data;
  }

  /** Deletes an agent; deleting one that does not exist succeeds too. */
  async delete(agentId: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/agents/{agent_id}", { ...options, path: { agent_id: agentId } });
  }
}
