// Presets the settings screens offer: well-known model providers, MCP servers, skills, sandbox providers.

import type { HttpClient, RequestOptions } from "../http.js";
import type {
  CatalogMcpServer,
  CatalogModelProvider,
  CatalogSandboxProvider,
  SkillManifest,
} from "./types.js";

export class Catalogs {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  async mcpServers(options?: RequestOptions): Promise<CatalogMcpServer[]> {
    return (await this.#http.call("get", "/api/v1/catalogs/mcp-servers", options)).data;
  }

  /** The well-known providers, then the entry for custom ones. */
  async modelProviders(options?: RequestOptions): Promise<CatalogModelProvider[]> {
    return (await this.#http.call("get", "/api/v1/catalogs/model-providers", options)).data;
  }

  async sandboxProviders(options?: RequestOptions): Promise<CatalogSandboxProvider[]> {
    return (await this.#http.call("get", "/api/v1/catalogs/sandbox-providers", options)).data;
  }

  async skills(options?: RequestOptions): Promise<SkillManifest[]> {
    return (await this.#http.call("get", "/api/v1/catalogs/skills", options)).data;
  }
}
