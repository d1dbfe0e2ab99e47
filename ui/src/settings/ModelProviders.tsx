// Settings › Model providers: the configured providers with their models, and a form to add one (a
// well-known provider from the catalog, or a custom OpenAI-compatible endpoint) or change one.

import type {
  CatalogModelProvider,
  ConfiguredModelProvider,
  components,
  ModelProviderManifest,
} from "@trueforge/sdk";
import { useMemo, useRef, useState } from "react";
import { toast } from "sonner";
import { useServer } from "../embed/context.js";
import { describeError } from "../state/errors.js";
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
  SelectField,
  StatusChip,
  TextField,
  useReveal,
} from "./fields.js";
import { useLoad } from "./useLoad.js";
import {
  integerError,
  requiredError,
  resourceNameError,
  storedSecretHint,
  suggestName,
  urlError,
} from "./validation.js";

type ConfiguredModel = components["schemas"]["ConfiguredModel"];
type ReasoningEffort = components["schemas"]["ReasoningEffort"];
type WellKnownCatalog = components["schemas"]["CatalogWellKnownModelProvider"];

const PROVIDER_LABELS: Record<string, string> = {
  openai: "OpenAI",
  anthropic: "Anthropic",
  "google-gemini": "Google Gemini",
  fireworks: "Fireworks AI",
  zai: "Z.ai",
  moonshot: "Moonshot AI",
  together: "Together AI",
  alibaba: "Alibaba Cloud",
  custom: "Custom (OpenAI-compatible)",
};

export function providerLabel(type: string): string {
  return PROVIDER_LABELS[type] ?? type;
}

function storedKey(manifest: ModelProviderManifest | undefined): string | undefined {
  return manifest?.auth?.api_key;
}

type Editing = { readonly type: string; readonly existing: ConfiguredModelProvider | null } | null;

export function ModelProvidersSection() {
  const settings = useServer().settings;
  const loadCatalog = useMemo(() => (settings ? () => settings.modelProviderCatalog() : null), [settings]);
  const loadConfigured = useMemo(() => (settings ? () => settings.modelProviders() : null), [settings]);
  const catalog = useLoad(loadCatalog, "the model provider catalog");
  const configured = useLoad(loadConfigured, "the model providers");
  const [editing, setEditing] = useState<Editing>(null);
  if (!settings) {
    return null;
  }
  const remove = settings.deleteModelProvider;
  const providers = configured.data ?? [];
  const taken = new Set(providers.map((p) => (p.manifest.type === "custom" ? "" : p.manifest.type)));
  const available = (catalog.data ?? []).filter(
    (entry): entry is WellKnownCatalog => entry.type !== "custom" && !taken.has(entry.type),
  );

  const saved = (result: ConfiguredModelProvider) => {
    configured.update((list) =>
      list.some((p) => p.name === result.name)
        ? list.map((p) => (p.name === result.name ? result : p))
        : [...list, result],
    );
    setEditing(null);
  };

  const form = (type: string, existing: ConfiguredModelProvider | null) => (
    <ProviderForm
      type={type}
      existing={existing}
      catalog={catalog.data ?? []}
      onSaved={saved}
      onCancel={() => setEditing(null)}
    />
  );

  return (
    <section className="tf-section" aria-labelledby="tf-providers-title" data-testid="settings-models">
      <h2 id="tf-providers-title">Model providers</h2>
      <p className="tf-field-hint">
        The providers whose models agents can use, each with its API key. Keys are stored encrypted and never
        shown again.
      </p>

      {editing && editing.existing === null ? form(editing.type, null) : null}

      <h3 className="tf-subhead">Configured</h3>
      {configured.loading && !configured.data ? (
        <LoadingState label="Loading the model providers…" />
      ) : configured.error && !configured.data ? (
        <ErrorState message={configured.error} onRetry={configured.reload} />
      ) : providers.length === 0 ? (
        <EmptyState testId="providers-empty">
          No model provider yet: add one below to start chatting.
        </EmptyState>
      ) : (
        <ul className="tf-list" data-testid="provider-list" aria-label="Configured model providers">
          {providers.map((provider) => {
            const manifest = provider.manifest;
            const isEditing = editing?.existing?.name === provider.name;
            return (
              <ListRow
                key={provider.name}
                testId="provider-row"
                name={provider.name}
                title={provider.name}
                subtitle={`${providerLabel(manifest.type)} · ${manifest.base_url ?? "default endpoint"}`}
                badges={
                  <>
                    {storedKey(manifest) ? (
                      <StatusChip tone="ok">Key stored</StatusChip>
                    ) : (
                      <StatusChip tone="muted">No key</StatusChip>
                    )}
                    {manifest.models.map((model) => (
                      <span key={model.name} className="tf-chip" title={model.model_id}>
                        {model.name}
                      </span>
                    ))}
                  </>
                }
                actions={
                  <>
                    <button
                      type="button"
                      className="tf-button"
                      aria-label={`Edit ${provider.name}`}
                      aria-expanded={isEditing}
                      onClick={() =>
                        setEditing(isEditing ? null : { type: manifest.type, existing: provider })
                      }
                    >
                      Edit
                    </button>
                    {remove ? (
                      <ConfirmDelete
                        what={provider.name}
                        description={
                          <p>Agents that use its models stop working until they are given another model.</p>
                        }
                        onConfirm={async () => {
                          try {
                            await remove.call(settings, provider.name);
                            configured.update((list) => list.filter((p) => p.name !== provider.name));
                            toast.success(`Deleted ${provider.name}.`);
                          } catch (error) {
                            toast.error(`Could not delete ${provider.name}: ${describeError(error)}`);
                            throw error;
                          }
                        }}
                      />
                    ) : null}
                  </>
                }
              >
                {isEditing ? form(manifest.type, provider) : null}
              </ListRow>
            );
          })}
        </ul>
      )}

      <h3 className="tf-subhead">Add a provider</h3>
      {catalog.loading && !catalog.data ? (
        <LoadingState label="Loading the catalog…" />
      ) : catalog.error && !catalog.data ? (
        <ErrorState message={catalog.error} onRetry={catalog.reload} />
      ) : (
        <ul className="tf-list" data-testid="provider-catalog" aria-label="Providers to add">
          {available.map((entry) => (
            <ListRow
              key={entry.type}
              testId="provider-catalog-row"
              name={entry.type}
              title={
                <span className="tf-row">
                  <CatalogLogo src={entry.logo} name={providerLabel(entry.type)} />
                  {providerLabel(entry.type)}
                </span>
              }
              subtitle={`${entry.models.length} preset model${entry.models.length === 1 ? "" : "s"}`}
              actions={
                <button
                  type="button"
                  className="tf-button"
                  aria-label={`Add ${providerLabel(entry.type)}`}
                  onClick={() => setEditing({ type: entry.type, existing: null })}
                >
                  Add
                </button>
              }
            />
          ))}
          <ListRow
            testId="provider-catalog-row"
            name="custom"
            title="Custom provider"
            subtitle="Any OpenAI-compatible endpoint (a gateway, a local server), under a name of your own."
            actions={
              <button
                type="button"
                className="tf-button"
                aria-label="Add a custom provider"
                onClick={() => setEditing({ type: "custom", existing: null })}
              >
                Add
              </button>
            }
          />
        </ul>
      )}
    </section>
  );
}

interface ModelRow {
  readonly key: number;
  readonly modelId: string;
  readonly name: string;
  /** The name was typed (it no longer follows the model id). */
  readonly nameTouched: boolean;
  readonly contextLength: string;
  readonly maxOutputTokens: string;
  readonly efforts: readonly ReasoningEffort[];
}

let nextRowKey = 1;

function rowFromModel(model: ConfiguredModel): ModelRow {
  return {
    key: nextRowKey++,
    modelId: model.model_id,
    name: model.name,
    nameTouched: true,
    contextLength: model.properties.context_length?.toString() ?? "",
    maxOutputTokens: model.properties.max_output_tokens?.toString() ?? "",
    efforts: model.properties.reasoning_efforts ?? [],
  };
}

function emptyRow(): ModelRow {
  return {
    key: nextRowKey++,
    modelId: "",
    name: "",
    nameTouched: false,
    contextLength: "",
    maxOutputTokens: "",
    efforts: [],
  };
}

function modelFromRow(row: ModelRow): ConfiguredModel {
  return {
    model_id: row.modelId.trim(),
    name: row.name,
    properties: {
      ...(row.contextLength.trim() ? { context_length: Number(row.contextLength) } : {}),
      ...(row.maxOutputTokens.trim() ? { max_output_tokens: Number(row.maxOutputTokens) } : {}),
      ...(row.efforts.length > 0 ? { reasoning_efforts: [...row.efforts] } : {}),
    },
  };
}

function optionalCount(value: string): string | null {
  return value.trim() === "" ? null : integerError(value, 1);
}

function rowErrors(row: ModelRow, rows: readonly ModelRow[]) {
  const sameId = rows.filter((other) => other.modelId.trim() === row.modelId.trim()).length > 1;
  const sameName = rows.filter((other) => other.name === row.name).length > 1;
  return {
    modelId: requiredError(row.modelId) ?? (sameId ? "Listed twice." : null),
    name: resourceNameError(row.name) ?? (sameName ? "Used by another model." : null),
    contextLength: optionalCount(row.contextLength),
    maxOutputTokens: optionalCount(row.maxOutputTokens),
  };
}

const ALL_EFFORTS: readonly ReasoningEffort[] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

export function ProviderForm({
  type,
  existing,
  catalog,
  onSaved,
  onCancel,
}: {
  readonly type: string;
  readonly existing: ConfiguredModelProvider | null;
  readonly catalog: readonly CatalogModelProvider[];
  readonly onSaved: (provider: ConfiguredModelProvider) => void;
  readonly onCancel: () => void;
}) {
  const settings = useServer().settings;
  const formRef = useRef<HTMLFormElement>(null);
  useReveal(formRef);
  const custom = type === "custom";
  const preset = catalog.find(
    (entry): entry is WellKnownCatalog => entry.type === type && entry.type !== "custom",
  );
  const customEntry = catalog.find((entry) => entry.type === "custom");
  const supportedEfforts =
    customEntry && customEntry.type === "custom" ? customEntry.supported_reasoning_efforts : ALL_EFFORTS;
  const stored = storedKey(existing?.manifest);
  const [name, setName] = useState(existing?.name ?? "");
  const [baseUrl, setBaseUrl] = useState(existing?.manifest.base_url ?? "");
  const [apiKey, setApiKey] = useState("");
  const [dropKey, setDropKey] = useState(false);
  const [rows, setRows] = useState<ModelRow[]>(() =>
    existing
      ? existing.manifest.models.map(rowFromModel)
      : custom
        ? [emptyRow()]
        : (preset?.models ?? []).map(rowFromModel),
  );
  const [submitted, setSubmitted] = useState(false);
  const [saving, setSaving] = useState(false);
  const [serverError, setServerError] = useState<string | null>(null);

  const keyRequired = !custom && !stored;
  const errors = {
    name: custom && !existing ? resourceNameError(name) : null,
    baseUrl: urlError(baseUrl, custom),
    apiKey: keyRequired && apiKey.trim() === "" ? "Required." : null,
    models: rows.length === 0 ? "Add at least one model." : null,
  };
  const rowsInvalid = rows.some((row) => Object.values(rowErrors(row, rows)).some((error) => error !== null));
  const invalid = rowsInvalid || Object.values(errors).some((error) => error !== null);
  const show = (error: string | null) => (submitted ? error : null);
  const missingPresets = (preset?.models ?? []).filter(
    (model) => !rows.some((row) => row.modelId.trim() === model.model_id),
  );

  const change = (key: number, patch: Partial<ModelRow>) =>
    setRows((list) =>
      list.map((row) => {
        if (row.key !== key) {
          return row;
        }
        const next = { ...row, ...patch };
        return patch.modelId !== undefined && !row.nameTouched
          ? { ...next, name: suggestName(patch.modelId) }
          : next;
      }),
    );

  const manifest = (): ModelProviderManifest => {
    const models = rows.map(modelFromRow);
    const key = apiKey.trim() !== "" ? apiKey.trim() : dropKey ? undefined : stored;
    if (custom) {
      return {
        type: "custom",
        name: existing?.name ?? name,
        base_url: baseUrl.trim(),
        models,
        ...(key ? { auth: { api_key: key } } : {}),
      };
    }
    // A well-known provider's `base_url` may be left out (the provider's own); the generated type marks the
    // defaulted field required, so the object is cast.
    return {
      type,
      auth: { api_key: key ?? "" },
      models,
      ...(baseUrl.trim() ? { base_url: baseUrl.trim() } : {}),
    } as ModelProviderManifest;
  };

  const save = async () => {
    setSubmitted(true);
    if (!settings || invalid) {
      return;
    }
    setSaving(true);
    setServerError(null);
    try {
      const result = await settings.putModelProvider(manifest());
      toast.success(`Saved ${result.name}.`);
      onSaved(result);
    } catch (error) {
      const message = describeError(error);
      setServerError(message);
      toast.error(`Could not save the provider: ${message}`);
    } finally {
      setSaving(false);
    }
  };

  const baseUrlField = (
    <TextField
      label="Base URL"
      type="url"
      value={baseUrl}
      onChange={setBaseUrl}
      required={custom}
      monospace
      testId="provider-base-url"
      placeholder={custom ? "https://llm.example.com/v1" : "The provider's default endpoint"}
      hint={
        custom
          ? "The OpenAI-compatible API root (the part before /chat/completions)."
          : "Leave empty for the provider's own endpoint."
      }
      error={show(errors.baseUrl)}
    />
  );
  const keyField = (
    <TextField
      label={custom ? "API key (optional)" : "API key"}
      type="password"
      value={apiKey}
      onChange={setApiKey}
      required={keyRequired}
      testId="provider-api-key"
      placeholder={stored ? "Leave empty to keep the stored key" : undefined}
      hint={
        stored
          ? storedSecretHint(stored)
          : custom
            ? "Sent as a Bearer token; leave empty for an endpoint without one."
            : undefined
      }
      error={show(errors.apiKey)}
    />
  );
  const title = existing ? `Edit ${existing.name}` : `Add ${providerLabel(type)}`;
  return (
    <form
      ref={formRef}
      className="tf-form tf-panel"
      data-testid="provider-form"
      aria-label={title}
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <h3 className="tf-panel-title">{title}</h3>
      {custom && !existing ? (
        <TextField
          label="Name"
          value={name}
          onChange={setName}
          required
          monospace
          testId="provider-name"
          hint="Agents name its models as <name>/<model>. Lowercase letters, digits, '.', '_' and '-'."
          error={submitted || name !== "" ? errors.name : null}
        />
      ) : null}
      {custom ? baseUrlField : keyField}
      {custom ? keyField : baseUrlField}
      {custom && stored ? (
        <CheckboxField
          label="Remove the stored key"
          hint="Calls then carry no key."
          checked={dropKey}
          disabled={apiKey.trim() !== ""}
          onChange={setDropKey}
        />
      ) : null}

      <Fieldset legend="Models" hint="The models agents may use, each under a name of its own.">
        <ol className="tf-model-rows" aria-label="Models">
          {rows.map((row, index) => {
            const rowError = rowErrors(row, rows);
            return (
              <li key={row.key} className="tf-model-row" data-testid="provider-model-row">
                <div className="tf-grid-2">
                  <TextField
                    label={`Model ${index + 1}: provider's id`}
                    value={row.modelId}
                    onChange={(value) => change(row.key, { modelId: value })}
                    required
                    monospace
                    placeholder="gpt-4.1-mini"
                    testId="provider-model-id"
                    error={show(rowError.modelId)}
                  />
                  <TextField
                    label={`Model ${index + 1}: name for agents`}
                    value={row.name}
                    onChange={(value) => change(row.key, { name: value, nameTouched: true })}
                    required
                    monospace
                    testId="provider-model-name"
                    error={submitted || row.nameTouched ? rowError.name : null}
                  />
                </div>
                <details className="tf-details">
                  <summary>Properties</summary>
                  <div className="tf-grid-2">
                    <TextField
                      label="Context length (tokens)"
                      type="number"
                      min={1}
                      value={row.contextLength}
                      onChange={(value) => change(row.key, { contextLength: value })}
                      error={show(rowError.contextLength)}
                    />
                    <TextField
                      label="Most output tokens"
                      type="number"
                      min={1}
                      value={row.maxOutputTokens}
                      onChange={(value) => change(row.key, { maxOutputTokens: value })}
                      hint="The default limit of an answer."
                      error={show(rowError.maxOutputTokens)}
                    />
                  </div>
                  <fieldset className="tf-fieldset tf-fieldset-plain">
                    <legend>Reasoning efforts the model accepts</legend>
                    <div className="tf-check-row">
                      {supportedEfforts.map((effort) => (
                        <CheckboxField
                          key={effort}
                          label={effort}
                          checked={row.efforts.includes(effort)}
                          onChange={(on) =>
                            change(row.key, {
                              efforts: on
                                ? supportedEfforts.filter((e) => e === effort || row.efforts.includes(e))
                                : row.efforts.filter((e) => e !== effort),
                            })
                          }
                        />
                      ))}
                    </div>
                  </fieldset>
                </details>
                <button
                  type="button"
                  className="tf-button tf-button-quiet tf-danger-text"
                  aria-label={`Remove model ${row.name || row.modelId || index + 1}`}
                  onClick={() => setRows((list) => list.filter((r) => r.key !== row.key))}
                >
                  Remove model
                </button>
              </li>
            );
          })}
        </ol>
        {show(errors.models) ? <p className="tf-field-error">{errors.models}</p> : null}
        <div className="tf-row tf-wrap">
          <button
            type="button"
            className="tf-button"
            onClick={() => setRows((list) => [...list, emptyRow()])}
          >
            Add a model
          </button>
          {missingPresets.length > 0 ? (
            <SelectField
              label="Add a preset model"
              value=""
              placeholder="Choose…"
              options={missingPresets.map((model) => ({ value: model.model_id, label: model.model_id }))}
              onChange={(value) => {
                const model = missingPresets.find((m) => m.model_id === value);
                if (model) {
                  setRows((list) => [...list, rowFromModel(model)]);
                }
              }}
            />
          ) : null}
        </div>
      </Fieldset>

      <div className="tf-form-actions">
        <FormError message={serverError} testId="provider-save-error" />
        <div className="tf-row tf-wrap">
          <button type="submit" className="tf-button tf-button-primary" disabled={saving} aria-busy={saving}>
            {saving ? "Saving…" : existing ? "Save" : "Add provider"}
          </button>
          <button type="button" className="tf-button" onClick={onCancel} disabled={saving}>
            Cancel
          </button>
        </div>
      </div>
    </form>
  );
}
