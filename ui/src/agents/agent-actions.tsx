// What the library and the builder both do with a saved agent: start a chat with it, delete it.

import type { Agent } from "@trueforge/sdk";
import { useCallback } from "react";
import { toast } from "sonner";
import { useNavigation } from "../app/router.js";
import { useServer } from "../embed/context.js";
import { ConfirmDelete } from "../settings/rows.js";
import { describeError } from "../state/errors.js";

/**
 * Starts a session with the agent named `name` and opens it. Resolves to `false` when the session could not
 * be created (the failure is toasted), so the caller can take its "Starting…" back.
 */
export function useStartChat(): (name: string) => Promise<boolean> {
  const server = useServer();
  const { navigate } = useNavigation();
  return useCallback(
    async (name: string) => {
      try {
        const session = await server.chat.createSession({ name });
        navigate({ name: "chat", sessionId: session.id });
        return true;
      } catch (error) {
        toast.error(`Could not start a chat with ${name}: ${describeError(error)}`);
        return false;
      }
    },
    [server, navigate],
  );
}

/** Delete, for a saved agent: it is gone for everyone, so the dialog says so. */
export function DeleteAgent({
  agent,
  remove,
  onDeleted,
  disabled,
  testId,
}: {
  readonly agent: Agent;
  readonly remove: () => Promise<unknown>;
  readonly onDeleted: () => void;
  readonly disabled?: boolean;
  readonly testId?: string;
}) {
  return (
    <ConfirmDelete
      what={agent.name}
      disabled={disabled}
      testId={testId}
      description={<p>The agent is removed from the library for everyone. This cannot be undone.</p>}
      remove={remove}
      onDeleted={onDeleted}
    />
  );
}
