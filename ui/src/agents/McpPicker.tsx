// The builder's MCP servers: which configured servers the agent uses and, for each, which of its tools it
// may call and which ask the user first. The tools are listed from the server itself.

import { type AvailableMcpServer, TrueForgeApiError } from "@trueforge/sdk";
import { useCallback, useEffect, useId, useRef, useState } from "react";
import { toast } from "sonner";
import { useNavigation } from "../app/router.js";
import { useServer, useShell } from "../embed/context.js";
import { CheckboxField, ErrorState, Fieldset, LoadingState, StatusChip } from "../settings/fields.js";
import type { Loaded } from "../settings/useLoad.js";
import { describeError } from "../state/errors.js";
import { authorizeInPopup } from "../state/mcp-auth.js";
import {
  type McpChoice,
  newMcpChoice,
  type ToolInfo,
  toolEnabled,
  toolInfos,
  toolNeedsApproval,
  withToolApproval,
  withToolEnabled,
} from "./spec-form.js";

type ToolsState =
  | { readonly status: "loading" }
  | { readonly status: "ready"; readonly tools: readonly ToolInfo[] }
  | { readonly status: "error"; readonly message: string; readonly needsAuth: boolean };

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

const TOOL_FILTER_FROM = 8;

export function McpPicker({
  available,
  choices,
  onChange,
}: {
  readonly available: Loaded<AvailableMcpServer[]>;
  readonly choices: readonly McpChoice[];
  readonly onChange: (choices: McpChoice[]) => void;
}) {
  const server = useServer();
  const shell = useShell();
  const { navigate } = useNavigation();
  const port = server.agents;
  const [tools, setTools] = useState<Record<string, ToolsState>>({});
  const requested = useRef(new Set<string>());
  const [connecting, setConnecting] = useState<string | null>(null);

  const loadTools = useCallback(
    (name: string) => {
      if (!port) {
        return;
      }
      requested.current.add(name);
      setTools((current) => ({ ...current, [name]: { status: "loading" } }));
      port.mcpTools(name).then(
        (list) =>
          setTools((current) => ({ ...current, [name]: { status: "ready", tools: toolInfos(list) } })),
        (error: unknown) => {
          const needsAuth = error instanceof TrueForgeApiError && error.status === 422;
          const message = describeError(error);
          if (!needsAuth) {
            toast.error(`Could not list the tools of ${name}: ${message}`);
          }
          setTools((current) => ({ ...current, [name]: { status: "error", message, needsAuth } }));
        },
      );
    },
    [port],
  );

  // The tools of every chosen server, listed once.
  useEffect(() => {
    for (const choice of choices) {
      if (!requested.current.has(choice.name)) {
        loadTools(choice.name);
      }
    }
  }, [choices, loadTools]);

  const connect = async (name: string) => {
    setConnecting(name);
    try {
      const done = await authorizeInPopup(server.mcpAuth, name, "");
      if (done.authorized) {
        toast.success(`Connected to ${name}.`);
        available.reload();
        loadTools(name);
      } else {
        toast.info(`${name} is not connected${done.reason ? `: ${done.reason}` : " yet."}`);
      }
    } catch (error) {
      toast.error(`Could not connect to ${name}: ${describeError(error)}`);
    } finally {
      setConnecting(null);
    }
  };

  const chosen = new Map(choices.map((choice) => [choice.name, choice]));
  const configured = available.data ?? [];
  const known = new Set(configured.map((s) => s.name));
  // Servers the spec names that are not configured (any more) stay visible, so they can be removed.
  const missing = choices.filter((choice) => !known.has(choice.name));

  const toggle = (name: string, on: boolean) => {
    if (on) {
      onChange([...choices, newMcpChoice(name)]);
    } else {
      onChange(choices.filter((choice) => choice.name !== name));
    }
  };
  const replace = (next: McpChoice) =>
    onChange(choices.map((choice) => (choice.name === next.name ? next : choice)));

  return (
    <Fieldset
      legend="MCP servers"
      hint="Tools from the MCP servers configured in the settings. For each server, choose the tools the agent may use and those it must ask about before running."
      testId="agent-mcp"
    >
      {available.loading && !available.data ? <LoadingState label="Loading the MCP servers…" /> : null}
      {available.error && !available.data ? (
        <ErrorState message={available.error} onRetry={available.reload} />
      ) : null}
      {available.data && configured.length === 0 && missing.length === 0 ? (
        <p className="tf-muted">
          No MCP server is configured.{" "}
          {shell.settings && server.settings ? (
            <button
              type="button"
              className="tf-link"
              onClick={() => navigate({ name: "settings", section: "mcp" })}
            >
              Add one in the settings
            </button>
          ) : null}
        </p>
      ) : null}
      <ul className="tf-choice-list" data-testid="agent-mcp-list">
        {configured.map((entry) => {
          const choice = chosen.get(entry.name);
          const needsAuth = entry.auth_status.status === "auth_required";
          return (
            <li key={entry.name} className="tf-choice" data-testid="agent-mcp-row" data-name={entry.name}>
              <div className="tf-choice-head">
                <CheckboxField
                  label={entry.name}
                  hint={entry.url ?? "A local process (stdio)"}
                  checked={choice !== undefined}
                  onChange={(on) => toggle(entry.name, on)}
                />
                <div className="tf-choice-side">
                  <AuthStatusChip status={entry.auth_status.status} />
                  {needsAuth && server.mcpAuth ? (
                    <button
                      type="button"
                      className="tf-button"
                      aria-label={`Connect ${entry.name}`}
                      disabled={connecting !== null}
                      onClick={() => void connect(entry.name)}
                    >
                      {connecting === entry.name ? "Connecting…" : "Connect"}
                    </button>
                  ) : null}
                </div>
              </div>
              {choice ? (
                <ToolsPanel
                  choice={choice}
                  state={tools[entry.name]}
                  onChange={replace}
                  onRetry={() => loadTools(entry.name)}
                  onConnect={needsAuth && server.mcpAuth ? () => void connect(entry.name) : undefined}
                />
              ) : null}
            </li>
          );
        })}
        {available.data
          ? missing.map((choice) => (
              <li key={choice.name} className="tf-choice" data-testid="agent-mcp-row" data-name={choice.name}>
                <div className="tf-choice-head">
                  <CheckboxField
                    label={choice.name}
                    hint="Not configured any more: the server refuses the agent until it is removed or configured again."
                    checked
                    onChange={(on) => toggle(choice.name, on)}
                  />
                  <div className="tf-choice-side">
                    <StatusChip tone="danger">Missing</StatusChip>
                  </div>
                </div>
              </li>
            ))
          : null}
      </ul>
    </Fieldset>
  );
}

function ToolsPanel({
  choice,
  state,
  onChange,
  onRetry,
  onConnect,
}: {
  readonly choice: McpChoice;
  readonly state: ToolsState | undefined;
  readonly onChange: (choice: McpChoice) => void;
  readonly onRetry: () => void;
  readonly onConnect: (() => void) | undefined;
}) {
  const groupId = useId();
  const [filter, setFilter] = useState("");
  const listing = state?.status === "ready" ? state.tools : [];
  const words = filter.trim().toLowerCase();
  const shown = words
    ? listing.filter((tool) =>
        `${tool.name} ${tool.title ?? ""} ${tool.description ?? ""}`.toLowerCase().includes(words),
      )
    : listing;
  const noTools = !choice.allTools && !choice.readOnlyTools && choice.tools.length === 0;
  return (
    <div className="tf-tools-panel" data-testid="agent-mcp-tools">
      <div className="tf-tools-rules">
        <fieldset className="tf-fieldset tf-fieldset-plain">
          <legend>Tools {choice.name} offers the agent</legend>
          <CheckboxField
            type="radio"
            name={`${groupId}-use`}
            label="Every tool"
            checked={choice.allTools}
            onChange={() => onChange({ ...choice, allTools: true })}
          />
          <CheckboxField
            type="radio"
            name={`${groupId}-use`}
            label="Only the tools ticked below"
            checked={!choice.allTools}
            onChange={() => onChange({ ...choice, allTools: false })}
          />
          {!choice.allTools ? (
            <div className="tf-indent">
              <CheckboxField
                label="and every tool marked read-only"
                checked={choice.readOnlyTools}
                onChange={(on) => onChange({ ...choice, readOnlyTools: on })}
              />
            </div>
          ) : null}
          {noTools ? <p className="tf-field-error">The agent can use none of this server's tools.</p> : null}
        </fieldset>
        <fieldset className="tf-fieldset tf-fieldset-plain">
          <legend>Ask the user before running</legend>
          <CheckboxField
            type="radio"
            name={`${groupId}-ask`}
            label="Every tool"
            checked={choice.approveAll}
            onChange={() => onChange({ ...choice, approveAll: true })}
          />
          <CheckboxField
            type="radio"
            name={`${groupId}-ask`}
            label="Only these tools"
            checked={!choice.approveAll}
            onChange={() => onChange({ ...choice, approveAll: false })}
          />
          {!choice.approveAll ? (
            <div className="tf-indent">
              <CheckboxField
                label="Tools marked as changing data"
                checked={choice.approveWrite}
                onChange={(on) => onChange({ ...choice, approveWrite: on })}
              />
              <CheckboxField
                label="Tools marked as destructive"
                checked={choice.approveDestructive}
                onChange={(on) => onChange({ ...choice, approveDestructive: on })}
              />
              <p className="tf-field-hint">and the tools ticked under “Ask first” below.</p>
            </div>
          ) : null}
        </fieldset>
      </div>
      <CheckboxField
        label="Preload the tools"
        hint="The model gets every tool's description from the start, instead of looking tools up when it needs them."
        checked={choice.preload}
        onChange={(on) => onChange({ ...choice, preload: on })}
      />
      {state === undefined || state.status === "loading" ? (
        <LoadingState label={`Listing the tools of ${choice.name}…`} />
      ) : state.status === "error" ? (
        <div className="tf-inline-problem" role="alert">
          <p>
            {state.needsAuth
              ? `Connect ${choice.name} to list its tools. The rules above still apply.`
              : `The tools could not be listed: ${state.message}`}
          </p>
          <div className="tf-row tf-wrap">
            {state.needsAuth && onConnect ? (
              <button type="button" className="tf-button" onClick={onConnect}>
                Connect
              </button>
            ) : null}
            <button type="button" className="tf-button" onClick={onRetry}>
              Retry
            </button>
          </div>
        </div>
      ) : listing.length === 0 ? (
        <p className="tf-muted">{choice.name} offers no tools.</p>
      ) : (
        <>
          {listing.length >= TOOL_FILTER_FROM ? (
            <label className="tf-search">
              <span className="tf-visually-hidden">Filter the tools of {choice.name}</span>
              <input
                type="search"
                value={filter}
                placeholder={`Filter ${listing.length} tools`}
                onChange={(event) => setFilter(event.target.value)}
              />
            </label>
          ) : null}
          <div className="tf-table-wrap">
            <table className="tf-tools-table">
              <caption className="tf-visually-hidden">Tools of {choice.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Tool</th>
                  <th scope="col">Use</th>
                  <th scope="col">Ask first</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((tool) => {
                  const enabled = toolEnabled(choice, tool);
                  const approval = toolNeedsApproval(choice, tool);
                  return (
                    <tr key={tool.name} data-testid="agent-tool-row" data-name={tool.name}>
                      <th scope="row">
                        <span className="tf-tool-name">{tool.title ?? tool.name}</span>
                        {tool.title ? <span className="tf-muted tf-mono"> {tool.name}</span> : null}
                        {tool.readOnly === true ? <span className="tf-chip">read-only</span> : null}
                        {tool.destructive === true ? (
                          <span className="tf-chip tf-chip-warn">destructive</span>
                        ) : null}
                        {tool.description ? <p className="tf-tool-description">{tool.description}</p> : null}
                      </th>
                      <td>
                        <input
                          type="checkbox"
                          aria-label={`Use ${tool.name}`}
                          title={enabled === "rule" ? "Chosen by a rule above" : undefined}
                          checked={enabled !== false}
                          onChange={(event) =>
                            onChange(withToolEnabled(choice, listing, tool, event.target.checked))
                          }
                        />
                      </td>
                      <td>
                        <input
                          type="checkbox"
                          aria-label={`Ask before running ${tool.name}`}
                          title={approval === "rule" ? "Chosen by a rule above" : undefined}
                          checked={approval !== false}
                          onChange={(event) =>
                            onChange(withToolApproval(choice, listing, tool, event.target.checked))
                          }
                        />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </>
      )}
    </div>
  );
}
