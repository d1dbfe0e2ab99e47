// MCP servers as a chat user sees them: which exist, whether the caller must authorize them, their tools.

import type { operations } from "../generated/schema.js";
import { type HttpClient, queryString, type RequestOptions } from "../http.js";
import type { AvailableMcpServer, ConfiguredMcpServer, McpAuthStatus } from "./types.js";

export type OAuthCallbackQuery = operations["mcp_oauth_callback"]["parameters"]["query"];

export class McpServers {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  /** The tenant's MCP servers with the caller's authorization state. */
  async list(options?: RequestOptions): Promise<AvailableMcpServer[]> {
    return (await this.#http.call("get", "/api/v1/mcp-servers", options)).data;
  }

  /** The tools a server offers, as it lists them (422 while the caller has to authorize it). */
  async tools(name: string, options?: RequestOptions): Promise<Record<string, unknown>[]> {
    return (await this.#http.call("get", "/api/v1/mcp-servers/{name}/tools", { ...options, path: { name } }))
      .data;
  }

  /**
   * Starts (or reports) the caller's authorization of a server. For an OAuth server not yet authorized:
   * `{status: "auth_required", authorization_url}`; send the user there. `returnTo` is a path of the
   * server's origin the browser comes back to.
   */
  authorize(
    name: string,
    options: RequestOptions & { readonly returnTo?: string } = {},
  ): Promise<McpAuthStatus> {
    const { returnTo, ...rest } = options;
    return this.#http.call("get", "/api/v1/mcp-servers/{name}/authorize", {
      ...rest,
      path: { name },
      query: returnTo === undefined ? undefined : { return_to: returnTo },
    });
  }

  /** Where to send the user to authorize a server; `undefined` when nothing is needed (authorized, or no OAuth). */
  async authorizationUrl(
    name: string,
    options: RequestOptions & { readonly returnTo?: string } = {},
  ): Promise<string | undefined> {
    const status = await this.authorize(name, options);
    return status.status === "auth_required" ? status.authorization_url : undefined;
  }

  /** Forgets the caller's OAuth token for a server. */
  async disconnect(name: string, options?: RequestOptions): Promise<ConfiguredMcpServer> {
    return (
      await this.#http.call("delete", "/api/v1/mcp-servers/{name}/authorize", { ...options, path: { name } })
    ).data;
  }

  /**
   * The OAuth callback address with its query, as the authorization server calls it; for a client that
   * completes an authorization itself (a CLI) rather than through the browser.
   */
  oauthCallbackUrl(query: OAuthCallbackQuery): string {
    return this.#http.url(`/api/v1/mcp-servers/oauth/callback${queryString(query)}`);
  }

  /** Completes an authorization with the code and state the authorization server returned. */
  async completeAuthorization(query: OAuthCallbackQuery, options?: RequestOptions): Promise<void> {
    await this.#http.call("get", "/api/v1/mcp-servers/oauth/callback", { ...options, query });
  }
}
