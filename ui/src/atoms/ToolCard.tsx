// A tool call: its tool (and MCP server), arguments, result, how long it took, and what it waits on. The card
// of a `create_sub_agent` call nests the sub-agent's thread; recall tools say what they brought back; the
// sandbox's `exec` shows its command, exit code and output.

import type { ToolCallView } from "@trueforge/sdk";
import { type ReactNode, useEffect, useState } from "react";
import type { ChatSession } from "../containers/chat-session.js";
import { ApprovalBar } from "./ApprovalBar.js";
import { ExecCommand, ExecOutput, ExitBadge } from "./exec.js";
import { isExec, parseExecCall, parseExecResult } from "./exec-format.js";
import { formatDuration, parseArguments, prettyJson } from "./format.js";
import { CheckIcon, ChevronIcon, TerminalIcon, ToolIcon, XIcon } from "./icons.js";

export interface ToolCardProps {
  readonly view: ToolCallView;
  /** When the message that made the call was created (the start of the elapsed time). */
  readonly startedAt: string | null;
  readonly chat: ChatSession;
  /** The sub-agent's thread, rendered by the thread view (for `create_sub_agent`). */
  readonly subAgent?: ReactNode;
}

const RECALL_TOOLS = new Set(["read_history", "search_history", "recall"]);

export function toolLabel(view: ToolCallView): string {
  const info = view.call.tool_info;
  return info.type === "mcp" ? `${info.name} (${info.server_name})` : view.call.function.name;
}

function useElapsed(startedAt: string | null, endedAt: string | null): string {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (endedAt !== null || startedAt === null) {
      return;
    }
    const timer = setInterval(() => setNow(Date.now()), 500);
    return () => clearInterval(timer);
  }, [startedAt, endedAt]);
  if (startedAt === null) {
    return "";
  }
  const end = endedAt === null ? now : Date.parse(endedAt);
  return formatDuration(end - Date.parse(startedAt));
}

export function ToolCard({ view, startedAt, chat, subAgent }: ToolCardProps) {
  const response = view.response;
  const waiting = view.waitingFor;
  const exec = isExec(view);
  // An exec card shows its output from the start: the output is what the call is for.
  const [open, setOpen] = useState(waiting !== null || exec);
  useEffect(() => {
    if (waiting !== null) {
      setOpen(true);
    }
  }, [waiting]);
  const elapsed = useElapsed(startedAt, response?.created_at ?? null);
  const name = view.call.function.name;
  const label = toolLabel(view);
  const execCall = exec ? parseExecCall(view.call.function.arguments) : null;
  const execResult = exec && response !== null ? parseExecResult(response.content) : null;
  const failed =
    response !== null &&
    (execResult !== null ? execResult.kind === "failed" : /^(error|Error)\b/.test(response.content));
  // A client-side call (a question) gets no tool response: the user's answer is its result.
  const answeredByUser = view.answer?.type === "user.tool_response";
  const status =
    response !== null
      ? failed
        ? "failed"
        : "done"
      : answeredByUser
        ? "done"
        : waiting !== null
          ? "waiting"
          : "running";
  const args = parseArguments(view.call.function.arguments);
  const title =
    execCall !== null
      ? (execCall.intent ?? "Run a command")
      : name === "create_sub_agent"
        ? `Sub-agent: ${view.subAgentThread?.title ?? (typeof args?.name === "string" ? args.name : "…")}`
        : RECALL_TOOLS.has(name)
          ? `Recalled history (${name})`
          : label;
  const answered = view.answer;
  const exitCode = execResult?.kind === "ran" ? execResult.exitCode : null;
  return (
    <div
      className={`tf-tool tf-tool-${status}${exec ? " tf-exec" : ""}${exitCode !== null && exitCode !== 0 ? " tf-exec-nonzero" : ""}`}
      data-tool={name}
      data-status={status}
      data-exit-code={exitCode ?? undefined}
    >
      <button
        type="button"
        className="tf-tool-head"
        aria-expanded={open}
        onClick={() => setOpen((value) => !value)}
      >
        <ChevronIcon className={open ? "tf-rotate" : ""} />
        {exec ? <TerminalIcon /> : <ToolIcon />}
        <span className="tf-tool-title">{title}</span>
        {view.call.tool_info.type === "mcp" && (
          <span className="tf-chip">MCP · {view.call.tool_info.server_name}</span>
        )}
        {exec && <span className="tf-chip">Sandbox</span>}
        {exec && <ExitBadge code={exitCode} />}
        <span className="tf-tool-status" title={status}>
          <span className="tf-visually-hidden">{status}</span>
          {status === "done" ? (
            <CheckIcon />
          ) : status === "failed" ? (
            <XIcon />
          ) : status === "waiting" ? (
            "waiting"
          ) : exec ? null : (
            // An exec card spins next to its command instead.
            <span className="tf-spinner" />
          )}
        </span>
        <span className="tf-tool-elapsed">{elapsed}</span>
      </button>
      {execCall !== null && <ExecCommand call={execCall} running={status === "running"} />}
      {waiting === "approval" && <ApprovalBar toolCallId={view.call.id} toolLabel={label} chat={chat} />}
      {open && execResult !== null && (
        <div className="tf-tool-body">
          {execResult.kind === "ran" ? (
            <ExecOutput output={execResult.output} />
          ) : execResult.kind === "failed" ? (
            <p className="tf-exec-error" data-testid="exec-error">
              {execResult.error}
            </p>
          ) : (
            <section>
              <h4>Result</h4>
              <pre className="tf-json tf-result">{execResult.text}</pre>
            </section>
          )}
        </div>
      )}
      {open && execResult === null && !(exec && response === null && answered === null) && (
        <div className="tf-tool-body">
          <section>
            <h4>Arguments</h4>
            <pre className="tf-json">{prettyJson(view.call.function.arguments)}</pre>
          </section>
          {answered !== null && (
            <section>
              <h4>Your answer</h4>
              <pre className="tf-json">
                {answered.type === "user.tool_approval"
                  ? answered.approval.status === "allow"
                    ? `allowed${answered.approval.scope ? ` (${answered.approval.scope})` : ""}`
                    : `denied${answered.approval.reason ? `: ${answered.approval.reason}` : ""}`
                  : answered.content}
              </pre>
            </section>
          )}
          {response !== null && (
            <section>
              <h4>Result</h4>
              <pre className="tf-json tf-result">{prettyJson(response.content)}</pre>
            </section>
          )}
        </div>
      )}
      {subAgent}
    </div>
  );
}
