// The agents library: the saved agents, searchable, each with Chat (a new session with the agent), Edit
// (the builder) and Delete; and the way to a new agent.

import type { Agent } from "@trueforge/sdk";
import { useCallback, useEffect, useMemo, useState } from "react";
import { toast } from "sonner";
import { useNavigation } from "../app/router.js";
import { BotIcon, EditIcon, PlusIcon } from "../atoms/icons.js";
import { useServer, useShell } from "../embed/context.js";
import { ConfirmDelete, EmptyState, ErrorState, LoadingState } from "../settings/fields.js";
import { useLoad } from "../settings/useLoad.js";
import { describeError } from "../state/errors.js";
import "../settings/screens.css";

const SEARCH_DELAY_MS = 250;

/** `value`, once it has stopped changing for `delay` ms. */
export function useDebounced<T>(value: T, delay: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), delay);
    return () => clearTimeout(timer);
  }, [value, delay]);
  return settled;
}

/** The model's own name without its provider: `openai/gpt-5` → `gpt-5`. */
export function shortModelName(name: string): string {
  const slash = name.lastIndexOf("/");
  return slash >= 0 ? name.slice(slash + 1) : name;
}

function matches(agent: Agent, words: readonly string[]): boolean {
  const haystack = [agent.name, agent.manifest.model.name, agent.manifest.instructions ?? ""]
    .join("\n")
    .toLowerCase();
  return words.every((word) => haystack.includes(word));
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}

export default function AgentsLibrary() {
  const server = useServer();
  const shell = useShell();
  const { navigate } = useNavigation();
  const agentsPort = server.agents;
  const load = useMemo(() => (agentsPort ? () => agentsPort.list() : null), [agentsPort]);
  const agents = useLoad(load, "the agents");
  const [query, setQuery] = useState("");
  const search = useDebounced(query, SEARCH_DELAY_MS);
  const [starting, setStarting] = useState<string | null>(null);

  const visible = useMemo(() => {
    const words = search.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const list = [...(agents.data ?? [])].sort((a, b) => a.name.localeCompare(b.name));
    return words.length === 0 ? list : list.filter((agent) => matches(agent, words));
  }, [agents.data, search]);

  const chat = useCallback(
    async (agent: Agent) => {
      setStarting(agent.id);
      try {
        const session = await server.chat.createSession({ name: agent.name });
        navigate({ name: "chat", sessionId: session.id });
      } catch (error) {
        toast.error(`Could not start a chat with ${agent.name}: ${describeError(error)}`);
        setStarting(null);
      }
    },
    [server, navigate],
  );

  if (!agentsPort) {
    return (
      <div className="tf-page" data-testid="agents-library">
        <h1>Agents</h1>
        <EmptyState>This server offers no saved agents.</EmptyState>
      </div>
    );
  }

  const remove = agentsPort.delete;
  const total = agents.data?.length ?? 0;

  return (
    <div className="tf-page" data-testid="agents-library">
      <div className="tf-page-head">
        <h1>Agents</h1>
        {shell.builder && (
          <button
            type="button"
            className="tf-button tf-button-primary"
            data-testid="new-agent"
            onClick={() => navigate({ name: "agent", agentId: null })}
          >
            <PlusIcon /> New agent
          </button>
        )}
      </div>
      <search className="tf-toolbar">
        <label className="tf-search">
          <span className="tf-visually-hidden">Search the agents</span>
          <input
            type="search"
            value={query}
            placeholder="Search by name, model or instructions"
            data-testid="agent-search"
            onChange={(event) => setQuery(event.target.value)}
          />
        </label>
        {agents.data && (
          <span className="tf-muted" aria-live="polite">
            {search.trim() ? `${visible.length} of ${total}` : plural(total, "agent", "agents")}
          </span>
        )}
      </search>

      {agents.loading && !agents.data ? (
        <LoadingState label="Loading the agents…" />
      ) : agents.error && !agents.data ? (
        <ErrorState message={agents.error} onRetry={agents.reload} testId="agents-error" />
      ) : total === 0 ? (
        <EmptyState testId="agents-empty">
          <p>No agents yet.</p>
          {shell.builder && (
            <p>An agent is a model with instructions, MCP servers and skills, saved under a name.</p>
          )}
        </EmptyState>
      ) : visible.length === 0 ? (
        <EmptyState testId="agents-no-match">No agent matches “{search.trim()}”.</EmptyState>
      ) : (
        <ul className="tf-list" data-testid="agent-list" aria-label="Saved agents">
          {visible.map((agent) => {
            const servers = agent.manifest.mcp_servers ?? [];
            const skills = agent.manifest.skills ?? [];
            return (
              <li key={agent.id} className="tf-list-row" data-testid="agent-row" data-name={agent.name}>
                <div className="tf-list-row-main">
                  <span className="tf-row-icon" aria-hidden="true">
                    <BotIcon />
                  </span>
                  <div className="tf-list-row-text">
                    <div className="tf-list-row-title">{agent.name}</div>
                    <div className="tf-list-row-badges">
                      <span
                        className="tf-chip"
                        title={agent.manifest.model.name}
                        data-testid="agent-row-model"
                      >
                        {shortModelName(agent.manifest.model.name)}
                      </span>
                      <span
                        className="tf-chip"
                        title={servers.length > 0 ? servers.map((s) => s.name).join(", ") : undefined}
                      >
                        {plural(servers.length, "MCP server", "MCP servers")}
                      </span>
                      <span
                        className="tf-chip"
                        title={skills.length > 0 ? skills.map((s) => s.name).join(", ") : undefined}
                      >
                        {plural(skills.length, "skill", "skills")}
                      </span>
                    </div>
                    {agent.manifest.instructions ? (
                      <p className="tf-list-row-subtitle tf-clamp">{agent.manifest.instructions}</p>
                    ) : null}
                  </div>
                  <div className="tf-list-row-actions">
                    <button
                      type="button"
                      className="tf-button tf-button-primary"
                      aria-label={`Chat with ${agent.name}`}
                      disabled={starting !== null}
                      aria-busy={starting === agent.id}
                      onClick={() => void chat(agent)}
                    >
                      {starting === agent.id ? "Starting…" : "Chat"}
                    </button>
                    {shell.builder && (
                      <button
                        type="button"
                        className="tf-button"
                        aria-label={`Edit ${agent.name}`}
                        onClick={() => navigate({ name: "agent", agentId: agent.id })}
                      >
                        <EditIcon /> Edit
                      </button>
                    )}
                    {remove && (
                      <ConfirmDelete
                        what={agent.name}
                        description={
                          <p>The agent is removed from the library for everyone. This cannot be undone.</p>
                        }
                        onConfirm={async () => {
                          try {
                            await remove.call(agentsPort, agent.id);
                            agents.update((list) => list.filter((a) => a.id !== agent.id));
                            toast.success(`Deleted ${agent.name}.`);
                          } catch (error) {
                            toast.error(`Could not delete ${agent.name}: ${describeError(error)}`);
                            throw error;
                          }
                        }}
                      />
                    )}
                  </div>
                </div>
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}
