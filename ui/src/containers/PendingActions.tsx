// What the conversation waits on besides approvals (those sit in their tool cards): every pending question to
// the user, each with its options and a free answer, and MCP servers to authorize, each through a popup after
// which the turn continues.

import { messageById, type ToolCallView, toolCallsOf } from "@trueforge/sdk";
import { useState } from "react";
import { toast } from "sonner";
import { parseArguments } from "../atoms/format.js";
import { useServer } from "../embed/context.js";
import { describeError } from "../state/errors.js";
import { authorizeInPopup } from "../state/mcp-auth.js";
import { type ChatSession, useChatSession } from "./chat-session.js";

function pendingQuestions(chat: ChatSession): ToolCallView[] {
  const state = chat.snapshot.state;
  const views: ToolCallView[] = [];
  for (const call of chat.batch.calls) {
    if (call.kind !== "response") {
      continue;
    }
    const source = messageById(state, call.sourceEventId);
    const view = source
      ? toolCallsOf(state, source.id).find((candidate) => candidate.call.id === call.toolCallId)
      : undefined;
    if (view) {
      views.push(view);
    }
  }
  return views;
}

function Question({
  view,
  chat,
  index,
  total,
}: {
  readonly view: ToolCallView;
  readonly chat: ChatSession;
  readonly index: number;
  readonly total: number;
}) {
  const args = parseArguments(view.call.function.arguments) ?? {};
  const question = typeof args.question === "string" ? args.question : view.call.function.arguments;
  const options = Array.isArray(args.options)
    ? args.options.filter((option): option is string => typeof option === "string")
    : [];
  const [choice, setChoice] = useState<string | null>(options[0] ?? null);
  const [other, setOther] = useState("");
  const decided = chat.batch.decision(view.call.id);
  const name = `q-${view.call.id}`;
  const answer = choice === null ? other.trim() : choice;
  if (decided) {
    return (
      <div className="tf-question tf-question-answered" role="status">
        <p className="tf-question-text">{question}</p>
        <p>Answered: {decided.kind === "response" ? decided.content : ""}</p>
      </div>
    );
  }
  return (
    <form
      className="tf-question"
      aria-label={`Question ${index + 1} of ${total}`}
      onSubmit={(event) => {
        event.preventDefault();
        if (answer !== "") {
          chat.answer(view.call.id, answer);
        }
      }}
    >
      <p className="tf-question-text" id={`${name}-label`}>
        {total > 1 && (
          <span className="tf-chip">
            {index + 1}/{total}
          </span>
        )}{" "}
        {question}
      </p>
      <div role="radiogroup" aria-labelledby={`${name}-label`} className="tf-options">
        {options.map((option) => (
          <label key={option} className="tf-option">
            <input type="radio" name={name} checked={choice === option} onChange={() => setChoice(option)} />
            {option}
          </label>
        ))}
        <label className="tf-option tf-option-other">
          {options.length > 0 && (
            <input type="radio" name={name} checked={choice === null} onChange={() => setChoice(null)} />
          )}
          <input
            type="text"
            aria-label="Your answer"
            placeholder={options.length > 0 ? "Something else…" : "Your answer"}
            value={other}
            onFocus={() => setChoice(null)}
            onChange={(event) => setOther(event.target.value)}
          />
        </label>
      </div>
      <button type="submit" className="tf-button tf-button-primary" disabled={answer === ""}>
        Answer
      </button>
    </form>
  );
}

function McpAuthorization({ chat }: { readonly chat: ChatSession }) {
  const server = useServer();
  const [connected, setConnected] = useState<Record<string, boolean>>({});
  const servers = chat.batch.mcpAuthorizations;
  const auth = server.mcpAuth;
  return (
    <section className="tf-mcp-auth" aria-label="MCP authorization required">
      <p className="tf-question-text">
        The agent needs access to {servers.length === 1 ? "a server" : "these servers"}:
      </p>
      <ul>
        {servers.map((info) => (
          <li key={info.id} className="tf-row">
            <span>{info.name}</span>
            {connected[info.name] ? (
              <span className="tf-chip">connected</span>
            ) : (
              <button
                type="button"
                className="tf-button"
                onClick={async () => {
                  try {
                    const outcome = await authorizeInPopup(auth, info.name, info.auth_url);
                    if (outcome.authorized) {
                      setConnected((value) => ({ ...value, [info.name]: true }));
                    } else {
                      toast.error(
                        `${info.name} was not authorized${outcome.reason ? `: ${outcome.reason}` : "."}`,
                      );
                    }
                  } catch (error) {
                    toast.error(`Could not authorize ${info.name}: ${describeError(error)}`);
                  }
                }}
              >
                Connect ↗
              </button>
            )}
          </li>
        ))}
      </ul>
      <button
        type="button"
        className="tf-button tf-button-primary"
        onClick={() => void chat.controller.continueAfterAuthorization()}
      >
        Continue
      </button>
    </section>
  );
}

export function PendingActions() {
  const chat = useChatSession();
  if (chat.snapshot.streaming) {
    return null;
  }
  const questions = pendingQuestions(chat);
  const needsAuth = chat.batch.mcpAuthorizations.length > 0;
  if (questions.length === 0 && !needsAuth) {
    return null;
  }
  return (
    <div className="tf-pending-actions">
      {questions.map((view, index) => (
        <Question key={view.call.id} view={view} chat={chat} index={index} total={questions.length} />
      ))}
      {needsAuth && <McpAuthorization chat={chat} />}
    </div>
  );
}
