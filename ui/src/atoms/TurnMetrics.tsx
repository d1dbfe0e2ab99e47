import type { TurnView } from "@trueforge/sdk";
import { formatCost, formatDuration, formatTokens } from "./format.js";

/** What a finished turn cost: tokens in / out (cached, reasoning), cost, duration, tool calls. */
export function TurnMetrics({ turn }: { readonly turn: TurnView }) {
  const metrics = turn.metrics;
  const state = turn.state;
  if (metrics === null || state === null || state.status === "running") {
    return null;
  }
  const completed =
    "completed_at" in state && typeof state.completed_at === "string" ? state.completed_at : null;
  const duration = turn.createdAt && completed ? Date.parse(completed) - Date.parse(turn.createdAt) : null;
  const parts: string[] = [];
  if (metrics.total_input_tokens !== undefined) {
    const cached = metrics.total_cache_read_tokens
      ? `, ${formatTokens(metrics.total_cache_read_tokens)} cached`
      : "";
    parts.push(`${formatTokens(metrics.total_input_tokens)} in${cached}`);
  }
  if (metrics.total_output_tokens !== undefined) {
    const reasoning = metrics.total_reasoning_tokens
      ? `, ${formatTokens(metrics.total_reasoning_tokens)} reasoning`
      : "";
    parts.push(`${formatTokens(metrics.total_output_tokens)} out${reasoning}`);
  }
  if (metrics.total_cost_in_usd !== undefined) {
    parts.push(formatCost(metrics.total_cost_in_usd));
  }
  if (duration !== null && duration >= 0) {
    parts.push(formatDuration(duration));
  }
  if (metrics.total_tool_calls) {
    parts.push(`${metrics.total_tool_calls} tool ${metrics.total_tool_calls === 1 ? "call" : "calls"}`);
  }
  if (metrics.total_summarizations) {
    parts.push(`${metrics.total_summarizations} compaction${metrics.total_summarizations === 1 ? "" : "s"}`);
  }
  if (parts.length === 0) {
    return null;
  }
  return (
    <div className="tf-metrics" data-testid="turn-metrics" title="Tokens, cost and time of this turn">
      {parts.join(" · ")}
    </div>
  );
}
