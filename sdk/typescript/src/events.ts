// The protocol's events, typed. The shapes come from the generated OpenAPI types; this module names them and
// closes the union: the document's catch-all `PassthroughEvent` (any other `type`) would make every `switch`
// on `type` ambiguous, so an event of a type this SDK does not know becomes an `UnknownEvent`, a variant with
// a discriminant of its own that keeps the event as received.

import type { components } from "./generated/schema.js";

type Schemas = components["schemas"];

export type TurnCreatedEvent = Schemas["TurnCreatedEvent"];
export type TurnDoneEvent = Schemas["TurnDoneEvent"];
export type ModelMessageEvent = Schemas["ModelMessageEvent"];
export type ModelMessageDeltaEvent = Schemas["ModelMessageDeltaEvent"];
export type ToolResponseEvent = Schemas["ToolResponseEvent"];
export type ThreadCreatedEvent = Schemas["ThreadCreatedEvent"];
export type ThreadDoneEvent = Schemas["ThreadDoneEvent"];
export type McpAuthRequiredEvent = Schemas["MCPAuthRequiredEvent"];
export type McpInitializeEvent = Schemas["MCPInitializeEvent"];
export type SandboxCreatedEvent = Schemas["SandboxCreatedEvent"];
export type ToolApprovalRequiredEvent = Schemas["ToolApprovalRequiredEvent"];
export type ToolResponseRequiredEvent = Schemas["ToolResponseRequiredEvent"];
/**
 * A thread's context was compacted (this server's event; the reference has none): its `summary` is what
 * the agent works from afterwards (`method: "summary"`), or the oldest tool outputs were cut
 * (`method: "truncation"`, no summary).
 */
export type ContextCompactedEvent = Schemas["ContextCompactedEvent"];

/** The `type` an event of a type this SDK does not know is given. */
export const UNKNOWN_EVENT = "trueforge.unknown" as const;

/** An event whose `type` this SDK does not know (a newer server, a custom server): carried through as received. */
export interface UnknownEvent {
  readonly type: typeof UNKNOWN_EVENT;
  /** The `type` the event arrived with. */
  readonly receivedType: string;
  /** The event as received. */
  readonly data: Readonly<Record<string, unknown>>;
}

/** The events a turn stores: what `GET …/events` and `GET …/turns/{id}/events` return. */
export type StoredEvent =
  | TurnCreatedEvent
  | TurnDoneEvent
  | ModelMessageEvent
  | ToolResponseEvent
  | ThreadCreatedEvent
  | ThreadDoneEvent
  | McpAuthRequiredEvent
  | McpInitializeEvent
  | SandboxCreatedEvent
  | ToolApprovalRequiredEvent
  | ToolResponseRequiredEvent
  | ContextCompactedEvent
  | UnknownEvent;

/** The events of a live turn stream: the stored ones and the stream-only answer deltas. */
export type TurnEvent = StoredEvent | ModelMessageDeltaEvent;

/** One event of a turn's stream with its sequence number (the SSE `id`). */
export interface SequencedEvent {
  readonly seq: number;
  readonly event: TurnEvent;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set<Exclude<TurnEvent, UnknownEvent>["type"]>([
  "turn.created",
  "turn.done",
  "model.message",
  "model.message.delta",
  "tool.response",
  "thread.created",
  "thread.done",
  "mcp.auth_required",
  "mcp.initialize",
  "sandbox.created",
  "tool.approval_required",
  "tool.response_required",
  "context.compacted",
]);

/** Whether `type` is one of the protocol's event types this SDK knows. */
export function isKnownEventType(type: string): boolean {
  return KNOWN_TYPES.has(type);
}

/**
 * Types a decoded JSON value as an event: a known `type` is trusted to carry its shape (the server is the
 * authority on it), any other `type` becomes an {@link UnknownEvent}. `null` when the value is not an
 * object with a string `type`.
 */
export function toTurnEvent(value: unknown): TurnEvent | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return null;
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== "string") {
    return null;
  }
  if (isKnownEventType(type)) {
    return value as TurnEvent;
  }
  return { type: UNKNOWN_EVENT, receivedType: type, data: value as Record<string, unknown> };
}
