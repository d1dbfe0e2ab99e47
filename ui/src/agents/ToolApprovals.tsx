// The tools someone allowed "always" for a saved agent: every session of the agent runs them without
// asking, until the approval is revoked here.

import type { AgentToolApproval } from "@trueforge/sdk";
import { useMemo, useState } from "react";
import { toast } from "sonner";
import { useServer } from "../embed/context.js";
import { EmptyState, ErrorState, ListRow, LoadingState } from "../settings/fields.js";
import { useLoad } from "../settings/useLoad.js";
import { describeError } from "../state/errors.js";

function when(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? ""
    : ` · allowed ${date.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" })}`;
}

function key(approval: AgentToolApproval): string {
  return `${approval.mcp_server_id}\u0000${approval.tool_name}`;
}

export function ToolApprovals({ agentId }: { readonly agentId: string }) {
  const port = useServer().agents;
  const load = useMemo(() => {
    const list = port?.toolApprovals;
    return port && list ? () => list.call(port, agentId) : null;
  }, [port, agentId]);
  const approvals = useLoad(load, "the always-allowed tools");
  const [revoking, setRevoking] = useState<string | null>(null);
  if (!load) {
    return null;
  }
  const revoke = port?.revokeToolApproval;

  const onRevoke = async (approval: AgentToolApproval) => {
    if (!port || !revoke) {
      return;
    }
    const label = `${approval.tool_name} (${approval.mcp_server_name ?? "a deleted server"})`;
    setRevoking(key(approval));
    try {
      await revoke.call(port, agentId, approval.mcp_server_id, approval.tool_name);
      approvals.update((list) => list.filter((a) => key(a) !== key(approval)));
      toast.success(`${label} asks again from the next turn.`);
    } catch (error) {
      toast.error(`Could not revoke ${label}: ${describeError(error)}`);
    } finally {
      setRevoking(null);
    }
  };

  return (
    <section className="tf-section" aria-labelledby="tf-approvals-title" data-testid="tool-approvals">
      <h2 id="tf-approvals-title">Always-allowed tools</h2>
      <p className="tf-field-hint">
        Tools a user allowed for every chat with this agent. They run without asking until revoked; revoking
        takes effect from the next turn.
      </p>
      {approvals.loading && !approvals.data ? (
        <LoadingState />
      ) : approvals.error && !approvals.data ? (
        <ErrorState message={approvals.error} onRetry={approvals.reload} />
      ) : (approvals.data ?? []).length === 0 ? (
        <EmptyState testId="tool-approvals-empty">No tool is always allowed.</EmptyState>
      ) : (
        <ul className="tf-list" aria-label="Always-allowed tools">
          {(approvals.data ?? []).map((approval) => (
            <ListRow
              key={key(approval)}
              testId="tool-approval-row"
              name={approval.tool_name}
              title={<span className="tf-mono">{approval.tool_name}</span>}
              subtitle={
                <>
                  {approval.mcp_server_name ?? "A deleted MCP server"}
                  {when(approval.created_at)}
                </>
              }
              actions={
                revoke ? (
                  <button
                    type="button"
                    className="tf-button"
                    aria-label={`Revoke ${approval.tool_name} of ${approval.mcp_server_name ?? "a deleted server"}`}
                    disabled={revoking !== null}
                    onClick={() => void onRevoke(approval)}
                  >
                    {revoking === key(approval) ? "Revoking…" : "Revoke"}
                  </button>
                ) : null
              }
            />
          ))}
        </ul>
      )}
    </section>
  );
}
