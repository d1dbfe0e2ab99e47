// Names for the API's shapes, all taken from the generated document.

import { type StoredEvent, toTurnEvent, UNKNOWN_EVENT } from "../events.js";
import type { components } from "../generated/schema.js";

type Schemas = components["schemas"];

export type ActionRequiredEvent = Schemas["ActionRequiredEvent"];
export type Agent = Schemas["Agent"];
export type AgentInfo = Schemas["AgentInfo"];
export type AgentParent = Schemas["AgentParent"];
export type ApprovalScope = Schemas["ApprovalScope"];
export type AgentSpec = Schemas["AgentSpec"];
export type AgentToolApproval = Schemas["AgentToolApproval"];
/** An API key as listed: its id, name, `prefix` (first characters), role and creation time; never the key. */
export type ApiKey = Schemas["ApiKey"];
export type ApiKeyRole = Schemas["ApiKeyRole"];
export type AvailableMcpServer = Schemas["AvailableMCPServer"];
export type AvailableModel = Schemas["AvailableModel"];
export type AvailableSkill = Schemas["AvailableSkill"];
export type Capabilities = Schemas["CapabilitiesData"];
export type CatalogMcpServer = Schemas["CatalogMCPServer"];
export type CatalogModelProvider = Schemas["CatalogModelProvider"];
export type CatalogSandboxProvider = Schemas["CatalogSandboxProvider"];
export type ConfiguredMcpServer = Schemas["ConfiguredMCPServer"];
export type ConfiguredModelProvider = Schemas["ConfiguredModelProvider"];
export type ConfiguredSandboxProvider = Schemas["ConfiguredSandboxProvider"];
export type ConfiguredSkill = Schemas["ConfiguredSkill"];
export type CreateAgentRequest = Schemas["CreateAgentRequest"];
/** A key just made: the listed fields and `key` itself, which the server shows this once. */
export type CreatedApiKey = Schemas["CreatedApiKey"];
export type CreateSessionRequest = Schemas["CreateSessionRequest"];
export type CreateTurnRequest = Schemas["CreateTurnRequest"];
export type McpAuthStatus = Schemas["MCPAuthStatus"];
export type McpServerAuthInfo = Schemas["MCPServerAuthInfo"];
export type McpServerInitInfo = Schemas["MCPServerInitInfo"];
export type McpServerManifest = Schemas["MCPServerManifest"];
export type Me = Schemas["GetMeResponse"];
export type ModelProviderManifest = Schemas["ModelProviderManifest"];
export type SandboxProviderManifest = Schemas["SandboxProviderManifest"];
/** A saved agent run on a cron as the caller's sessions: `manifest` (task, cron, timezone), `state`, next and last run. */
export type Schedule = Schemas["Schedule"];
export type ScheduleManifest = Schemas["ScheduleManifest"];
/** A schedule's manifest as sent: `timezone` may be left out (`UTC`). */
export type ScheduleManifestInput = Omit<ScheduleManifest, "timezone"> &
  Partial<Pick<ScheduleManifest, "timezone">>;
/** A new schedule, or the whole of one that replaces it: `name`, `agent_id` (a saved agent) and `manifest`. */
export type ScheduleRequest = Omit<Schemas["ScheduleRequest"], "manifest"> & {
  manifest: ScheduleManifestInput;
};
/** One run of a schedule: its occurrence (`due_at`), `status`, `trigger`, and the session and turn it started. */
export type ScheduleRun = Schemas["ScheduleRun"];
export type ScheduleRunStatus = Schemas["ScheduleRunStatus"];
export type ScheduleRunTrigger = Schemas["ScheduleRunTrigger"];
export type ScheduleState = Schemas["ScheduleState"];
export type Session = Schemas["Session"];
/** A persisted event with the turn it belongs to; the event typed as a closed union (see `events.ts`). */
export interface SessionEventItem {
  readonly turn_id: Schemas["SessionEventItem"]["turn_id"];
  readonly event: StoredEvent;
}
export type SkillManifest = Schemas["SkillManifest"];
export type TokenPagination = Schemas["TokenPagination"];
export type Turn = Schemas["Turn"];
export type TurnInputItem = Schemas["TurnInputItem"];
export type TurnMetrics = Schemas["TurnMetrics"];
export type TurnState = Schemas["TurnState"];
export type UpdateSessionRequest = Schemas["UpdateSessionRequest"];
/** One part of a `user.message`'s content: text, or a file as a `data:` URI. */
export type UserMessageContentItem = Schemas["UserMessageContentItem"];
/** A file part of a `user.message`: `{type: "file", name, data: "data:<media type>;base64,<bytes>"}`. */
export type FileContentPart = Extract<UserMessageContentItem, { type: "file" }>;
export type UserToolApprovalEvent = Schemas["UserToolApprovalEvent"];
export type UserToolResponseEvent = Schemas["UserToolResponseEvent"];

/** A page of a paged list: the items and where the next page starts. */
export interface Page<T> {
  readonly data: T[];
  readonly pagination: TokenPagination;
}

/**
 * The pages of a paged list, fetched one by one as the loop asks for them, from `pageToken` (the first page
 * when absent) to the last.
 */
export async function* paginate<T>(
  fetchPage: (pageToken: string | undefined) => Promise<Page<T>>,
  pageToken?: string,
): AsyncGenerator<Page<T>, void, undefined> {
  let token = pageToken;
  for (;;) {
    const page = await fetchPage(token);
    yield page;
    token = page.pagination.next_page_token;
    if (!token) {
      return;
    }
  }
}

/** `query` with the page token `token` (without one when `undefined`). */
export function withPageToken<Q extends { readonly page_token?: string }>(
  query: Q,
  token: string | undefined,
): Q {
  const { page_token: _ignored, ...rest } = query;
  return (token === undefined ? rest : { ...rest, page_token: token }) as Q;
}

/** A persisted event as received, typed as a {@link StoredEvent} (an unknown `type` becomes an `UnknownEvent`). */
export function toStoredEvent(value: Schemas["SessionEvent"]): StoredEvent {
  return (
    (toTurnEvent(value) as StoredEvent | null) ?? {
      type: UNKNOWN_EVENT,
      receivedType: String((value as { type?: unknown }).type),
      data: value as Record<string, unknown>,
    }
  );
}
