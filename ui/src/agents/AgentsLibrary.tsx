// The agents library: the saved agents, searchable, each with Chat (a new session with the agent), Edit
// (the builder) and Delete; and the way to a new agent.

import type { Agent } from "@trueforge/sdk";
import { useEffect, useMemo, useState } from "react";
import { useNavigation } from "../app/router.js";
import { BotIcon, EditIcon, PlusIcon } from "../atoms/icons.js";
import { useServer, useShell } from "../embed/context.js";
import { RowButton } from "../settings/rows.js";
import { EmptyState, Loadable } from "../settings/states.js";
import { useLoadFrom } from "../settings/useLoad.js";
import { DeleteAgent, useStartChat } from "./agent-actions.js";
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
  const agents = useLoadFrom(agentsPort, (port) => port.list(), "the agents");
  const [query, setQuery] = useState("");
  const search = useDebounced(query, SEARCH_DELAY_MS);
  const [starting, setStarting] = useState<string | null>(null);

  const visible = useMemo(() => {
    const words = search.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const list = [...(agents.data ?? [])].sort((a, b) => a.name.localeCompare(b.name));
    return words.length === 0 ? list : list.filter((agent) => matches(agent, words));
  }, [agents.data, search]);

  const startChat = useStartChat();
  const chat = async (agent: Agent) => {
    setStarting(agent.id);
    if (!(await startChat(agent.name))) {
      setStarting(null);
    }
  };

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

      <Loadable loaded={agents} label="Loading the agents…" errorTestId="agents-error">
        {total === 0 ? (
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
            {visible.map((agent) => (
              <AgentRow
                key={agent.id}
                agent={agent}
                starting={starting}
                onChat={() => void chat(agent)}
                onEdit={shell.builder ? () => navigate({ name: "agent", agentId: agent.id }) : undefined}
                remove={remove && (() => remove.call(agentsPort, agent.id))}
                onDeleted={() => agents.update((list) => list.filter((a) => a.id !== agent.id))}
              />
            ))}
          </ul>
        )}
      </Loadable>
    </div>
  );
}

/**
 * One saved agent: its model, how many MCP servers and skills it uses and the start of its instructions,
 * with Chat, Edit (where the builder is offered) and Delete (where the server can delete).
 */
function AgentRow({
  agent,
  starting,
  onChat,
  onEdit,
  remove,
  onDeleted,
}: {
  readonly agent: Agent;
  /** The id of the agent whose chat is starting: every Chat waits for it. */
  readonly starting: string | null;
  readonly onChat: () => void;
  readonly onEdit: (() => void) | undefined;
  readonly remove: (() => Promise<unknown>) | undefined;
  readonly onDeleted: () => void;
}) {
  const servers = agent.manifest.mcp_servers ?? [];
  const skills = agent.manifest.skills ?? [];
  return (
    <li className="tf-list-row" data-testid="agent-row" data-name={agent.name}>
      <div className="tf-list-row-main">
        <span className="tf-row-icon" aria-hidden="true">
          <BotIcon />
        </span>
        <div className="tf-list-row-text">
          <div className="tf-list-row-title">{agent.name}</div>
          <div className="tf-list-row-badges">
            <span className="tf-chip" title={agent.manifest.model.name} data-testid="agent-row-model">
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
          <RowButton
            primary
            label={`Chat with ${agent.name}`}
            disabled={starting !== null}
            busy={starting === agent.id}
            onClick={onChat}
          >
            {starting === agent.id ? "Starting…" : "Chat"}
          </RowButton>
          {onEdit && (
            <RowButton label={`Edit ${agent.name}`} onClick={onEdit}>
              <EditIcon /> Edit
            </RowButton>
          )}
          {remove && <DeleteAgent agent={agent} remove={remove} onDeleted={onDeleted} />}
        </div>
      </div>
    </li>
  );
}
