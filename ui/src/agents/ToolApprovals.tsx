// The tools someone allowed "always" for a saved agent: every session of the agent runs them without
// asking, until the approval is revoked here.

import type { AgentToolApproval } from "@trueforge/sdk";
import { useMemo } from "react";
import { toast } from "sonner";
import { useServer } from "../embed/context.js";
import { ListRow, RowButton, useRowAction } from "../settings/rows.js";
import { Section } from "../settings/section.js";
import { EmptyState, LoadedList } from "../settings/states.js";
import { useLoad } from "../settings/useLoad.js";

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
  const revoking = useRowAction();
  if (!load) {
    return null;
  }
  const revoke = port?.revokeToolApproval;

  const onRevoke = async (approval: AgentToolApproval) => {
    if (!port || !revoke) {
      return;
    }
    const label = `${approval.tool_name} (${approval.mcp_server_name ?? "a deleted server"})`;
    await revoking.run(key(approval), `Could not revoke ${label}`, async () => {
      await revoke.call(port, agentId, approval.mcp_server_id, approval.tool_name);
      approvals.update((list) => list.filter((a) => key(a) !== key(approval)));
      toast.success(`${label} asks again from the next turn.`);
    });
  };

  return (
    <Section
      titleId="tf-approvals-title"
      title="Always-allowed tools"
      testId="tool-approvals"
      intro="Tools a user allowed for every chat with this agent. They run without asking until revoked; revoking takes effect from the next turn."
    >
      <LoadedList
        loaded={approvals}
        empty={
          (approvals.data ?? []).length === 0 ? (
            <EmptyState testId="tool-approvals-empty">No tool is always allowed.</EmptyState>
          ) : null
        }
        label="Always-allowed tools"
      >
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
                <RowButton
                  label={`Revoke ${approval.tool_name} of ${approval.mcp_server_name ?? "a deleted server"}`}
                  disabled={revoking.busy !== null}
                  onClick={() => void onRevoke(approval)}
                >
                  {revoking.busy === key(approval) ? "Revoking…" : "Revoke"}
                </RowButton>
              ) : null
            }
          />
        ))}
      </LoadedList>
    </Section>
  );
}
