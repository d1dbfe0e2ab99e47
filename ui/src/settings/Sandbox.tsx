// Settings › Sandbox: the tenant's one sandbox provider (Daytona), its image build state, and a form
// from the catalog's presets. This server does not run sandboxes yet, and the screen says so.

import type {
  CatalogSandboxProvider,
  ConfiguredSandboxProvider,
  SandboxProviderManifest,
} from "@trueforge/sdk";
import { useEffect, useMemo, useRef, useState } from "react";
import { toast } from "sonner";
import { useServer } from "../embed/context.js";
import { describeError } from "../state/errors.js";
import {
  ConfirmDelete,
  EmptyState,
  ErrorState,
  FormError,
  ListRow,
  LoadingState,
  StatusChip,
  TextField,
  useReveal,
} from "./fields.js";
import { useLoad } from "./useLoad.js";
import { integerError, storedSecretHint } from "./validation.js";

const PROVIDER_NAMES: Record<string, string> = { daytona: "Daytona" };
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

export function SandboxSection() {
  const settings = useServer().settings;
  const loadCatalog = useMemo(() => (settings ? () => settings.sandboxCatalog() : null), [settings]);
  const loadConfigured = useMemo(() => (settings ? () => settings.sandboxProvider() : null), [settings]);
  const catalog = useLoad(loadCatalog, "the sandbox catalog");
  const configured = useLoad(loadConfigured, "the sandbox provider");
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
    <section className="tf-section" aria-labelledby="tf-sandbox-title" data-testid="settings-sandbox">
      <h2 id="tf-sandbox-title">Sandbox</h2>
      <p className="tf-field-hint">
        A remote machine per chat where agents run commands and keep files. One provider serves the whole
        workspace.
      </p>
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

      <h3 className="tf-subhead">Configured</h3>
      {configured.loading && provider === undefined ? (
        <LoadingState label="Loading the sandbox provider…" />
      ) : configured.error && provider === undefined ? (
        <ErrorState message={configured.error} onRetry={configured.reload} />
      ) : !provider ? (
        <EmptyState testId="sandbox-empty">No sandbox provider is configured.</EmptyState>
      ) : (
        <ul className="tf-list" data-testid="sandbox-list" aria-label="Sandbox provider">
          <ListRow
            testId="sandbox-row"
            name={provider.manifest.type}
            title={PROVIDER_NAMES[provider.manifest.type] ?? provider.manifest.type}
            subtitle={`Commands time out after ${provider.manifest.exec_timeout_ms / 1000} s · stops ${minutes(provider.manifest.auto_stop_interval_in_minutes)}, archived ${minutes(provider.manifest.auto_archive_interval_in_minutes)}, deleted ${minutes(provider.manifest.auto_delete_interval_in_minutes)}`}
            badges={
              <>
                <BuildStatus provider={provider} />
                <StatusChip tone="ok">Key stored</StatusChip>
              </>
            }
            actions={
              <>
                <button
                  type="button"
                  className="tf-button"
                  aria-label="Edit the sandbox provider"
                  aria-expanded={editing !== null}
                  onClick={() => setEditing(editing ? null : { preset: null })}
                >
                  Edit
                </button>
                {remove ? (
                  <ConfirmDelete
                    what="the sandbox provider"
                    onConfirm={async () => {
                      try {
                        await remove.call(settings);
                        setReplaced(null);
                        toast.success("Deleted the sandbox provider.");
                      } catch (error) {
                        toast.error(`Could not delete the sandbox provider: ${describeError(error)}`);
                        throw error;
                      }
                    }}
                  />
                ) : null}
              </>
            }
          />
        </ul>
      )}

      {!provider ? (
        <>
          <h3 className="tf-subhead">From the catalog</h3>
          {catalog.loading && !catalog.data ? (
            <LoadingState label="Loading the catalog…" />
          ) : catalog.error && !catalog.data ? (
            <ErrorState message={catalog.error} onRetry={catalog.reload} />
          ) : (catalog.data ?? []).length === 0 ? (
            <EmptyState>The catalog offers no sandbox provider.</EmptyState>
          ) : (
            <ul className="tf-list" data-testid="sandbox-catalog" aria-label="Sandbox providers to configure">
              {(catalog.data ?? []).map((entry) => (
                <ListRow
                  key={entry.type}
                  testId="sandbox-catalog-row"
                  name={entry.type}
                  title={PROVIDER_NAMES[entry.type] ?? entry.type}
                  subtitle="Needs an API key from the provider."
                  actions={
                    <button
                      type="button"
                      className="tf-button"
                      aria-label={`Configure ${PROVIDER_NAMES[entry.type] ?? entry.type}`}
                      onClick={() => setEditing({ preset: entry })}
                    >
                      Configure
                    </button>
                  }
                />
              ))}
            </ul>
          )}
        </>
      ) : null}
    </section>
  );
}

export function SandboxForm({
  existing,
  preset,
  onSaved,
  onCancel,
}: {
  readonly existing: ConfiguredSandboxProvider | null;
  readonly preset: CatalogSandboxProvider | null;
  readonly onSaved: (provider: ConfiguredSandboxProvider) => void;
  readonly onCancel: () => void;
}) {
  const settings = useServer().settings;
  const formRef = useRef<HTMLFormElement>(null);
  useReveal(formRef);
  const source: CatalogSandboxProvider | SandboxProviderManifest | undefined =
    existing?.manifest ?? preset ?? undefined;
  const stored = existing?.manifest.auth.api_key;
  const [apiKey, setApiKey] = useState("");
  const [timeout, setTimeoutMs] = useState(String(source?.exec_timeout_ms ?? 60_000));
  const [stop, setStop] = useState(String(source?.auto_stop_interval_in_minutes ?? 5));
  const [archive, setArchive] = useState(String(source?.auto_archive_interval_in_minutes ?? 60));
  const [remove, setRemove] = useState(String(source?.auto_delete_interval_in_minutes ?? 7200));
  const [submitted, setSubmitted] = useState(false);
  const [saving, setSaving] = useState(false);
  const [serverError, setServerError] = useState<string | null>(null);
  const errors = {
    apiKey: !stored && apiKey.trim() === "" ? "Required." : null,
    timeout: integerError(timeout, 1),
    stop: integerError(stop, 0),
    archive: integerError(archive, 0),
    remove: integerError(remove, 0),
  };
  const invalid = Object.values(errors).some((error) => error !== null);
  const show = (error: string | null) => (submitted ? error : null);

  const save = async () => {
    setSubmitted(true);
    if (!settings || invalid) {
      return;
    }
    setSaving(true);
    setServerError(null);
    try {
      const result = await settings.putSandboxProvider({
        type: "daytona",
        // Left empty on an edit, the stored key is kept: the redacted value sent back says so.
        auth: { api_key: apiKey.trim() !== "" ? apiKey.trim() : (stored ?? "") },
        exec_timeout_ms: Number(timeout),
        auto_stop_interval_in_minutes: Number(stop),
        auto_archive_interval_in_minutes: Number(archive),
        auto_delete_interval_in_minutes: Number(remove),
      });
      toast.success("Saved the sandbox provider.");
      onSaved(result);
    } catch (error) {
      const message = describeError(error);
      setServerError(message);
      toast.error(`Could not save the sandbox provider: ${message}`);
    } finally {
      setSaving(false);
    }
  };

  return (
    <form
      ref={formRef}
      className="tf-form tf-panel"
      data-testid="sandbox-form"
      aria-label="Sandbox provider"
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <h3 className="tf-panel-title">{existing ? "Edit the sandbox provider" : "Configure Daytona"}</h3>
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
          <TextField
            label="Stop when idle for (min)"
            type="number"
            min={0}
            value={stop}
            onChange={setStop}
            required
            hint="0: never."
            error={show(errors.stop)}
          />
          <TextField
            label="Archive when stopped for (min)"
            type="number"
            min={0}
            value={archive}
            onChange={setArchive}
            required
            hint="0: never."
            error={show(errors.archive)}
          />
          <TextField
            label="Delete when stopped for (min)"
            type="number"
            min={0}
            value={remove}
            onChange={setRemove}
            required
            hint="0: never."
            error={show(errors.remove)}
          />
        </div>
      </details>
      {submitted && invalid && errors.apiKey === null ? (
        <p className="tf-field-error">Check the advanced settings.</p>
      ) : null}
      <div className="tf-form-actions">
        <FormError message={serverError} testId="sandbox-save-error" />
        <div className="tf-row tf-wrap">
          <button type="submit" className="tf-button tf-button-primary" disabled={saving} aria-busy={saving}>
            {saving ? "Saving…" : "Save"}
          </button>
          <button type="button" className="tf-button" onClick={onCancel} disabled={saving}>
            Cancel
          </button>
        </div>
      </div>
    </form>
  );
}
