// Settings › Sandbox: where agents' sandboxes run. Without a remote provider the server's local sandbox
// (bubblewrap on the server's machine) serves when the server can run it, and the screen says whether it
// does (or why not); with one, the tenant's remote provider (Daytona) with its image build state (asked
// again while it is pending), and a form from the catalog's presets that shows the server's refusals.

import type {
  CatalogSandboxProvider,
  ConfiguredSandboxProvider,
  SandboxProviderManifest,
} from "@trueforge/sdk";
import { useEffect, useMemo, useState } from "react";
import { readCapabilities, type ServerCapabilities } from "../containers/attachments.js";
import { useServer } from "../embed/context.js";
import { TextField } from "./fields.js";
import { type EditFormProps, PanelForm, useFormSave } from "./forms.js";
import { EditAndDelete, ListRow, RowButton, StatusChip } from "./rows.js";
import { Section } from "./section.js";
import { EmptyState, LoadedList } from "./states.js";
import { useLoad, useLoadFrom } from "./useLoad.js";
import { integerError, storedSecretHint } from "./validation.js";

const PROVIDER_NAMES: Record<string, string> = { daytona: "Daytona" };

function providerName(type: string): string {
  return PROVIDER_NAMES[type] ?? type;
}
/** While an image builds, the state is asked again this often. */
const PENDING_POLL_MS = 5_000;

function minutes(value: number): string {
  return value === 0 ? "never" : `after ${value} min`;
}

function BuildStatus({ provider }: { readonly provider: ConfiguredSandboxProvider }) {
  switch (provider.status) {
    case "ready":
      return <StatusChip tone="ok">Ready</StatusChip>;
    case "pending":
      return (
        <StatusChip tone="warn" title={provider.status_reason ?? undefined}>
          Preparing the image…
        </StatusChip>
      );
    case "failed":
      return (
        <StatusChip tone="danger" title={provider.status_reason ?? undefined}>
          Failed{provider.status_reason ? `: ${provider.status_reason}` : ""}
        </StatusChip>
      );
  }
}

type Editing = { readonly preset: CatalogSandboxProvider | null } | null;

/** How long a sandbox may idle, in minutes (0: never), and what the form starts from without a manifest. */
const IDLE_TIMES = [
  { field: "auto_stop_interval_in_minutes", label: "Stop when idle for (min)", byDefault: 5 },
  { field: "auto_archive_interval_in_minutes", label: "Archive when stopped for (min)", byDefault: 60 },
  { field: "auto_delete_interval_in_minutes", label: "Delete when stopped for (min)", byDefault: 7200 },
] as const;
type IdleTime = (typeof IDLE_TIMES)[number]["field"];

/**
 * Where sandboxes run now: the remote provider when one is configured, else the local sandbox, on or off (with
 * the server's reason) as the capabilities say.
 */
function SandboxRuntime({
  provider,
  capabilities,
}: {
  readonly provider: ConfiguredSandboxProvider | null | undefined;
  readonly capabilities: { data: ServerCapabilities | undefined; error: string | null; loading: boolean };
}) {
  const sandbox = capabilities.data?.sandbox;
  if (provider) {
    return (
      <div className="tf-sandbox-runtime" role="status" data-testid="sandbox-runtime" data-runtime="remote">
        <p>
          <strong>Sandboxes run on {providerName(provider.manifest.type)}.</strong> The local sandbox is not
          used while a remote provider is configured.
        </p>
        {sandbox && !sandbox.enabled ? (
          <p className="tf-field-hint">
            Agents cannot use the sandbox now: {sandbox.reason ?? "the server says it is off."}
          </p>
        ) : null}
      </div>
    );
  }
  if (provider === undefined || capabilities.loading) {
    return (
      <div className="tf-sandbox-runtime" data-testid="sandbox-runtime">
        <p>
          <span className="tf-spinner" aria-hidden="true" /> Checking where sandboxes run…
        </p>
      </div>
    );
  }
  if (!sandbox && capabilities.error === null) {
    // The port reports no capabilities: nothing to say about the local sandbox.
    return null;
  }
  if (!sandbox) {
    return (
      <div className="tf-sandbox-runtime" role="alert" data-testid="sandbox-runtime" data-runtime="unknown">
        <p className="tf-error-text">Could not tell whether the local sandbox runs: {capabilities.error}</p>
      </div>
    );
  }
  return (
    <div
      className="tf-sandbox-runtime"
      role="status"
      data-testid="sandbox-runtime"
      data-runtime="local"
      data-enabled={sandbox.enabled}
    >
      <p>
        <strong className={sandbox.enabled ? "tf-ok-text" : undefined}>
          Local sandbox (bubblewrap): {sandbox.enabled ? "on" : "off"}
        </strong>
      </p>
      <p className="tf-field-hint" data-testid="sandbox-runtime-detail">
        {sandbox.enabled
          ? "No remote provider is configured, so agents with the sandbox on run their commands on this server's machine, each chat in a workspace of its own. Configure a provider below to run them remotely instead."
          : `${sandbox.reason ?? "The server runs no local sandbox."} Configure a remote provider below to give agents a sandbox.`}
      </p>
    </div>
  );
}

export function SandboxSection() {
  const server = useServer();
  const settings = server.settings;
  const agents = server.agents;
  const catalog = useLoadFrom(settings, (port) => port.sandboxCatalog(), "the sandbox catalog");
  const configured = useLoadFrom(settings, (port) => port.sandboxProvider(), "the sandbox provider");
  const readCaps = useMemo(
    () => (agents ? async () => readCapabilities(await agents.capabilities()) : null),
    [agents],
  );
  const capabilities = useLoad(readCaps, "the server's capabilities");
  const [editing, setEditing] = useState<Editing>(null);
  const [replaced, setReplaced] = useState<ConfiguredSandboxProvider | null | undefined>(undefined);
  const provider = replaced !== undefined ? replaced : configured.data;
  const pending = provider?.status === "pending";
  const reloadCapabilities = capabilities.reload;

  useEffect(() => {
    if (!pending || !settings) {
      return;
    }
    let live = true;
    const timer = setInterval(() => {
      settings.sandboxProvider().then(
        (latest) => {
          if (live) {
            setReplaced(latest);
            if (latest?.status !== "pending") {
              // Whether agents can use the sandbox may have changed with the build.
              reloadCapabilities();
            }
          }
        },
        () => {
          // The next tick asks again; the last known state stays on screen.
        },
      );
    }, PENDING_POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [pending, settings, reloadCapabilities]);

  if (!settings) {
    return null;
  }
  const remove = settings.deleteSandboxProvider;

  const saved = (result: ConfiguredSandboxProvider) => {
    setReplaced(result);
    setEditing(null);
    reloadCapabilities();
  };

  return (
    <Section
      titleId="tf-sandbox-title"
      title="Sandbox"
      testId="settings-sandbox"
      intro="A workspace per chat where agents with the sandbox on run commands and keep files: users' files go in, files the agent makes can be downloaded. The local sandbox serves unless a remote provider is configured; one provider serves the whole workspace."
    >
      <SandboxRuntime
        // Unknown while the provider loads; a failed load (shown below) leaves the local state to tell.
        provider={configured.loading && replaced === undefined ? undefined : (provider ?? null)}
        capabilities={capabilities}
      />

      {editing ? (
        <SandboxForm
          existing={provider ?? null}
          preset={editing.preset}
          onSaved={saved}
          onCancel={() => setEditing(null)}
        />
      ) : null}

      <LoadedList
        heading="Configured"
        // A save or a poll replaces what was loaded.
        loaded={{ ...configured, data: provider }}
        loadingLabel="Loading the sandbox provider…"
        empty={
          !provider ? (
            <EmptyState testId="sandbox-empty">No remote sandbox provider is configured.</EmptyState>
          ) : null
        }
        testId="sandbox-list"
        label="Sandbox provider"
      >
        {provider ? (
          <ListRow
            testId="sandbox-row"
            name={provider.manifest.type}
            title={providerName(provider.manifest.type)}
            subtitle={`Commands time out after ${provider.manifest.exec_timeout_ms / 1000} s · stops ${minutes(provider.manifest.auto_stop_interval_in_minutes)}, archived ${minutes(provider.manifest.auto_archive_interval_in_minutes)}, deleted ${minutes(provider.manifest.auto_delete_interval_in_minutes)}`}
            badges={
              <>
                <BuildStatus provider={provider} />
                <StatusChip tone="ok">Key stored</StatusChip>
              </>
            }
            actions={
              <EditAndDelete
                what="the sandbox provider"
                editing={editing !== null}
                onToggleEdit={() => setEditing(editing ? null : { preset: null })}
                remove={remove && (() => remove.call(settings))}
                onDeleted={() => {
                  setReplaced(null);
                  reloadCapabilities();
                }}
              />
            }
          />
        ) : null}
      </LoadedList>

      {!provider ? (
        <LoadedList
          heading="From the catalog"
          loaded={catalog}
          loadingLabel="Loading the catalog…"
          empty={
            (catalog.data ?? []).length === 0 ? (
              <EmptyState>The catalog offers no sandbox provider.</EmptyState>
            ) : null
          }
          testId="sandbox-catalog"
          label="Sandbox providers to configure"
        >
          {(catalog.data ?? []).map((entry) => (
            <ListRow
              key={entry.type}
              testId="sandbox-catalog-row"
              name={entry.type}
              title={providerName(entry.type)}
              subtitle="Needs an API key from the provider."
              actions={
                <RowButton
                  label={`Configure ${providerName(entry.type)}`}
                  onClick={() => setEditing({ preset: entry })}
                >
                  Configure
                </RowButton>
              }
            />
          ))}
        </LoadedList>
      ) : null}
    </Section>
  );
}

export function SandboxForm({
  existing,
  preset,
  onSaved,
  onCancel,
}: EditFormProps<ConfiguredSandboxProvider> & { readonly preset: CatalogSandboxProvider | null }) {
  const settings = useServer().settings;
  const source: CatalogSandboxProvider | SandboxProviderManifest | undefined =
    existing?.manifest ?? preset ?? undefined;
  const stored = existing?.manifest.auth.api_key;
  const [apiKey, setApiKey] = useState("");
  const [timeout, setTimeoutMs] = useState(String(source?.exec_timeout_ms ?? 60_000));
  const [idle, setIdle] = useState(() => {
    const times = {} as Record<IdleTime, string>;
    for (const { field, byDefault } of IDLE_TIMES) {
      times[field] = String(source?.[field] ?? byDefault);
    }
    return times;
  });
  const form = useFormSave({
    what: "the sandbox provider",
    savedMessage: () => "Saved the sandbox provider.",
    onSaved,
  });
  const { submitted, show } = form;
  const errors = {
    apiKey: !stored && apiKey.trim() === "" ? "Required." : null,
    timeout: integerError(timeout, 1),
  };
  const idleError = (field: IdleTime) => integerError(idle[field], 0);
  const invalid =
    Object.values(errors).some((error) => error !== null) ||
    IDLE_TIMES.some(({ field }) => idleError(field) !== null);

  const save = () =>
    form.submit(
      settings && !invalid
        ? () =>
            settings.putSandboxProvider({
              type: "daytona",
              // Left empty on an edit, the stored key is kept: the redacted value sent back says so.
              auth: { api_key: apiKey.trim() !== "" ? apiKey.trim() : (stored ?? "") },
              exec_timeout_ms: Number(timeout),
              auto_stop_interval_in_minutes: Number(idle.auto_stop_interval_in_minutes),
              auto_archive_interval_in_minutes: Number(idle.auto_archive_interval_in_minutes),
              auto_delete_interval_in_minutes: Number(idle.auto_delete_interval_in_minutes),
            })
        : null,
    );

  return (
    <PanelForm
      label="Sandbox provider"
      title={existing ? "Edit the sandbox provider" : "Configure Daytona"}
      testId="sandbox-form"
      errorTestId="sandbox-save-error"
      save={form}
      submitLabel="Save"
      onSubmit={() => void save()}
      onCancel={onCancel}
    >
      <TextField
        label="API key"
        type="password"
        value={apiKey}
        onChange={setApiKey}
        required={!stored}
        testId="sandbox-api-key"
        placeholder={stored ? "Leave empty to keep the stored key" : undefined}
        hint={stored ? storedSecretHint(stored) : undefined}
        error={show(errors.apiKey)}
      />
      <details className="tf-details">
        <summary>Advanced</summary>
        <div className="tf-grid-2">
          <TextField
            label="Command timeout (ms)"
            type="number"
            min={1}
            value={timeout}
            onChange={setTimeoutMs}
            required
            error={show(errors.timeout)}
          />
          {IDLE_TIMES.map(({ field, label }) => (
            <TextField
              key={field}
              label={label}
              type="number"
              min={0}
              value={idle[field]}
              onChange={(value) => setIdle((times) => ({ ...times, [field]: value }))}
              required
              hint="0: never."
              error={show(idleError(field))}
            />
          ))}
        </div>
      </details>
      {submitted && invalid && errors.apiKey === null ? (
        <p className="tf-field-error">Check the advanced settings.</p>
      ) : null}
    </PanelForm>
  );
}
