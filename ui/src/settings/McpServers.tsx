// Settings › MCP servers: the configured servers with their authorization state (Connect / Disconnect
// for OAuth), the catalog's presets to add, and a form for a server of one's own: remote (Streamable
// HTTP, with no auth, static headers or OAuth) or a local stdio process.

import type { CatalogMcpServer, ConfiguredMcpServer, McpServerManifest } from "@trueforge/sdk";
import { useId, useMemo, useRef, useState } from "react";
import { toast } from "sonner";
import { AuthStatusChip } from "../agents/McpPicker.js";
import { useServer } from "../embed/context.js";
import { describeError } from "../state/errors.js";
import { authorizeInPopup } from "../state/mcp-auth.js";
import {
  CatalogLogo,
  CheckboxField,
  ConfirmDelete,
  EmptyState,
  ErrorState,
  Fieldset,
  FormError,
  ListRow,
  LoadingState,
  TextField,
  useReveal,
} from "./fields.js";
import { useLoad } from "./useLoad.js";
import { ENV_NAME, requiredError, resourceNameError, urlError } from "./validation.js";

type AuthKind = "none" | "header" | "dcr";

function authKind(manifest: McpServerManifest | CatalogMcpServer): AuthKind {
  return manifest.type === "remote" && manifest.auth ? manifest.auth.type : "none";
}

const AUTH_LABELS: Record<AuthKind, string> = { none: "No auth", header: "API key (header)", dcr: "OAuth" };

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
  const loadCatalog = useMemo(() => (settings ? () => settings.mcpCatalog() : null), [settings]);
  const loadConfigured = useMemo(() => (settings ? () => settings.mcpServers() : null), [settings]);
  const catalog = useLoad(loadCatalog, "the MCP catalog");
  const configured = useLoad(loadConfigured, "the MCP servers");
  const [editing, setEditing] = useState<Editing>(null);
  const [busy, setBusy] = useState<string | null>(null);
  if (!settings) {
    return null;
  }
  const remove = settings.deleteMcpServer;
  const servers = configured.data ?? [];
  const names = new Set(servers.map((s) => s.name));
  const available = (catalog.data ?? []).filter((entry) => !names.has(entry.name));

  const saved = (result: ConfiguredMcpServer) => {
    configured.update((list) =>
      list.some((s) => s.name === result.name)
        ? list.map((s) => (s.name === result.name ? result : s))
        : [...list, result],
    );
    setEditing(null);
  };

  const addPreset = async (entry: CatalogMcpServer) => {
    if (entry.auth?.type === "header") {
      // The catalog's header values are placeholders: the user supplies the real key first.
      setEditing({ mode: "new", preset: entry });
      return;
    }
    setBusy(entry.name);
    try {
      const { logo: _logo, ...manifest } = entry;
      const result = await settings.putMcpServer(manifest as McpServerManifest);
      saved(result);
      toast.success(
        result.auth_status.status === "auth_required"
          ? `Added ${result.name}. Connect it to authorize access.`
          : `Added ${result.name}.`,
      );
    } catch (error) {
      toast.error(`Could not add ${entry.name}: ${describeError(error)}`);
    } finally {
      setBusy(null);
    }
  };

  const connect = async (name: string) => {
    setBusy(name);
    try {
      const done = await authorizeInPopup(mcpAuth, name, "");
      if (done.authorized) {
        toast.success(`Connected to ${name}.`);
      } else {
        toast.info(`${name} is not connected${done.reason ? `: ${done.reason}` : " yet."}`);
      }
      configured.reload();
    } catch (error) {
      toast.error(`Could not connect to ${name}: ${describeError(error)}`);
    } finally {
      setBusy(null);
    }
  };

  const disconnect = async (name: string) => {
    if (!mcpAuth) {
      return;
    }
    setBusy(name);
    try {
      await mcpAuth.disconnect(name);
      toast.success(`Disconnected from ${name}.`);
      configured.reload();
    } catch (error) {
      toast.error(`Could not disconnect from ${name}: ${describeError(error)}`);
    } finally {
      setBusy(null);
    }
  };

  return (
    <section className="tf-section" aria-labelledby="tf-mcp-title" data-testid="settings-mcp">
      <div className="tf-page-head">
        <h2 id="tf-mcp-title">MCP servers</h2>
        <button
          type="button"
          className="tf-button"
          data-testid="mcp-add-custom"
          onClick={() => setEditing({ mode: "new", preset: null })}
        >
          Add a server
        </button>
      </div>
      <p className="tf-field-hint">
        Tool servers agents can use. OAuth servers are authorized by each user with Connect; header keys are
        stored encrypted and never shown again.
      </p>

      {editing?.mode === "new" ? (
        <McpServerForm
          key={editing.preset?.name ?? "custom"}
          existing={null}
          preset={editing.preset}
          onSaved={saved}
          onCancel={() => setEditing(null)}
        />
      ) : null}

      <h3 className="tf-subhead">Configured</h3>
      {configured.loading && !configured.data ? (
        <LoadingState label="Loading the MCP servers…" />
      ) : configured.error && !configured.data ? (
        <ErrorState message={configured.error} onRetry={configured.reload} />
      ) : servers.length === 0 ? (
        <EmptyState testId="mcp-empty">No MCP server yet.</EmptyState>
      ) : (
        <ul className="tf-list" data-testid="mcp-list" aria-label="Configured MCP servers">
          {servers.map((entry) => {
            const kind = authKind(entry.manifest);
            const status = entry.auth_status.status;
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
                    {kind === "dcr" && status === "auth_required" && mcpAuth ? (
                      <button
                        type="button"
                        className="tf-button tf-button-primary"
                        aria-label={`Connect ${entry.name}`}
                        disabled={busy !== null}
                        onClick={() => void connect(entry.name)}
                      >
                        {busy === entry.name ? "Connecting…" : "Connect"}
                      </button>
                    ) : null}
                    {kind === "dcr" && status === "authenticated" && mcpAuth ? (
                      <button
                        type="button"
                        className="tf-button"
                        aria-label={`Disconnect ${entry.name}`}
                        disabled={busy !== null}
                        onClick={() => void disconnect(entry.name)}
                      >
                        Disconnect
                      </button>
                    ) : null}
                    <button
                      type="button"
                      className="tf-button"
                      aria-label={`Edit ${entry.name}`}
                      aria-expanded={isEditing}
                      onClick={() => setEditing(isEditing ? null : { mode: "edit", name: entry.name })}
                    >
                      Edit
                    </button>
                    {remove ? (
                      <ConfirmDelete
                        what={entry.name}
                        description={<p>Agents that use it are refused until it is removed from them.</p>}
                        onConfirm={async () => {
                          try {
                            await remove.call(settings, entry.name);
                            configured.update((list) => list.filter((s) => s.name !== entry.name));
                            toast.success(`Deleted ${entry.name}.`);
                          } catch (error) {
                            toast.error(`Could not delete ${entry.name}: ${describeError(error)}`);
                            throw error;
                          }
                        }}
                      />
                    ) : null}
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
        </ul>
      )}

      <h3 className="tf-subhead">From the catalog</h3>
      {catalog.loading && !catalog.data ? (
        <LoadingState label="Loading the catalog…" />
      ) : catalog.error && !catalog.data ? (
        <ErrorState message={catalog.error} onRetry={catalog.reload} />
      ) : available.length === 0 ? (
        <EmptyState>Every server of the catalog is configured.</EmptyState>
      ) : (
        <ul className="tf-list" data-testid="mcp-catalog" aria-label="MCP servers to add">
          {available.map((entry) => {
            const kind = authKind(entry);
            return (
              <ListRow
                key={entry.name}
                testId="mcp-catalog-row"
                name={entry.name}
                title={
                  <span className="tf-row">
                    <CatalogLogo src={entry.logo} name={entry.name} />
                    {entry.name}
                  </span>
                }
                subtitle={entry.description}
                badges={<span className="tf-chip">{AUTH_LABELS[kind]}</span>}
                actions={
                  <button
                    type="button"
                    className="tf-button"
                    aria-label={`Add ${entry.name}`}
                    disabled={busy !== null}
                    onClick={() => void addPreset(entry)}
                  >
                    {busy === entry.name ? "Adding…" : kind === "header" ? "Add…" : "Add"}
                  </button>
                }
              />
            );
          })}
        </ul>
      )}
    </section>
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
}: {
  readonly existing: ConfiguredMcpServer | null;
  readonly preset: CatalogMcpServer | null;
  readonly onSaved: (server: ConfiguredMcpServer) => void;
  readonly onCancel: () => void;
}) {
  const settings = useServer().settings;
  const formRef = useRef<HTMLFormElement>(null);
  useReveal(formRef);
  const groupId = useId();
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
  const [submitted, setSubmitted] = useState(false);
  const [saving, setSaving] = useState(false);
  const [serverError, setServerError] = useState<string | null>(null);

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
  const show = (error: string | null) => (submitted ? error : null);

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

  const save = async () => {
    setSubmitted(true);
    if (!settings || invalid) {
      return;
    }
    setSaving(true);
    setServerError(null);
    try {
      const result = await settings.putMcpServer(manifest());
      toast.success(
        result.auth_status.status === "auth_required"
          ? `Saved ${result.name}. Connect it to authorize access.`
          : `Saved ${result.name}.`,
      );
      onSaved(result);
    } catch (error) {
      const message = describeError(error);
      setServerError(message);
      toast.error(`Could not save the MCP server: ${message}`);
    } finally {
      setSaving(false);
    }
  };

  const title = existing ? `Edit ${existing.name}` : preset ? `Add ${preset.name}` : "Add an MCP server";
  return (
    <form
      ref={formRef}
      className="tf-form tf-panel"
      data-testid="mcp-form"
      aria-label={title}
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <h3 className="tf-panel-title">{title}</h3>
      {!existing && !preset ? (
        <fieldset className="tf-fieldset tf-fieldset-plain">
          <legend>Kind</legend>
          <div className="tf-check-row">
            <CheckboxField
              type="radio"
              name={`${groupId}-transport`}
              label="Remote (Streamable HTTP)"
              checked={transport === "remote"}
              onChange={() => setTransport("remote")}
              testId="mcp-transport-remote"
            />
            <CheckboxField
              type="radio"
              name={`${groupId}-transport`}
              label="Local process (stdio)"
              checked={transport === "stdio"}
              onChange={() => setTransport("stdio")}
              testId="mcp-transport-stdio"
            />
          </div>
          {transport === "stdio" ? (
            <p className="tf-field-hint">
              The server starts the process itself. Only allowed when its operator turned local processes on;
              otherwise saving is refused.
            </p>
          ) : null}
        </fieldset>
      ) : null}
      {existing ? null : (
        <TextField
          label="Name"
          value={name}
          onChange={setName}
          required
          monospace
          testId="mcp-name"
          hint="Lowercase letters, digits, '.', '_' and '-'; a letter first. It cannot be changed later."
          error={submitted || name !== "" ? errors.name : null}
        />
      )}
      <TextField
        label="Description"
        value={description}
        onChange={setDescription}
        required
        rows={2}
        testId="mcp-description"
        hint="Shown to the model so it knows when the server is useful."
        error={show(errors.description)}
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
          <fieldset className="tf-fieldset tf-fieldset-plain">
            <legend>Authentication</legend>
            <div className="tf-check-row">
              {(["none", "header", "dcr"] as const).map((kind) => (
                <CheckboxField
                  key={kind}
                  type="radio"
                  name={`${groupId}-auth`}
                  label={kind === "none" ? "None" : kind === "header" ? "API key in a header" : "OAuth"}
                  checked={auth === kind}
                  onChange={() => setAuth(kind)}
                  testId={`mcp-auth-${kind}`}
                />
              ))}
            </div>
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
          </fieldset>
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
      <div className="tf-form-actions">
        <FormError message={serverError} testId="mcp-save-error" />
        <div className="tf-row tf-wrap">
          <button type="submit" className="tf-button tf-button-primary" disabled={saving} aria-busy={saving}>
            {saving ? "Saving…" : existing ? "Save" : "Add server"}
          </button>
          <button type="button" className="tf-button" onClick={onCancel} disabled={saving}>
            Cancel
          </button>
        </div>
      </div>
    </form>
  );
}
