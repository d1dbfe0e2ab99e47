// @trueforge/sdk: the public surface.

export * from "./actions.js";
export { TrueForge, type TrueForgeOptions } from "./client.js";
export * from "./errors.js";
export * from "./events.js";
export * from "./fold/index.js";
export type { components, operations, paths } from "./generated/schema.js";
export {
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  type FetchFunction,
  HttpClient,
  type HttpOptions,
  IDEMPOTENCY_HEADER,
  isRepeatable,
  isRetryableStatus,
  parseRetryAfter,
  type RequestOptions,
  type RetryOptions,
  retryDelay,
  type TokenSupplier,
} from "./http.js";
export { outcomeOf, type TurnOutcome, type TurnReader, type WaitOptions, waitForTurn } from "./poll.js";
export type { Agents, AgentToolApprovals } from "./resources/agents.js";
export type { ApiKeys } from "./resources/api-keys.js";
export type { Auth, LoginCallbackQuery } from "./resources/auth.js";
export type { Catalogs } from "./resources/catalogs.js";
export type { McpServers, OAuthCallbackQuery } from "./resources/mcp-servers.js";
export type { ListScheduleRunsQuery, ListSchedulesQuery, Schedules } from "./resources/schedules.js";
export type { ListSessionEventsQuery, ListSessionsQuery, Sessions } from "./resources/sessions.js";
export type { Settings } from "./resources/settings.js";
export type {
  RespondStreamOptions,
  SubscribeOptions,
  TurnStreamOptions,
  Turns,
} from "./resources/turn-streams.js";
export type {
  CreateTurnOptions,
  ListTurnEventsQuery,
  ListTurnsQuery,
  ReadSandboxFileOptions,
  RespondOptions,
  TurnBody,
  TurnCalls,
} from "./resources/turns.js";
export * from "./resources/types.js";
export {
  DEFAULT_MAX_DOWNLOAD_BYTES,
  isSandboxPath,
  parseSandboxArtifacts,
  readLimitedBody,
  SANDBOX_ARTIFACTS_FENCE,
  type SandboxArtifact,
  type SandboxFileContent,
} from "./sandbox/artifacts.js";
export {
  EXEC_TOOL,
  type ExecArguments,
  type ExecCall,
  type ExecResult,
  execCallsIn,
  execCallsOf,
  parseExecResult,
} from "./sandbox/exec.js";
export {
  checkFileParts,
  DEFAULT_MEDIA_TYPE,
  type FileCheckOptions,
  type FileData,
  type FilePartOptions,
  filePart,
  isPlainFileName,
  isSandboxFile,
  MAX_FILE_NAME_BYTES,
  type ServerLimits,
} from "./sandbox/files.js";
export { type SseEvent, SseParser } from "./sse.js";
export {
  type CreateTurnBody,
  createTurnStream,
  type StreamOptions,
  type StreamTransport,
  subscribeTurnStream,
  type TurnStream,
} from "./stream.js";
