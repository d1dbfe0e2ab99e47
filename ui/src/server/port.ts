// The server port: everything the UI asks of a backend. The bundled app uses `createTrueForgeServer` (our HTTP
// API through the SDK); a host app may implement the port itself (a proxy, a test double, another harness)
// and hand it to `<TrueForgeUI server={…}/>`. Events are the SDK's closed union, so a custom backend streams
// exactly what the fold understands; optional parts switch their screens off when absent.

import type {
  Agent,
  AgentSpec,
  AgentToolApproval,
  ApiKey,
  AvailableMcpServer,
  AvailableModel,
  AvailableSkill,
  Capabilities,
  CatalogMcpServer,
  CatalogModelProvider,
  CatalogSandboxProvider,
  ConfiguredMcpServer,
  ConfiguredModelProvider,
  ConfiguredSandboxProvider,
  ConfiguredSkill,
  CreatedApiKey,
  McpAuthStatus,
  McpServerManifest,
  Me,
  ModelProviderManifest,
  Page,
  SandboxProviderManifest,
  Schedule,
  ScheduleRequest,
  ScheduleRun,
  SequencedEvent,
  Session,
  SessionEventItem,
  SkillManifest,
  Turn,
  TurnInputItem,
} from "@trueforge/sdk";

/** A stream of one turn's events; `close` stops it (no error is thrown to the reader). */
export interface TurnEventStream extends AsyncIterable<SequencedEvent> {
  readonly turnId: string | undefined;
  close(): void;
}

export interface NewTurn {
  readonly input: TurnInputItem[];
  /** The turn this one continues: `"auto"` (the latest), `"none"` (a fresh start) or a turn id (a branch). */
  readonly previousTurnId: string;
  readonly signal?: AbortSignal;
}

export interface SessionQuery {
  readonly limit?: number;
  readonly pageToken?: string;
  readonly agentId?: string;
}

export interface EventQuery {
  readonly pageToken?: string;
  readonly limit?: number;
  /** The branch to read: the events of this turn and its ancestors (the latest branch when absent). */
  readonly lastTurnId?: string;
}

/** The chat: sessions, turns and their events. */
export interface ChatPort {
  createSession(agent: { name: string } | { spec: AgentSpec }): Promise<Session>;
  listSessions(query: SessionQuery): Promise<Page<Session>>;
  getSession(sessionId: string): Promise<Session>;
  /** Absent: the list offers no rename. */
  renameSession?(sessionId: string, title: string): Promise<Session>;
  /** Absent: the list offers no delete. */
  deleteSession?(sessionId: string): Promise<void>;
  createTurn(sessionId: string, turn: NewTurn): TurnEventStream;
  /** Follows a running turn after `after` (the last sequence number seen). Absent: a refresh waits by polling. */
  subscribeTurn?(sessionId: string, turnId: string, after: number, signal?: AbortSignal): TurnEventStream;
  getTurn(sessionId: string, turnId: string): Promise<Turn>;
  cancel(sessionId: string): Promise<void>;
  listEvents(sessionId: string, query: EventQuery): Promise<Page<SessionEventItem>>;
  /** Absent: artifact links are shown without a download button. */
  downloadFile?(sessionId: string, turnId: string, path: string): Promise<Blob>;
}

/** What agents can be built from, and the saved agents. */
export interface AgentsPort {
  capabilities(): Promise<Capabilities>;
  models(): Promise<AvailableModel[]>;
  skills(): Promise<AvailableSkill[]>;
  mcpServers(): Promise<AvailableMcpServer[]>;
  mcpTools(server: string): Promise<Record<string, unknown>[]>;
  list(): Promise<Agent[]>;
  create(name: string, spec: AgentSpec): Promise<Agent>;
  update(agentId: string, spec: AgentSpec): Promise<Agent>;
  delete?(agentId: string): Promise<void>;
  toolApprovals?(agentId: string): Promise<AgentToolApproval[]>;
  revokeToolApproval?(agentId: string, mcpServer: string, tool: string): Promise<void>;
}

/** MCP authorization for the chat and the settings: the popup flow. */
export interface McpAuthPort {
  /** Starts an authorization; the authorization server sends the browser back to `returnTo`. */
  authorize(server: string, returnTo: string): Promise<McpAuthStatus>;
  disconnect(server: string): Promise<void>;
}

/** The admin settings: providers, MCP servers, skills, the sandbox provider. */
export interface SettingsPort {
  modelProviderCatalog(): Promise<CatalogModelProvider[]>;
  modelProviders(): Promise<ConfiguredModelProvider[]>;
  putModelProvider(manifest: ModelProviderManifest): Promise<ConfiguredModelProvider>;
  deleteModelProvider?(name: string): Promise<void>;
  mcpCatalog(): Promise<CatalogMcpServer[]>;
  mcpServers(): Promise<ConfiguredMcpServer[]>;
  putMcpServer(manifest: McpServerManifest): Promise<ConfiguredMcpServer>;
  deleteMcpServer?(name: string): Promise<void>;
  skillCatalog(): Promise<SkillManifest[]>;
  skills(): Promise<ConfiguredSkill[]>;
  putSkill(manifest: SkillManifest): Promise<ConfiguredSkill>;
  deleteSkill?(name: string): Promise<void>;
  sandboxCatalog(): Promise<CatalogSandboxProvider[]>;
  /** `null` when none is configured. */
  sandboxProvider(): Promise<ConfiguredSandboxProvider | null>;
  putSandboxProvider(manifest: SandboxProviderManifest): Promise<ConfiguredSandboxProvider>;
  deleteSandboxProvider?(): Promise<void>;
}

/**
 * Who is signed in, when the server has login (OIDC). A server without login answers `me()` with the local
 * user (`type: "default"`, an admin); a port without `auth` is open to everyone.
 */
export interface AuthPort {
  /** `null` when nobody is signed in and login is possible; throws on other failures. */
  me(): Promise<Me | null>;
  /** The server's login, which brings the browser back to `returnTo` (a path of the app). */
  loginUrl(returnTo: string): string;
  logout(): Promise<void>;
  /**
   * Calls `listener` whenever the server refuses a call with 401 (the login expired or was cleared); answers
   * what stops it. Absent: the UI learns it only when it asks `me()` again.
   */
  onUnauthorized?(listener: () => void): () => void;
}

/** The signed-in user's API keys: credentials for scripts, shown once when made. */
export interface ApiKeysPort {
  /** The user's keys, oldest first, without the keys themselves. */
  list(): Promise<ApiKey[]>;
  /** Makes a key; the answer's `key` is the only time it is shown. */
  create(name: string): Promise<CreatedApiKey>;
  revoke(keyId: string): Promise<void>;
}

export interface ScheduleRunQuery {
  readonly limit?: number;
  readonly pageToken?: string;
}

/**
 * The signed-in user's schedules: saved agents run on a cron (read in a time zone) as the user's own
 * sessions. Saves are refused (and the refusal shown) when the cron or zone is invalid, the cron runs more
 * often than the server allows, or the saved agent does not exist.
 */
export interface SchedulesPort {
  /** All the user's schedules, oldest first. */
  list(): Promise<Schedule[]>;
  create(request: ScheduleRequest): Promise<Schedule>;
  /** Replaces the name, agent and manifest of a schedule. */
  update(scheduleId: string, request: ScheduleRequest): Promise<Schedule>;
  /** Deletes the schedule and its runs; the sessions the runs started stay. */
  delete(scheduleId: string): Promise<void>;
  pause(scheduleId: string): Promise<Schedule>;
  /** Active again from now: what passed while it was paused does not run. */
  resume(scheduleId: string): Promise<Schedule>;
  /** Runs it now, paused or not: the run, `started` with its session, or `failed` with why. */
  run(scheduleId: string): Promise<ScheduleRun>;
  /** One page of the schedule's runs, newest first. */
  runs(scheduleId: string, query: ScheduleRunQuery): Promise<Page<ScheduleRun>>;
}

export interface AgentUIServer {
  readonly chat: ChatPort;
  readonly agents?: AgentsPort;
  readonly mcpAuth?: McpAuthPort;
  readonly settings?: SettingsPort;
  readonly auth?: AuthPort;
  /** Absent: no API keys page. */
  readonly apiKeys?: ApiKeysPort;
  /** Absent (or without `agents`): no schedules page. */
  readonly schedules?: SchedulesPort;
  /** The largest request body the server takes, when known: attachments over it are refused before sending. */
  readonly maxRequestBytes?: number;
}
