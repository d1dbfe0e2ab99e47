// The decision on a tool call that waits for approval: allow once, for this session, or for every session of
// the saved agent; or deny, with a reason the agent reads.

import { useState } from "react";
import type { ChatSession } from "../containers/chat-session.js";

export function ApprovalBar({
  toolCallId,
  toolLabel,
  chat,
}: {
  readonly toolCallId: string;
  readonly toolLabel: string;
  readonly chat: ChatSession;
}) {
  const [denying, setDenying] = useState(false);
  const [reason, setReason] = useState("");
  const decided = chat.batch.decision(toolCallId);
  const savedAgent = chat.session?.agent.type === "reference";
  if (decided !== undefined) {
    const label =
      decided.kind === "approval" && decided.approval.status === "allow"
        ? `Allowed${decided.approval.scope && decided.approval.scope !== "once" ? ` for this ${decided.approval.scope}` : ""}`
        : "Denied";
    return (
      <div className="tf-approval tf-approval-decided" role="status">
        {label}; waiting for the other answers…
      </div>
    );
  }
  return (
    <section className="tf-approval" aria-label={`Approval required for ${toolLabel}`}>
      <p className="tf-approval-title">
        Approval required for <code>{toolLabel}</code>
      </p>
      {denying ? (
        <form
          className="tf-approval-deny"
          onSubmit={(event) => {
            event.preventDefault();
            chat.deny(toolCallId, reason.trim());
          }}
        >
          <label>
            Reason (the agent reads it)
            <input
              // biome-ignore lint/a11y/noAutofocus: the field was just opened by the user's own click.
              autoFocus
              value={reason}
              onChange={(event) => setReason(event.target.value)}
              placeholder="Why not?"
            />
          </label>
          <div className="tf-row">
            <button type="submit" className="tf-button tf-button-danger">
              Deny
            </button>
            <button type="button" className="tf-button tf-button-quiet" onClick={() => setDenying(false)}>
              Back
            </button>
          </div>
        </form>
      ) : (
        <div className="tf-row tf-wrap">
          <button
            type="button"
            className="tf-button tf-button-primary"
            onClick={() => chat.approve(toolCallId, "once")}
          >
            Allow once
          </button>
          <button type="button" className="tf-button" onClick={() => chat.approve(toolCallId, "session")}>
            Allow for this session
          </button>
          {savedAgent && (
            <button type="button" className="tf-button" onClick={() => chat.approve(toolCallId, "agent")}>
              Always allow for this agent
            </button>
          )}
          <button type="button" className="tf-button tf-button-quiet" onClick={() => setDenying(true)}>
            Deny…
          </button>
        </div>
      )}
    </section>
  );
}
