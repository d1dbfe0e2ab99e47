// The chat history: the caller's sessions newest first, read page by page as the list scrolls, filtered by
// agent, each with rename and delete when the server offers them.

import * as DropdownMenu from "@radix-ui/react-dropdown-menu";
import type { Agent, Session } from "@trueforge/sdk";
import { useCallback, useEffect, useRef, useState } from "react";
import { toast } from "sonner";
import { useNavigation } from "../app/router.js";
import { formatCost, relativeTime } from "../atoms/format.js";
import { MoreIcon } from "../atoms/icons.js";
import { usePortalContainer, useServer } from "../embed/context.js";
import { describeError } from "../state/errors.js";

const PAGE = 25;

export function sessionTitle(session: Session): string {
  return session.title?.trim() || "New chat";
}

export function SessionList({
  refreshKey,
  onNavigate,
}: {
  readonly refreshKey: number | string;
  readonly onNavigate?: () => void;
}) {
  const server = useServer();
  const { route, navigate } = useNavigation();
  const [sessions, setSessions] = useState<Session[]>([]);
  const [token, setToken] = useState<string | undefined>(undefined);
  const [done, setDone] = useState(false);
  const [loading, setLoading] = useState(false);
  const [failed, setFailed] = useState<string | null>(null);
  const [agentId, setAgentId] = useState<string | null>(null);
  const [agents, setAgents] = useState<Agent[]>([]);
  const sentinel = useRef<HTMLLIElement>(null);
  const portal = usePortalContainer();
  const generation = useRef(0);

  const loadPage = useCallback(
    async (reset: boolean) => {
      const mine = reset ? ++generation.current : generation.current;
      setLoading(true);
      try {
        const page = await server.chat.listSessions({
          limit: PAGE,
          ...(reset || token === undefined ? {} : { pageToken: token }),
          ...(agentId ? { agentId } : {}),
        });
        if (mine !== generation.current) {
          return;
        }
        setSessions((current) =>
          reset ? page.data : [...current, ...page.data.filter((s) => !current.some((c) => c.id === s.id))],
        );
        setToken(page.pagination.next_page_token ?? undefined);
        setDone(!page.pagination.next_page_token);
        setFailed(null);
      } catch (error) {
        if (mine === generation.current) {
          setFailed(describeError(error));
        }
      } finally {
        if (mine === generation.current) {
          setLoading(false);
        }
      }
    },
    [server, token, agentId],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: reload from the top when the filter or the key changes.
  useEffect(() => {
    void loadPage(true);
  }, [agentId, refreshKey, server]);

  useEffect(() => {
    server.agents
      ?.list()
      .then(setAgents)
      .catch(() => setAgents([]));
  }, [server]);

  useEffect(() => {
    const element = sentinel.current;
    if (!element || done || loading || failed) {
      return;
    }
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) {
        void loadPage(false);
      }
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, [done, loading, failed, loadPage]);

  const rename = server.chat.renameSession;
  const remove = server.chat.deleteSession;
  const activeId = route.name === "chat" ? route.sessionId : null;

  return (
    <nav className="tf-sessions" aria-label="Chat history">
      <div className="tf-sessions-head">
        <h2>Chats</h2>
        {agents.length > 0 && (
          <label className="tf-filter">
            <span className="tf-visually-hidden">Filter by agent</span>
            <select value={agentId ?? ""} onChange={(event) => setAgentId(event.target.value || null)}>
              <option value="">All chats</option>
              {agents.map((agent) => (
                <option key={agent.id} value={agent.id}>
                  {agent.name}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      <ul className="tf-session-list">
        {sessions.map((session) => (
          <li
            key={session.id}
            className={session.id === activeId ? "tf-session tf-session-active" : "tf-session"}
          >
            <a
              href={`/sessions/${encodeURIComponent(session.id)}`}
              aria-current={session.id === activeId ? "page" : undefined}
              onClick={(event) => {
                if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) {
                  return;
                }
                event.preventDefault();
                navigate({ name: "chat", sessionId: session.id });
                onNavigate?.();
              }}
            >
              <span className="tf-session-title">{sessionTitle(session)}</span>
              <span className="tf-session-meta">
                {session.agent.type === "reference" && session.agent.name ? `${session.agent.name} · ` : ""}
                {relativeTime(session.updated_at)}
                {typeof session.total_cost_in_usd === "number" && session.total_cost_in_usd > 0 && (
                  <span className="tf-session-cost" title="What this chat's turns cost">
                    {` · ${formatCost(session.total_cost_in_usd)}`}
                  </span>
                )}
              </span>
            </a>
            {(rename || remove) && (
              <DropdownMenu.Root>
                <DropdownMenu.Trigger
                  className="tf-icon-button"
                  aria-label={`Actions for ${sessionTitle(session)}`}
                >
                  <MoreIcon />
                </DropdownMenu.Trigger>
                <DropdownMenu.Portal container={portal}>
                  <DropdownMenu.Content className="tf-menu" align="end" sideOffset={4}>
                    {rename && (
                      <DropdownMenu.Item
                        className="tf-menu-item"
                        onSelect={async () => {
                          const title = window.prompt("Rename chat", sessionTitle(session))?.trim();
                          if (!title) {
                            return;
                          }
                          try {
                            const updated = await rename.call(server.chat, session.id, title);
                            setSessions((list) => list.map((s) => (s.id === session.id ? updated : s)));
                          } catch (error) {
                            toast.error(`Could not rename: ${describeError(error)}`);
                          }
                        }}
                      >
                        Rename
                      </DropdownMenu.Item>
                    )}
                    {remove && (
                      <DropdownMenu.Item
                        className="tf-menu-item tf-menu-danger"
                        onSelect={async () => {
                          if (!window.confirm(`Delete “${sessionTitle(session)}” and all its messages?`)) {
                            return;
                          }
                          try {
                            await remove.call(server.chat, session.id);
                            setSessions((list) => list.filter((s) => s.id !== session.id));
                            if (activeId === session.id) {
                              navigate({ name: "chat", sessionId: null });
                            }
                          } catch (error) {
                            toast.error(`Could not delete: ${describeError(error)}`);
                          }
                        }}
                      >
                        Delete
                      </DropdownMenu.Item>
                    )}
                  </DropdownMenu.Content>
                </DropdownMenu.Portal>
              </DropdownMenu.Root>
            )}
          </li>
        ))}
        {failed && (
          <li className="tf-session-problem" role="alert">
            {failed}{" "}
            <button
              type="button"
              className="tf-button tf-button-quiet"
              onClick={() => void loadPage(sessions.length === 0)}
            >
              Retry
            </button>
          </li>
        )}
        {!done && !failed && (
          <li ref={sentinel} className="tf-session-more" aria-hidden="true">
            {loading ? "Loading…" : ""}
          </li>
        )}
        {done && sessions.length === 0 && <li className="tf-session-empty">No chats yet.</li>}
      </ul>
    </nav>
  );
}
