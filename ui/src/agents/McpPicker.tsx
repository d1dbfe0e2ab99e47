// The builder's MCP servers: which configured servers the agent uses and, for each, which of its tools it
// may call and which ask the user first. The tools are listed from the server itself.

import { type AvailableMcpServer, TrueForgeApiError } from "@trueforge/sdk";
import { type ReactNode, useCallback, useEffect, useId, useRef, useState } from "react";
import { toast } from "sonner";
import { useServer } from "../embed/context.js";
import { CheckboxField, Fieldset } from "../settings/fields.js";
import { RowButton, StatusChip, useRowAction } from "../settings/rows.js";
import { LoadingState } from "../settings/states.js";
import type { Loaded } from "../settings/useLoad.js";
import { describeError } from "../state/errors.js";
import { AuthStatusChip, connectInPopup } from "./mcp-connect.js";
import { PickerState } from "./settings-link.js";
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
  const port = server.agents;
  const [tools, setTools] = useState<Record<string, ToolsState>>({});
  const requested = useRef(new Set<string>());
  const connecting = useRowAction();

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

  const connect = (name: string) =>
    connecting.run(name, `Could not connect to ${name}`, async () => {
      if (await connectInPopup(server.mcpAuth, name)) {
        available.reload();
        loadTools(name);
      }
    });

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
      <PickerState
        loaded={available}
        label="Loading the MCP servers…"
        empty={configured.length === 0 && missing.length === 0}
        what="MCP server"
        section="mcp"
      />
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
                    <RowButton
                      label={`Connect ${entry.name}`}
                      disabled={connecting.busy !== null}
                      onClick={() => void connect(entry.name)}
                    >
                      {connecting.busy === entry.name ? "Connecting…" : "Connect"}
                    </RowButton>
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

/**
 * A rule of the tools panel, as two radios: every tool, or only some; under "only", what the some are
 * (`children`).
 */
function EveryToolOr({
  legend,
  every,
  onlyLabel,
  onChange,
  after,
  children,
}: {
  readonly legend: ReactNode;
  readonly every: boolean;
  readonly onlyLabel: string;
  readonly onChange: (every: boolean) => void;
  /** Shown under the rule whichever radio is on. */
  readonly after?: ReactNode;
  readonly children: ReactNode;
}) {
  const group = useId();
  return (
    <Fieldset legend={legend} plain>
      <CheckboxField
        type="radio"
        name={group}
        label="Every tool"
        checked={every}
        onChange={() => onChange(true)}
      />
      <CheckboxField
        type="radio"
        name={group}
        label={onlyLabel}
        checked={!every}
        onChange={() => onChange(false)}
      />
      {!every ? <div className="tf-indent">{children}</div> : null}
      {after}
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
        <EveryToolOr
          legend={<>Tools {choice.name} offers the agent</>}
          every={choice.allTools}
          onlyLabel="Only the tools ticked below"
          onChange={(every) => onChange({ ...choice, allTools: every })}
          after={
            noTools ? <p className="tf-field-error">The agent can use none of this server's tools.</p> : null
          }
        >
          <CheckboxField
            label="and every tool marked read-only"
            checked={choice.readOnlyTools}
            onChange={(on) => onChange({ ...choice, readOnlyTools: on })}
          />
        </EveryToolOr>
        <EveryToolOr
          legend="Ask the user before running"
          every={choice.approveAll}
          onlyLabel="Only these tools"
          onChange={(every) => onChange({ ...choice, approveAll: every })}
        >
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
        </EveryToolOr>
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
                        {tool.description ? (
                          <p className="tf-tool-description tf-clamp">{tool.description}</p>
                        ) : null}
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
