// Settings › MCP servers: the configured servers with their authorization state (Connect / Disconnect
// for OAuth), the catalog's presets to add, and a form for a server of one's own: remote (Streamable
// HTTP, with no auth, static headers or OAuth) or a local stdio process.

import type { CatalogMcpServer, ConfiguredMcpServer, McpServerManifest } from "@trueforge/sdk";
import { useState } from "react";
import { toast } from "sonner";
import { AuthStatusChip, connectInPopup } from "../agents/mcp-connect.js";
import { useServer } from "../embed/context.js";
import { DescriptionField, Fieldset, NameField, RadioChoices, TextField } from "./fields.js";
import { type EditFormProps, PanelForm, useFormSave } from "./forms.js";
import { CatalogTitle, EditAndDelete, ListRow, RowButton, useRowAction } from "./rows.js";
import { Section } from "./section.js";
import { EmptyState, LoadedList } from "./states.js";
import { useNamedSettings } from "./useNamedSettings.js";
import { ENV_NAME, requiredError, resourceNameError, urlError } from "./validation.js";

type AuthKind = "none" | "header" | "dcr";

function authKind(manifest: McpServerManifest | CatalogMcpServer): AuthKind {
  return manifest.type === "remote" && manifest.auth ? manifest.auth.type : "none";
}

const AUTH_LABELS: Record<AuthKind, string> = { none: "No auth", header: "API key (header)", dcr: "OAuth" };

const AUTH_CHOICES: readonly { readonly value: AuthKind; readonly label: string }[] = [
  { value: "none", label: "None" },
  { value: "header", label: "API key in a header" },
  { value: "dcr", label: "OAuth" },
];

const TRANSPORTS: readonly { readonly value: McpServerManifest["type"]; readonly label: string }[] = [
  { value: "remote", label: "Remote (Streamable HTTP)" },
  { value: "stdio", label: "Local process (stdio)" },
];

function where(manifest: McpServerManifest): string {
  if (manifest.type === "remote") {
    return manifest.url;
  }
  return [manifest.command, ...(manifest.args ?? [])].join(" ");
}

type Editing =
  | { readonly mode: "new"; readonly preset: CatalogMcpServer | null }
  | { readonly mode: "edit"; readonly name: string }
  | null;

export function McpServersSection() {
  const server = useServer();
  const settings = server.settings;
  const mcpAuth = server.mcpAuth;
  const servers = useNamedSettings(
    (port) => port.mcpCatalog(),
    (port) => port.mcpServers(),
    { catalog: "the MCP catalog", configured: "the MCP servers" },
  );
  const [editing, setEditing] = useState<Editing>(null);
  const { busy, run } = useRowAction();
  if (!settings) {
    return null;
  }
  const remove = settings.deleteMcpServer;

  const saved = (result: ConfiguredMcpServer) => {
    servers.put(result);
    setEditing(null);
  };

  const addPreset = (entry: CatalogMcpServer) => {
    if (entry.auth?.type === "header") {
      // The catalog's header values are placeholders: the user supplies the real key first.
      setEditing({ mode: "new", preset: entry });
      return;
    }
    void run(entry.name, `Could not add ${entry.name}`, async () => {
      const { logo: _logo, ...manifest } = entry;
      const result = await settings.putMcpServer(manifest as McpServerManifest);
      saved(result);
      toast.success(
        result.auth_status.status === "auth_required"
          ? `Added ${result.name}. Connect it to authorize access.`
          : `Added ${result.name}.`,
      );
    });
  };

  const connect = (name: string) =>
    run(name, `Could not connect to ${name}`, async () => {
      await connectInPopup(mcpAuth, name);
      servers.configured.reload();
    });

  const disconnect = async (name: string) => {
    if (!mcpAuth) {
      return;
    }
    await run(name, `Could not disconnect from ${name}`, async () => {
      await mcpAuth.disconnect(name);
      toast.success(`Disconnected from ${name}.`);
      servers.configured.reload();
    });
  };

  return (
    <Section
      titleId="tf-mcp-title"
      title="MCP servers"
      testId="settings-mcp"
      action={
        <button
          type="button"
          className="tf-button"
          data-testid="mcp-add-custom"
          onClick={() => setEditing({ mode: "new", preset: null })}
        >
          Add a server
        </button>
      }
      intro="Tool servers agents can use. OAuth servers are authorized by each user with Connect; header keys are stored encrypted and never shown again."
    >
      {editing?.mode === "new" ? (
        <McpServerForm
          key={editing.preset?.name ?? "custom"}
          existing={null}
          preset={editing.preset}
          onSaved={saved}
          onCancel={() => setEditing(null)}
        />
      ) : null}

      <LoadedList
        heading="Configured"
        loaded={servers.configured}
        loadingLabel="Loading the MCP servers…"
        empty={
          servers.list.length === 0 ? <EmptyState testId="mcp-empty">No MCP server yet.</EmptyState> : null
        }
        testId="mcp-list"
        label="Configured MCP servers"
      >
        {servers.list.map((entry) => {
          const kind = authKind(entry.manifest);
          const status = entry.auth_status.status;
          // Connect and Disconnect are for OAuth, where each user signs in.
          const oauth = kind === "dcr" && mcpAuth !== undefined;
          const isEditing = editing?.mode === "edit" && editing.name === entry.name;
          return (
            <ListRow
              key={entry.name}
              testId="mcp-row"
              name={entry.name}
              title={entry.name}
              subtitle={
                <>
                  <span className="tf-mono tf-break">{where(entry.manifest)}</span>
                  <span className="tf-block">{entry.manifest.description}</span>
                </>
              }
              badges={
                <>
                  <span className="tf-chip">
                    {entry.manifest.type === "stdio" ? "Local process" : "Remote"}
                  </span>
                  <span className="tf-chip">{AUTH_LABELS[kind]}</span>
                  <AuthStatusChip status={status} />
                </>
              }
              actions={
                <>
                  {oauth && status === "auth_required" ? (
                    <RowButton
                      primary
                      label={`Connect ${entry.name}`}
                      disabled={busy !== null}
                      onClick={() => void connect(entry.name)}
                    >
                      {busy === entry.name ? "Connecting…" : "Connect"}
                    </RowButton>
                  ) : null}
                  {oauth && status === "authenticated" ? (
                    <RowButton
                      label={`Disconnect ${entry.name}`}
                      disabled={busy !== null}
                      onClick={() => void disconnect(entry.name)}
                    >
                      Disconnect
                    </RowButton>
                  ) : null}
                  <EditAndDelete
                    what={entry.name}
                    editing={isEditing}
                    onToggleEdit={() => setEditing(isEditing ? null : { mode: "edit", name: entry.name })}
                    remove={remove && (() => remove.call(settings, entry.name))}
                    onDeleted={() => servers.drop(entry.name)}
                    description={<p>Agents that use it are refused until it is removed from them.</p>}
                  />
                </>
              }
            >
              {isEditing ? (
                <McpServerForm
                  existing={entry}
                  preset={null}
                  onSaved={saved}
                  onCancel={() => setEditing(null)}
                />
              ) : null}
            </ListRow>
          );
        })}
      </LoadedList>

      <LoadedList
        heading="From the catalog"
        loaded={servers.catalog}
        loadingLabel="Loading the catalog…"
        empty={
          servers.available.length === 0 ? (
            <EmptyState>Every server of the catalog is configured.</EmptyState>
          ) : null
        }
        testId="mcp-catalog"
        label="MCP servers to add"
      >
        {servers.available.map((entry) => {
          const kind = authKind(entry);
          return (
            <ListRow
              key={entry.name}
              testId="mcp-catalog-row"
              name={entry.name}
              title={<CatalogTitle logo={entry.logo} name={entry.name} />}
              subtitle={entry.description}
              badges={<span className="tf-chip">{AUTH_LABELS[kind]}</span>}
              actions={
                <RowButton
                  label={`Add ${entry.name}`}
                  disabled={busy !== null}
                  onClick={() => addPreset(entry)}
                >
                  {busy === entry.name ? "Adding…" : kind === "header" ? "Add…" : "Add"}
                </RowButton>
              }
            />
          );
        })}
      </LoadedList>
    </Section>
  );
}

interface Pair {
  readonly key: number;
  readonly name: string;
  readonly value: string;
  /** The redacted value the server showed, and the name it belongs to: kept when `value` stays empty. */
  readonly stored: { readonly name: string; readonly value: string } | undefined;
  /** A placeholder (the catalog's example value). */
  readonly example: string | undefined;
}

let nextPairKey = 1;

/** Pairs from a manifest: its values are secrets shown redacted (`stored`), or a catalog's examples. */
function pairsOf(record: Record<string, string> | undefined, stored: boolean): Pair[] {
  return Object.entries(record ?? {}).map(([name, value]) => ({
    key: nextPairKey++,
    name,
    value: "",
    stored: stored ? { name, value } : undefined,
    example: stored ? undefined : value,
  }));
}

function emptyPair(name = ""): Pair {
  return { key: nextPairKey++, name, value: "", stored: undefined, example: undefined };
}

/** Whether an empty value keeps the stored one (the pair still has the name it was stored under). */
function keepsStored(pair: Pair): boolean {
  return pair.value === "" && pair.stored !== undefined && pair.stored.name === pair.name.trim();
}

/** The record to send; an empty value sends back the redacted one, which tells the server to keep it. */
function recordOf(pairs: readonly Pair[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (const pair of pairs) {
    record[pair.name.trim()] = keepsStored(pair) ? (pair.stored?.value ?? "") : pair.value;
  }
  return record;
}

function pairErrors(pair: Pair, pairs: readonly Pair[], kind: "header" | "env") {
  const name = pair.name.trim();
  const duplicate = pairs.filter((other) => other.name.trim() === name).length > 1;
  let nameError: string | null = name === "" ? "Required." : duplicate ? "Listed twice." : null;
  if (!nameError && kind === "env" && !ENV_NAME.test(name)) {
    nameError = "Letters, digits and '_', not starting with a digit.";
  }
  if (!nameError && kind === "header" && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
    nameError = "Not a valid header name.";
  }
  const valueError = kind === "header" && pair.value === "" && !keepsStored(pair) ? "Required." : null;
  return { name: nameError, value: valueError };
}

function PairsEditor({
  kind,
  pairs,
  onChange,
  submitted,
}: {
  readonly kind: "header" | "env";
  readonly pairs: readonly Pair[];
  readonly onChange: (pairs: Pair[]) => void;
  readonly submitted: boolean;
}) {
  const noun = kind === "header" ? "header" : "variable";
  const update = (key: number, patch: Partial<Pair>) =>
    onChange(pairs.map((pair) => (pair.key === key ? { ...pair, ...patch } : pair)));
  return (
    <div className="tf-pairs">
      {pairs.map((pair, index) => {
        const errors = pairErrors(pair, pairs, kind);
        const keeps = keepsStored({ ...pair, value: "" });
        return (
          <div key={pair.key} className="tf-pair" data-testid={`mcp-${kind}-row`}>
            <TextField
              label={kind === "header" ? `Header ${index + 1} name` : `Variable ${index + 1} name`}
              value={pair.name}
              onChange={(value) => update(pair.key, { name: value })}
              required
              monospace
              placeholder={kind === "header" ? "Authorization" : "API_TOKEN"}
              error={submitted ? errors.name : null}
            />
            <TextField
              label={kind === "header" ? `Header ${index + 1} value` : `Variable ${index + 1} value`}
              type="password"
              value={pair.value}
              onChange={(value) => update(pair.key, { value })}
              required={kind === "header" && !keeps}
              placeholder={keeps ? "Leave empty to keep the stored value" : pair.example}
              hint={pair.example ? `For example: ${pair.example}` : undefined}
              error={submitted ? errors.value : null}
            />
            <button
              type="button"
              className="tf-button tf-button-quiet tf-danger-text tf-pair-remove"
              aria-label={`Remove ${noun} ${pair.name || index + 1}`}
              onClick={() => onChange(pairs.filter((p) => p.key !== pair.key))}
            >
              Remove
            </button>
          </div>
        );
      })}
      <button type="button" className="tf-button" onClick={() => onChange([...pairs, emptyPair()])}>
        Add a {noun}
      </button>
    </div>
  );
}

export function McpServerForm({
  existing,
  preset,
  onSaved,
  onCancel,
}: EditFormProps<ConfiguredMcpServer> & { readonly preset: CatalogMcpServer | null }) {
  const settings = useServer().settings;
  const source: McpServerManifest | CatalogMcpServer | null = existing?.manifest ?? preset;
  const remoteSource =
    source?.type === "remote" ? (source as Extract<McpServerManifest, { type: "remote" }>) : null;
  const stdioSource =
    source?.type === "stdio" ? (source as Extract<McpServerManifest, { type: "stdio" }>) : null;
  const [transport, setTransport] = useState<"remote" | "stdio">(source?.type ?? "remote");
  const [name, setName] = useState(existing?.name ?? preset?.name ?? "");
  const [description, setDescription] = useState(source?.description ?? "");
  const [url, setUrl] = useState(remoteSource?.url ?? "");
  const [auth, setAuth] = useState<AuthKind>(source ? authKind(source) : "none");
  const [headers, setHeaders] = useState<Pair[]>(() => {
    const stored = remoteSource?.auth?.type === "header" ? remoteSource.auth.headers : undefined;
    const list = pairsOf(stored, existing !== null);
    return list.length > 0 ? list : [emptyPair("Authorization")];
  });
  const [command, setCommand] = useState(stdioSource?.command ?? "");
  const [args, setArgs] = useState((stdioSource?.args ?? []).join("\n"));
  const [env, setEnv] = useState<Pair[]>(() => pairsOf(stdioSource?.env, existing !== null));
  const form = useFormSave({
    what: "the MCP server",
    savedMessage: (saved) =>
      saved.auth_status.status === "auth_required"
        ? `Saved ${saved.name}. Connect it to authorize access.`
        : `Saved ${saved.name}.`,
    onSaved,
  });
  const { submitted, show } = form;

  const errors = {
    name: existing ? null : resourceNameError(name),
    description: requiredError(description),
    url: transport === "remote" ? urlError(url) : null,
    command: transport === "stdio" ? requiredError(command) : null,
    headers:
      transport === "remote" && auth === "header" && headers.length === 0 ? "Add at least one header." : null,
  };
  const pairsInvalid =
    (transport === "remote" &&
      auth === "header" &&
      headers.some((pair) => Object.values(pairErrors(pair, headers, "header")).some(Boolean))) ||
    (transport === "stdio" && env.some((pair) => Object.values(pairErrors(pair, env, "env")).some(Boolean)));
  const invalid = pairsInvalid || Object.values(errors).some((error) => error !== null);

  const manifest = (): McpServerManifest => {
    const base = { name: existing?.name ?? name, description: description.trim() };
    if (transport === "stdio") {
      const argList = args
        .split("\n")
        .map((line) => line.trim())
        .filter((line) => line !== "");
      return {
        type: "stdio",
        ...base,
        command: command.trim(),
        ...(argList.length > 0 ? { args: argList } : {}),
        ...(env.length > 0 ? { env: recordOf(env) } : {}),
      };
    }
    return {
      type: "remote",
      ...base,
      url: url.trim(),
      ...(auth === "header"
        ? { auth: { type: "header" as const, headers: recordOf(headers) } }
        : auth === "dcr"
          ? { auth: { type: "dcr" as const } }
          : {}),
    };
  };

  const save = () => form.submit(settings && !invalid ? () => settings.putMcpServer(manifest()) : null);

  return (
    <PanelForm
      label={existing ? `Edit ${existing.name}` : preset ? `Add ${preset.name}` : "Add an MCP server"}
      testId="mcp-form"
      errorTestId="mcp-save-error"
      save={form}
      submitLabel={existing ? "Save" : "Add server"}
      onSubmit={() => void save()}
      onCancel={onCancel}
    >
      {!existing && !preset ? (
        <RadioChoices
          legend="Kind"
          options={TRANSPORTS}
          value={transport}
          onChange={setTransport}
          testIdPrefix="mcp-transport"
        >
          {transport === "stdio" ? (
            <p className="tf-field-hint">
              The server starts the process itself. Only allowed when its operator turned local processes on;
              otherwise saving is refused.
            </p>
          ) : null}
        </RadioChoices>
      ) : null}
      {existing ? null : (
        <NameField
          value={name}
          onChange={setName}
          error={errors.name}
          submitted={submitted}
          testId="mcp-name"
          hint="Lowercase letters, digits, '.', '_' and '-'; a letter first. It cannot be changed later."
        />
      )}
      <DescriptionField
        value={description}
        onChange={setDescription}
        error={show(errors.description)}
        testId="mcp-description"
        hint="Shown to the model so it knows when the server is useful."
      />
      {transport === "remote" ? (
        <>
          <TextField
            label="URL"
            type="url"
            value={url}
            onChange={setUrl}
            required
            monospace
            testId="mcp-url"
            placeholder="https://mcp.example.com/mcp"
            error={show(errors.url)}
          />
          <RadioChoices
            legend="Authentication"
            options={AUTH_CHOICES}
            value={auth}
            onChange={setAuth}
            testIdPrefix="mcp-auth"
          >
            {auth === "dcr" ? (
              <p className="tf-field-hint">
                Each user authorizes the server with Connect (dynamic client registration; nothing to enter
                here).
                {existing && authKind(existing.manifest) === "dcr"
                  ? " Changing the URL signs every user out of it."
                  : ""}
              </p>
            ) : null}
            {auth === "header" ? (
              <>
                <PairsEditor kind="header" pairs={headers} onChange={setHeaders} submitted={submitted} />
                {show(errors.headers) ? <p className="tf-field-error">{errors.headers}</p> : null}
              </>
            ) : null}
          </RadioChoices>
        </>
      ) : (
        <>
          <TextField
            label="Command"
            value={command}
            onChange={setCommand}
            required
            monospace
            testId="mcp-command"
            placeholder="npx"
            hint="A path, or a program found on the server's PATH."
            error={show(errors.command)}
          />
          <TextField
            label="Arguments"
            value={args}
            onChange={setArgs}
            rows={3}
            monospace
            testId="mcp-args"
            placeholder={"-y\n@modelcontextprotocol/server-everything"}
            hint="One argument per line."
          />
          <Fieldset
            legend="Environment"
            hint="Variables added to the process's environment; values are stored encrypted."
          >
            <PairsEditor kind="env" pairs={env} onChange={setEnv} submitted={submitted} />
          </Fieldset>
        </>
      )}
    </PanelForm>
  );
}
