// The client: one object with a property per resource of the API.

import { HttpClient, type HttpOptions, type RequestOptions } from "./http.js";
import { Agents } from "./resources/agents.js";
import { ApiKeys } from "./resources/api-keys.js";
import { Auth } from "./resources/auth.js";
import { Catalogs } from "./resources/catalogs.js";
import { McpServers } from "./resources/mcp-servers.js";
import { Schedules } from "./resources/schedules.js";
import { Sessions } from "./resources/sessions.js";
import { Settings } from "./resources/settings.js";
import { type TurnStreamOptions, Turns } from "./resources/turn-streams.js";
import type { AvailableModel, AvailableSkill, Capabilities } from "./resources/types.js";
import type { StreamTransport } from "./stream.js";

export interface TrueForgeOptions extends HttpOptions {
  /** Default options of every turn stream (reconnection and the like; see the stream module). */
  readonly stream?: TurnStreamOptions | undefined;
}

/**
 * A client of a TrueForge server.
 *
 * ```ts
 * const tf = new TrueForge({ baseUrl: "https://forge.example.com", token: () => session.accessToken });
 * const session = await tf.sessions.create({ agent: { name: "helper" } });
 * ```
 */
export class TrueForge {
  /** The request core; also the transport of the turn streams. */
  readonly http: HttpClient;
  readonly sessions: Sessions;
  readonly turns: Turns;
  readonly agents: Agents;
  readonly settings: Settings;
  readonly catalogs: Catalogs;
  readonly mcpServers: McpServers;
  readonly auth: Auth;
  readonly apiKeys: ApiKeys;
  readonly schedules: Schedules;
  readonly models: {
    /** Every model the tenant configured, named `provider/model`. */
    list(options?: RequestOptions): Promise<AvailableModel[]>;
  };
  readonly skills: {
    /** The tenant's skills, by name and description. */
    list(options?: RequestOptions): Promise<AvailableSkill[]>;
  };

  constructor(options: TrueForgeOptions) {
    const http = new HttpClient(options);
    this.http = http;
    this.sessions = new Sessions(http);
    this.turns = new Turns(http, options.stream);
    this.agents = new Agents(http);
    this.settings = new Settings(http);
    this.catalogs = new Catalogs(http);
    this.mcpServers = new McpServers(http);
    this.auth = new Auth(http);
    this.apiKeys = new ApiKeys(http);
    this.schedules = new Schedules(http);
    this.models = {
      list: async (requestOptions) => (await http.call("get", "/api/v1/models", requestOptions)).data,
    };
    this.skills = {
      list: async (requestOptions) => (await http.call("get", "/api/v1/skills", requestOptions)).data,
    };
  }

  /** The transport the turn streams use: base URL, credentials and default headers. */
  get transport(): StreamTransport {
    return this.http;
  }

  /** What the server offers the caller: sandbox, skills, settings. */
  async capabilities(options?: RequestOptions): Promise<Capabilities> {
    return (await this.http.call("get", "/api/v1/capabilities", options)).data;
  }
}
