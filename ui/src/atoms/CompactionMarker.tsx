// Where the agent's context was compacted: what it did, in numbers, and the summary the agent works from
// since (the history above stays readable here and recallable by the agent).

import type { CompactionView } from "@trueforge/sdk";
import { formatTokens } from "./format.js";
import { Markdown } from "./Markdown.js";

export function CompactionMarker({ compaction }: { readonly compaction: CompactionView }) {
  const event = compaction.event;
  const numbers = `≈${formatTokens(event.tokens_before)} → ${formatTokens(event.tokens_after)} tokens`;
  const title =
    event.method === "summary"
      ? `Context compacted: ${event.replaced_messages} messages summarised (${numbers})`
      : `Context shortened: ${event.replaced_messages} old tool results cut (${numbers})`;
  return (
    <details className="tf-compaction" data-testid="compaction" data-method={event.method}>
      <summary>{title}</summary>
      {event.summary ? (
        <>
          <p>The agent continues from this summary; the messages above stay recallable by it.</p>
          <Markdown text={event.summary} />
        </>
      ) : (
        <p>The full tool results stay recallable by the agent.</p>
      )}
    </details>
  );
}
