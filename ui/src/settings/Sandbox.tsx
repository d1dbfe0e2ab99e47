// Settings › Sandbox: the tenant's one sandbox provider (Daytona), its image build state, and a form
// from the catalog's presets. This server does not run sandboxes yet, and the screen says so.

import type {
  CatalogSandboxProvider,
  ConfiguredSandboxProvider,
  SandboxProviderManifest,
} from "@trueforge/sdk";
import { useEffect, useState } from "react";
import { useServer } from "../embed/context.js";
import { TextField } from "./fields.js";
import { type EditFormProps, PanelForm, useFormSave } from "./forms.js";
import { EditAndDelete, ListRow, RowButton, StatusChip } from "./rows.js";
import { Section } from "./section.js";
import { EmptyState, LoadedList } from "./states.js";
import { useLoadFrom } from "./useLoad.js";
import { integerError, storedSecretHint } from "./validation.js";

const PROVIDER_NAMES: Record<string, string> = { daytona: "Daytona" };

function providerName(type: string): string {
  return PROVIDER_NAMES[type] ?? type;
}
/** While an image builds, the state is asked again this often. */
const PENDING_POLL_MS = 10_000;

function minutes(value: number): string {
  return value === 0 ? "never" : `after ${value} min`;
}

function BuildStatus({ provider }: { readonly provider: ConfiguredSandboxProvider }) {
  switch (provider.status) {
    case "ready":
      return <StatusChip tone="ok">Ready</StatusChip>;
    case "pending":
      return <StatusChip tone="warn">Preparing the image…</StatusChip>;
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

export function SandboxSection() {
  const settings = useServer().settings;
  const catalog = useLoadFrom(settings, (port) => port.sandboxCatalog(), "the sandbox catalog");
  const configured = useLoadFrom(settings, (port) => port.sandboxProvider(), "the sandbox provider");
  const [editing, setEditing] = useState<Editing>(null);
  const [replaced, setReplaced] = useState<ConfiguredSandboxProvider | null | undefined>(undefined);
  const provider = replaced !== undefined ? replaced : configured.data;
  const pending = provider?.status === "pending";

  useEffect(() => {
    if (!pending || !settings) {
      return;
    }
    let live = true;
    const timer = setInterval(() => {
      settings.sandboxProvider().then(
        (latest) => live && setReplaced(latest),
        () => {
          // The next tick asks again; the last known state stays on screen.
        },
      );
    }, PENDING_POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [pending, settings]);

  if (!settings) {
    return null;
  }
  const remove = settings.deleteSandboxProvider;

  const saved = (result: ConfiguredSandboxProvider) => {
    setReplaced(result);
    setEditing(null);
  };

  return (
    <Section
      titleId="tf-sandbox-title"
      title="Sandbox"
      testId="settings-sandbox"
      intro="A remote machine per chat where agents run commands and keep files. One provider serves the whole workspace."
    >
      <div className="tf-notice" role="note" data-testid="sandbox-notice">
        <strong>Sandboxes are still being built.</strong> This server does not run them yet: it refuses to
        save a sandbox provider (the form shows its answer) and agents cannot turn the sandbox on. The form is
        here for servers that do.
      </div>

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
            <EmptyState testId="sandbox-empty">No sandbox provider is configured.</EmptyState>
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
                onDeleted={() => setReplaced(null)}
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
