// Merging `model.message.delta`s into their message. One rule set, applied the same way whether a delta
// extends the message as it arrives or the message is rebuilt from its base (a late placeholder, a delta
// that arrived out of order). The result never shares a mutable part with its input.

import type { ModelMessageDeltaEvent, ModelMessageEvent } from "../events.js";
import type { components } from "../generated/schema.js";

type ToolCall = components["schemas"]["ToolCall"];
type AssistantContentPart = components["schemas"]["AssistantContentPart"];
type DeltaToolCall = components["schemas"]["ExtendedChunkDeltaToolCall"];

/**
 * A message being merged: the message, and for each of its `tool_calls` the delta `index` it was created
 * from (the wire keys tool-call fragments by `index`, which need not be dense or start at 0).
 */
export interface Merged {
  readonly message: ModelMessageEvent;
  readonly toolIndexes: readonly number[];
}

/** The message a delta that arrived before its base is merged into until the base arrives. */
export function provisionalBase(delta: ModelMessageDeltaEvent): ModelMessageEvent {
  return {
    type: "model.message",
    id: delta.id,
    thread_id: delta.thread_id,
    created_at: delta.created_at ?? "",
  };
}

function appendContent(
  content: ModelMessageEvent["content"],
  text: string,
): NonNullable<ModelMessageEvent["content"]> {
  if (content === undefined || content === null) {
    return text;
  }
  if (typeof content === "string") {
    return content + text;
  }
  const last = content.at(-1);
  if (last !== undefined && last.type === "text") {
    const parts: AssistantContentPart[] = content.slice(0, -1);
    parts.push({ ...last, text: last.text + text });
    return parts;
  }
  return [...content, { type: "text", text }];
}

function mergeToolCall(call: ToolCall | undefined, fragment: DeltaToolCall): ToolCall {
  const base: ToolCall = call ?? {
    id: "",
    type: "function",
    function: { name: "", arguments: "" },
    // Set from the fragment that names the call; the server attaches it to that fragment.
    tool_info: undefined as unknown as ToolCall["tool_info"],
  };
  const next: ToolCall = { ...base, function: { ...base.function } };
  if (fragment.id !== undefined) {
    next.id = fragment.id;
  }
  if (fragment.type !== undefined) {
    next.type = fragment.type;
  }
  if (fragment.function?.name !== undefined && fragment.function.name !== null) {
    next.function.name = fragment.function.name;
  }
  const args = fragment.function?.arguments;
  if (args !== undefined && args !== null) {
    next.function.arguments += args;
  }
  if (fragment.tool_info !== undefined) {
    next.tool_info = fragment.tool_info;
  }
  if (fragment.provider_specific_fields !== undefined) {
    next.provider_specific_fields = {
      ...base.provider_specific_fields,
      ...fragment.provider_specific_fields,
    };
  }
  if (next.tool_info === undefined) {
    // Not named yet: leave the key out rather than carry an `undefined` the stored copy never has.
    const { tool_info: _unset, ...rest } = next;
    return rest as ToolCall;
  }
  return next;
}

/**
 * Applies one delta:
 * - `content` is appended to a string, or to the last text part of an array (a new text part otherwise);
 * - `reasoning_content` and `refusal` are appended;
 * - `tool_calls` fragments are merged by `index`: a call is created the first time its index is seen, its
 *   `id`, `type`, `function.name` and `tool_info` are set when a fragment carries them, `function.arguments`
 *   is appended and `provider_specific_fields` is merged key by key;
 * - `finish_reason` and `usage` are replaced when present and not `null` (a `null` says nothing new).
 * `created_at` of a delta is ignored: the message's own comes from its base.
 */
export function applyDelta(merged: Merged, delta: ModelMessageDeltaEvent): Merged {
  const message: ModelMessageEvent = { ...merged.message };
  let toolIndexes = merged.toolIndexes;
  if (typeof delta.content === "string" && delta.content !== "") {
    message.content = appendContent(message.content, delta.content);
  }
  if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
    message.reasoning_content = (message.reasoning_content ?? "") + delta.reasoning_content;
  }
  if (typeof delta.refusal === "string" && delta.refusal !== "") {
    message.refusal = (message.refusal ?? "") + delta.refusal;
  }
  if (delta.tool_calls !== undefined && delta.tool_calls.length > 0) {
    const calls = [...(message.tool_calls ?? [])];
    const indexes = [...toolIndexes];
    for (const fragment of delta.tool_calls) {
      let position = indexes.indexOf(fragment.index);
      if (position < 0) {
        position = calls.length;
        indexes.push(fragment.index);
      }
      calls[position] = mergeToolCall(calls[position], fragment);
    }
    message.tool_calls = calls;
    toolIndexes = indexes;
  }
  if (delta.finish_reason !== undefined && delta.finish_reason !== null) {
    message.finish_reason = delta.finish_reason;
  }
  if (delta.usage !== undefined && delta.usage !== null) {
    message.usage = delta.usage;
  }
  return { message, toolIndexes };
}

/** The message `base` with `deltas` applied in order. */
export function mergeAll(base: ModelMessageEvent, deltas: readonly ModelMessageDeltaEvent[]): Merged {
  let merged: Merged = { message: base, toolIndexes: (base.tool_calls ?? []).map((_, index) => index) };
  for (const delta of deltas) {
    merged = applyDelta(merged, delta);
  }
  return merged;
}
