// The tenant's configuration (admins only): MCP servers, model providers, skills, the sandbox provider.
// Secrets come back redacted; sending a redacted value back keeps the stored one. Deleting (this server's
// addition; the reference has no settings deletes) cascades to nothing that names the resource: an agent or
// session naming a deleted one is refused (422) on its next turn, as if it had never been configured.

import type { HttpClient, RequestOptions } from "../http.js";
import type {
  ConfiguredMcpServer,
  ConfiguredModelProvider,
  ConfiguredSandboxProvider,
  ConfiguredSkill,
  McpServerManifest,
  ModelProviderManifest,
  SandboxProviderManifest,
  SkillManifest,
} from "./types.js";

class McpServerSettings {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  async list(options?: RequestOptions): Promise<ConfiguredMcpServer[]> {
    return (await this.#http.call("get", "/api/v1/settings/mcp-servers", options)).data;
  }

  async get(name: string, options?: RequestOptions): Promise<ConfiguredMcpServer> {
    return (
      await this.#http.call("get", "/api/v1/settings/mcp-servers/{name}", { ...options, path: { name } })
    ).data;
  }

  /** Adds a server (409 when one of that name exists). */
  async create(manifest: McpServerManifest, options?: RequestOptions): Promise<ConfiguredMcpServer> {
    return (await this.#http.call("post", "/api/v1/settings/mcp-servers", { ...options, body: { manifest } }))
      .data;
  }

  /** Creates or replaces a server. */
  async put(manifest: McpServerManifest, options?: RequestOptions): Promise<ConfiguredMcpServer> {
    return (await this.#http.call("put", "/api/v1/settings/mcp-servers", { ...options, body: { manifest } }))
      .data;
  }

  /**
   * Deletes a server with every user's OAuth token and MCP session (404 when there is none of that name).
   * Configured again under the same name, it starts afresh: its users authorize it anew.
   */
  async delete(name: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/settings/mcp-servers/{name}", { ...options, path: { name } });
  }
}

class ModelProviderSettings {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  async list(options?: RequestOptions): Promise<ConfiguredModelProvider[]> {
    return (await this.#http.call("get", "/api/v1/settings/model-providers", options)).data;
  }

  /** Adds a provider (409 when one of that name exists). */
  async create(manifest: ModelProviderManifest, options?: RequestOptions): Promise<ConfiguredModelProvider> {
    return (
      await this.#http.call("post", "/api/v1/settings/model-providers", { ...options, body: { manifest } })
    ).data;
  }

  /** Creates or replaces a provider. */
  async put(manifest: ModelProviderManifest, options?: RequestOptions): Promise<ConfiguredModelProvider> {
    return (
      await this.#http.call("put", "/api/v1/settings/model-providers", { ...options, body: { manifest } })
    ).data;
  }

  /** Deletes a provider (404 when there is none of that name). */
  async delete(name: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/settings/model-providers/{name}", {
      ...options,
      path: { name },
    });
  }
}

class SkillSettings {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  async list(options?: RequestOptions): Promise<ConfiguredSkill[]> {
    return (await this.#http.call("get", "/api/v1/settings/skills", options)).data;
  }

  /** Adds a skill (409 when one of that name exists). */
  async create(manifest: SkillManifest, options?: RequestOptions): Promise<ConfiguredSkill> {
    return (await this.#http.call("post", "/api/v1/settings/skills", { ...options, body: { manifest } }))
      .data;
  }

  /** Creates or replaces a skill. */
  async put(manifest: SkillManifest, options?: RequestOptions): Promise<ConfiguredSkill> {
    return (await this.#http.call("put", "/api/v1/settings/skills", { ...options, body: { manifest } })).data;
  }

  /** Deletes a skill (404 when there is none of that name). */
  async delete(name: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/settings/skills/{name}", { ...options, path: { name } });
  }
}

class SandboxProviderSettings {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  /** The tenant's sandbox provider and its image build (404 when none is configured). */
  async get(options?: RequestOptions): Promise<ConfiguredSandboxProvider> {
    return (await this.#http.call("get", "/api/v1/settings/sandbox-providers", options)).data;
  }

  /** Sets the tenant's sandbox provider. */
  async put(manifest: SandboxProviderManifest, options?: RequestOptions): Promise<ConfiguredSandboxProvider> {
    return (
      await this.#http.call("put", "/api/v1/settings/sandbox-providers", { ...options, body: { manifest } })
    ).data;
  }

  /** Removes the tenant's sandbox provider (404 when none is configured). */
  async delete(options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/settings/sandbox-providers", options);
  }
}

export class Settings {
  readonly mcpServers: McpServerSettings;
  readonly modelProviders: ModelProviderSettings;
  readonly skills: SkillSettings;
  readonly sandboxProvider: SandboxProviderSettings;

  constructor(http: HttpClient) {
    this.mcpServers = new McpServerSettings(http);
    this.modelProviders = new ModelProviderSettings(http);
    this.skills = new SkillSettings(http);
    this.sandboxProvider = new SandboxProviderSettings(http);
  }
}
