// An MCP server's authorization as the builder and the settings show it: its state as a chip, and Connect
// (the OAuth popup), which says in a toast how it went.

import type { AvailableMcpServer } from "@trueforge/sdk";
import { toast } from "sonner";
import type { McpAuthPort } from "../server/port.js";
import { StatusChip } from "../settings/rows.js";
import { authorizeInPopup } from "../state/mcp-auth.js";

/** The auth status of a server, as a chip. */
export function AuthStatusChip({ status }: { readonly status: AvailableMcpServer["auth_status"]["status"] }) {
  switch (status) {
    case "authenticated":
      return <StatusChip tone="ok">Connected</StatusChip>;
    case "auth_required":
      return <StatusChip tone="warn">Needs authorization</StatusChip>;
    case "not_required":
      return <StatusChip tone="muted">No sign-in needed</StatusChip>;
  }
}

/**
 * Authorizes the current user for `name` in a popup and toasts the outcome; resolves to whether the server
 * is connected now. A popup that could not run rejects (the caller toasts it, with what it was doing).
 */
export async function connectInPopup(auth: McpAuthPort | undefined, name: string): Promise<boolean> {
  const done = await authorizeInPopup(auth, name, "");
  if (done.authorized) {
    toast.success(`Connected to ${name}.`);
  } else {
    toast.info(`${name} is not connected${done.reason ? `: ${done.reason}` : " yet."}`);
  }
  return done.authorized;
}
