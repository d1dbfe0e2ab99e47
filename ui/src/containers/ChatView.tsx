// A chat: the thread of a session (or an empty new chat), what it waits on, and the composer.

import { ActionBatch, type ApprovalScope, lastTurn, type Session, type TurnInputItem } from "@trueforge/sdk";
import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { toast } from "sonner";
import { useNavigation } from "../app/router.js";
import { useIsAdmin, useServer, useShell, useSlots } from "../embed/context.js";
import type { AgentUIServer } from "../server/port.js";
import { ConversationController } from "../state/conversation.js";
import { describeError } from "../state/errors.js";
import { attachmentPolicy, uniqueFileNames, useAgentSandbox, useCapabilities } from "./attachments.js";
import { type ChatSession, ChatSessionContext } from "./chat-session.js";
import { ModelPicker, useDefaultModel } from "./ModelPicker.js";
import { PendingActions } from "./PendingActions.js";
import { Thread } from "./Thread.js";

function readAsDataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error(`Could not read ${file.name}`));
    reader.readAsDataURL(file);
  });
}

async function messageInput(text: string, files: File[]): Promise<TurnInputItem[]> {
  if (files.length === 0) {
    return [{ type: "user.message", content: text }];
  }
  const parts: ({ type: "text"; text: string } | { type: "file"; name: string; data: string })[] = [];
  if (text !== "") {
    parts.push({ type: "text", text });
  }
  // Plain, unique names: a file that goes into the sandbox is written under its name.
  const names = uniqueFileNames(files.map((file) => file.name));
  for (const [index, file] of files.entries()) {
    parts.push({ type: "file", name: names[index] ?? file.name, data: await readAsDataUrl(file) });
  }
  return [{ type: "user.message", content: parts }];
}

function useController(server: AgentUIServer, sessionId: string | null): ConversationController {
  const current = useRef<ConversationController | null>(null);
  // A new chat that just got its session keeps its controller (and its open stream) across the address change.
  if (current.current === null || current.current.sessionId !== sessionId) {
    current.current?.dispose();
    current.current = new ConversationController(server, sessionId, {
      onError: (message) => toast.error(message),
    });
  }
  const controller = current.current;
  useEffect(() => {
    controller.revive();
    return () => controller.dispose();
  }, [controller]);
  return controller;
}

export function ChatView({ sessionId }: { readonly sessionId: string | null }) {
  const server = useServer();
  const shell = useShell();
  const isAdmin = useIsAdmin();
  const slots = useSlots();
  const { navigate } = useNavigation();
  const controller = useController(server, sessionId);
  const snapshot = useSyncExternalStore(controller.subscribe, controller.getSnapshot);
  const [session, setSession] = useState<Session | null>(null);
  const [model, setModel, models] = useDefaultModel();
  const [decisions, setDecisions] = useState(0);
  const capabilities = useCapabilities(server);
  // The server's request-body limit: what it reports in its capabilities, else what the port says.
  const maxRequestBytes = capabilities?.maxRequestBodyBytes ?? server.maxRequestBytes;
  const agentSandbox = useAgentSandbox(
    server,
    session !== null && session.id === sessionId ? session : null,
    sessionId,
    shell.mode,
  );
  const attachments = useMemo(
    () => attachmentPolicy(capabilities, agentSandbox),
    [capabilities, agentSandbox],
  );

  useEffect(() => {
    if (sessionId === null) {
      setSession(null);
      return;
    }
    let live = true;
    if (controller.getSnapshot().state.turns.length === 0 && !controller.getSnapshot().streaming) {
      void controller.load();
    }
    server.chat
      .getSession(sessionId)
      .then((value) => live && setSession(value))
      .catch((error: unknown) => live && toast.error(describeError(error)));
    return () => {
      live = false;
    };
  }, [server, controller, sessionId]);

  const pending = snapshot.state.pendingActions;
  const last = lastTurn(snapshot.state);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new batch exactly when the pending actions change.
  const batch = useMemo(() => new ActionBatch(pending, last?.id), [pending]);

  const submitIfComplete = useCallback(
    (next: ActionBatch) => {
      setDecisions((value) => value + 1);
      if (next.complete && next.calls.length > 0) {
        void controller.respond(next);
      }
    },
    [controller],
  );

  const createSession = useCallback(async () => {
    const mode = shell.mode;
    const created =
      mode.type === "agent"
        ? await server.chat.createSession({ name: mode.agentName })
        : await server.chat.createSession({ spec: { model: { name: model ?? "" } } });
    return created.id;
  }, [server, shell.mode, model]);

  const chat: ChatSession = {
    sessionId,
    session,
    controller,
    snapshot,
    batch,
    decisions,
    approve: (toolCallId: string, scope: ApprovalScope) =>
      submitIfComplete(batch.approve(toolCallId, { scope })),
    deny: (toolCallId: string, reason: string) =>
      submitIfComplete(batch.deny(toolCallId, reason || undefined)),
    answer: (toolCallId: string, content: string) => submitIfComplete(batch.answer(toolCallId, content)),
    branch: (previousTurnId: string, text: string) =>
      void controller.branch(previousTurnId, [{ type: "user.message", content: text }]),
  };

  const onSend = async (text: string, files: File[]) => {
    try {
      const input = await messageInput(text, files);
      await controller.send(input, {
        createSession,
        onSessionCreated: (id) => navigate({ name: "chat", sessionId: id }, { replace: true }),
      });
    } catch (error) {
      toast.error(describeError(error));
    }
  };

  const empty = snapshot.state.turns.length === 0 && snapshot.pendingInput === null;
  const needsModel = sessionId === null && shell.mode.type === "free" && !model;
  const agentName =
    session?.agent.type === "reference"
      ? session.agent.name
      : shell.mode.type === "agent"
        ? shell.mode.agentName
        : null;
  const waiting = batch.calls.length > 0 && !snapshot.streaming;
  return (
    <ChatSessionContext.Provider value={chat}>
      <div className="tf-chat" data-session-id={sessionId ?? ""}>
        {snapshot.loadError ? (
          <div className="tf-state" role="alert">
            <p>Could not open this chat: {snapshot.loadError}</p>
            <button type="button" className="tf-button" onClick={() => void controller.load()}>
              Try again
            </button>
          </div>
        ) : snapshot.loading && empty ? (
          <div className="tf-state" role="status">
            Loading…
          </div>
        ) : empty ? (
          <slots.WelcomeScreen agentName={agentName ?? null} brand={shell.brand} />
        ) : (
          <Thread />
        )}
        <PendingActions />
        <slots.Composer
          streaming={snapshot.streaming}
          disabled={needsModel || waiting}
          placeholder={
            waiting
              ? "Answer what the agent asks above first"
              : needsModel
                ? isAdmin
                  ? "Configure a model in Settings first"
                  : "No model is configured yet: ask an admin to add one"
                : "Message the agent…"
          }
          maxRequestBytes={maxRequestBytes}
          attachments={attachments}
          onSend={(text, files) => void onSend(text, files)}
          onStop={() => void controller.cancel()}
          accessory={
            sessionId === null && shell.mode.type === "free" ? (
              <ModelPicker value={model} models={models} onChange={setModel} />
            ) : undefined
          }
        />
      </div>
    </ChatSessionContext.Provider>
  );
}
