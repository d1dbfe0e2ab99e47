// The messages of one turn: the user's input, then the assistant's messages of the root thread with their
// reasoning, text and tool calls (a sub-agent's thread nested in the card of the call that started it).

import {
  type ConversationState,
  type MessageView,
  reasoningOf,
  type TimelineEntry,
  type TurnInputItem,
  type TurnView,
  threadTimeline,
  toolCallsOf,
} from "@trueforge/sdk";
import { useState } from "react";
import { CompactionMarker } from "../atoms/CompactionMarker.js";
import { formatBytes } from "../atoms/format.js";
import { CopyIcon, EditIcon } from "../atoms/icons.js";
import { Markdown } from "../atoms/Markdown.js";
import { TurnMetrics } from "../atoms/TurnMetrics.js";
import { useSlots } from "../embed/context.js";
import { type ChatSession, useChatSession } from "./chat-session.js";

export function messageText(view: MessageView): string {
  const content = view.message.content;
  if (typeof content === "string") {
    return content;
  }
  if (Array.isArray(content)) {
    return content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join("");
  }
  return "";
}

export function userText(input: readonly TurnInputItem[]): string {
  const parts: string[] = [];
  for (const item of input) {
    if (item.type !== "user.message") {
      continue;
    }
    if (typeof item.content === "string") {
      parts.push(item.content);
    } else {
      for (const part of item.content) {
        if (part.type === "text") {
          parts.push(part.text);
        }
      }
    }
  }
  return parts.join("\n");
}

function userFiles(input: readonly TurnInputItem[]): { name: string; size: number }[] {
  const files: { name: string; size: number }[] = [];
  for (const item of input) {
    if (item.type === "user.message" && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (part.type === "file") {
          const payload = part.data.slice(part.data.indexOf(",") + 1);
          files.push({ name: part.name, size: Math.floor((payload.length * 3) / 4) });
        }
      }
    }
  }
  return files;
}

function Reasoning({ text, streaming }: { readonly text: string; readonly streaming: boolean }) {
  return (
    <details className="tf-reasoning" open={streaming}>
      <summary>{streaming ? "Thinking…" : "Reasoning"}</summary>
      <div className="tf-reasoning-body">{text}</div>
    </details>
  );
}

function AssistantMessage({
  state,
  view,
  chat,
  streaming,
  depth,
}: {
  readonly state: ConversationState;
  readonly view: MessageView;
  readonly chat: ChatSession;
  readonly streaming: boolean;
  readonly depth: number;
}) {
  const { MessageBubble, ToolCard } = useSlots();
  const text = messageText(view);
  const reasoning = reasoningOf(state, view.id);
  const calls = toolCallsOf(state, view.id);
  return (
    <MessageBubble author="assistant" threadId={view.threadId}>
      {reasoning && <Reasoning text={reasoning} streaming={streaming && text === "" && calls.length === 0} />}
      {text && <Markdown text={text} streaming={streaming} turnId={view.turnId} />}
      {view.message.refusal && <p className="tf-refusal">Refused: {view.message.refusal}</p>}
      {calls.map((call) => (
        <ToolCard
          key={call.call.id}
          view={call}
          startedAt={view.message.created_at ?? null}
          chat={chat}
          subAgent={
            call.subAgentThread && depth < 4 ? (
              <section className="tf-subagent" aria-label={`Sub-agent ${call.subAgentThread.title ?? ""}`}>
                {threadTimeline(state, call.subAgentThread.id).map((entry) =>
                  entry.kind === "compaction" ? (
                    <CompactionMarker key={entry.compaction.event.id} compaction={entry.compaction} />
                  ) : (
                    <AssistantMessage
                      key={entry.message.id}
                      state={state}
                      view={entry.message}
                      chat={chat}
                      streaming={call.subAgentThread?.status === "running"}
                      depth={depth + 1}
                    />
                  ),
                )}
                {call.subAgentThread.error && <p className="tf-error-text">{call.subAgentThread.error}</p>}
              </section>
            ) : undefined
          }
        />
      ))}
    </MessageBubble>
  );
}

function UserMessage({
  turn,
  chat,
  editable,
}: {
  readonly turn: TurnView;
  readonly chat: ChatSession;
  readonly editable: boolean;
}) {
  const { MessageBubble } = useSlots();
  const [editing, setEditing] = useState(false);
  const text = userText(turn.input);
  const [draft, setDraft] = useState(text);
  const files = userFiles(turn.input);
  if (text === "" && files.length === 0) {
    return null;
  }
  const previous = turn.previousTurnId ?? "none";
  if (editing) {
    return (
      <form
        className="tf-edit"
        onSubmit={(event) => {
          event.preventDefault();
          setEditing(false);
          chat.branch(previous, draft);
        }}
      >
        <label className="tf-visually-hidden" htmlFor={`edit-${turn.id}`}>
          Edit your message
        </label>
        <textarea
          id={`edit-${turn.id}`}
          value={draft}
          // biome-ignore lint/a11y/noAutofocus: opened by the user's click on Edit.
          autoFocus
          onChange={(event) => setDraft(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === "Escape") {
              setEditing(false);
            }
          }}
        />
        <div className="tf-row">
          <button type="submit" className="tf-button tf-button-primary" disabled={draft.trim() === ""}>
            Send as a new branch
          </button>
          <button type="button" className="tf-button tf-button-quiet" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </div>
      </form>
    );
  }
  return (
    <MessageBubble
      author="user"
      threadId="main"
      actions={
        editable ? (
          <>
            <button
              type="button"
              className="tf-icon-button"
              aria-label="Edit and resend"
              title="Edit"
              onClick={() => {
                setDraft(text);
                setEditing(true);
              }}
            >
              <EditIcon />
            </button>
            <button
              type="button"
              className="tf-icon-button"
              aria-label="Retry"
              title="Retry"
              onClick={() => chat.branch(previous, text)}
            >
              ↻
            </button>
            <button
              type="button"
              className="tf-icon-button"
              aria-label="Copy"
              title="Copy"
              onClick={() => void navigator.clipboard?.writeText(text)}
            >
              <CopyIcon />
            </button>
          </>
        ) : undefined
      }
    >
      {text && <p className="tf-user-text">{text}</p>}
      {files.length > 0 && (
        <ul className="tf-files">
          {files.map((file) => (
            <li key={file.name} className="tf-chip">
              {file.name} · {formatBytes(file.size)}
            </li>
          ))}
        </ul>
      )}
    </MessageBubble>
  );
}

function turnOf(entry: TimelineEntry): string {
  return entry.kind === "message" ? entry.message.turnId : entry.compaction.turnId;
}

/** One turn: the user's message, the answer, and what the turn ended with. */
export function TurnBlock({ turn, isLast }: { readonly turn: TurnView; readonly isLast: boolean }) {
  const chat = useChatSession();
  const state = chat.snapshot.state;
  const streaming = turn.status === "running";
  const timeline = threadTimeline(state).filter((entry) => turnOf(entry) === turn.id);
  const lastMessage = timeline.findLast((entry) => entry.kind === "message");
  const idle = !chat.snapshot.streaming;
  return (
    <div className="tf-turn" data-turn-id={turn.id} data-status={turn.status}>
      <UserMessage turn={turn} chat={chat} editable={idle} />
      {timeline.map((entry) =>
        entry.kind === "compaction" ? (
          <CompactionMarker key={entry.compaction.event.id} compaction={entry.compaction} />
        ) : (
          <AssistantMessage
            key={entry.message.id}
            state={state}
            view={entry.message}
            chat={chat}
            streaming={streaming && entry === lastMessage}
            depth={0}
          />
        ),
      )}
      {streaming && lastMessage === undefined && (
        <div className="tf-typing" role="status" aria-label="The agent is working">
          <span />
          <span />
          <span />
        </div>
      )}
      {turn.status === "failed" && (
        <div className="tf-turn-error" role="alert">
          The turn failed: {turn.error}
        </div>
      )}
      {turn.status === "cancelled" && <div className="tf-turn-note">Stopped.</div>}
      {(!streaming || !isLast) && <TurnMetrics turn={turn} />}
    </div>
  );
}
