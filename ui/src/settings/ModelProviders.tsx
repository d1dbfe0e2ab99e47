// Settings › Model providers: the configured providers with their models, and a form to add one (a
// well-known provider from the catalog, or a custom OpenAI-compatible endpoint) or change one.

import type {
  CatalogModelProvider,
  ConfiguredModelProvider,
  components,
  ModelProviderManifest,
} from "@trueforge/sdk";
import { useState } from "react";
import { useServer } from "../embed/context.js";
import { CheckboxField, Fieldset, NameField, SelectField, TextField } from "./fields.js";
import { type EditFormProps, PanelForm, useFormSave } from "./forms.js";
import { CatalogTitle, EditAndDelete, ListRow, RowButton, StatusChip } from "./rows.js";
import { Section } from "./section.js";
import { EmptyState, LoadedList } from "./states.js";
import { useLoadFrom, withSaved } from "./useLoad.js";
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
type ModelPricing = components["schemas"]["ModelPricing"];
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
  const catalog = useLoadFrom(settings, (port) => port.modelProviderCatalog(), "the model provider catalog");
  const configured = useLoadFrom(settings, (port) => port.modelProviders(), "the model providers");
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
    configured.update((list) => withSaved(list, result));
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
    <Section
      titleId="tf-providers-title"
      title="Model providers"
      testId="settings-models"
      intro="The providers whose models agents can use, each with its API key. Keys are stored encrypted and never shown again."
    >
      {editing && editing.existing === null ? form(editing.type, null) : null}

      <LoadedList
        heading="Configured"
        loaded={configured}
        loadingLabel="Loading the model providers…"
        empty={
          providers.length === 0 ? (
            <EmptyState testId="providers-empty">
              No model provider yet: add one below to start chatting.
            </EmptyState>
          ) : null
        }
        testId="provider-list"
        label="Configured model providers"
      >
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
                <EditAndDelete
                  what={provider.name}
                  editing={isEditing}
                  onToggleEdit={() =>
                    setEditing(isEditing ? null : { type: manifest.type, existing: provider })
                  }
                  remove={remove && (() => remove.call(settings, provider.name))}
                  onDeleted={() => configured.update((list) => list.filter((p) => p.name !== provider.name))}
                  description={
                    <p>Agents that use its models stop working until they are given another model.</p>
                  }
                />
              }
            >
              {isEditing ? form(manifest.type, provider) : null}
            </ListRow>
          );
        })}
      </LoadedList>

      <LoadedList
        heading="Add a provider"
        loaded={catalog}
        loadingLabel="Loading the catalog…"
        empty={null}
        testId="provider-catalog"
        label="Providers to add"
      >
        {available.map((entry) => (
          <ListRow
            key={entry.type}
            testId="provider-catalog-row"
            name={entry.type}
            title={<CatalogTitle logo={entry.logo} name={providerLabel(entry.type)} />}
            subtitle={`${entry.models.length} preset model${entry.models.length === 1 ? "" : "s"}`}
            actions={
              <RowButton
                label={`Add ${providerLabel(entry.type)}`}
                onClick={() => setEditing({ type: entry.type, existing: null })}
              >
                Add
              </RowButton>
            }
          />
        ))}
        <ListRow
          testId="provider-catalog-row"
          name="custom"
          title="Custom provider"
          subtitle="Any OpenAI-compatible endpoint (a gateway, a local server), under a name of your own."
          actions={
            <RowButton
              label="Add a custom provider"
              onClick={() => setEditing({ type: "custom", existing: null })}
            >
              Add
            </RowButton>
          }
        />
      </LoadedList>
    </Section>
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
  /** The four common prices (USD per million tokens), as typed; empty means none. */
  readonly prices: Readonly<Record<PriceField, string>>;
  /** The stored prices: the form keeps those it has no fields for (reasoning, long prompts) as they are. */
  readonly pricing?: ModelPricing;
}

/** The prices the form edits; the others of `ModelPricing` (reasoning, long prompts) are set through the API. */
const PRICE_FIELDS = [
  { field: "input_per_mtok", label: "Input, USD per million tokens" },
  { field: "output_per_mtok", label: "Output, USD per million tokens" },
  { field: "cache_read_per_mtok", label: "Cache read, USD per million tokens" },
  { field: "cache_write_per_mtok", label: "Cache write, USD per million tokens" },
] as const;

type PriceField = (typeof PRICE_FIELDS)[number]["field"];

function pricesFrom(pricing: ModelPricing | undefined): Record<PriceField, string> {
  const text = (value: number | undefined) => (value === undefined ? "" : value.toString());
  return {
    input_per_mtok: text(pricing?.input_per_mtok),
    output_per_mtok: text(pricing?.output_per_mtok),
    cache_read_per_mtok: text(pricing?.cache_read_per_mtok),
    cache_write_per_mtok: text(pricing?.cache_write_per_mtok),
  };
}

/** The stored prices with the form's four replaced (an emptied field removes that price); `undefined` when
 * no price is left. */
function pricingFromRow(row: ModelRow): ModelPricing | undefined {
  const pricing: ModelPricing = { ...row.pricing };
  for (const { field } of PRICE_FIELDS) {
    const typed = row.prices[field].trim();
    if (typed === "") {
      delete pricing[field];
    } else {
      pricing[field] = Number(typed);
    }
  }
  return Object.keys(pricing).length > 0 ? pricing : undefined;
}

function priceError(value: string): string | null {
  if (value.trim() === "") {
    return null;
  }
  const number = Number(value);
  return Number.isFinite(number) && number >= 0 ? null : "Use a number of 0 or more.";
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
    prices: pricesFrom(model.properties.pricing),
    ...(model.properties.pricing ? { pricing: model.properties.pricing } : {}),
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
    prices: pricesFrom(undefined),
  };
}

function modelFromRow(row: ModelRow): ConfiguredModel {
  const pricing = pricingFromRow(row);
  return {
    model_id: row.modelId.trim(),
    name: row.name,
    properties: {
      ...(row.contextLength.trim() ? { context_length: Number(row.contextLength) } : {}),
      ...(row.maxOutputTokens.trim() ? { max_output_tokens: Number(row.maxOutputTokens) } : {}),
      ...(row.efforts.length > 0 ? { reasoning_efforts: [...row.efforts] } : {}),
      ...(pricing ? { pricing } : {}),
    },
  };
}

function optionalCount(value: string): string | null {
  return value.trim() === "" ? null : integerError(value, 1);
}

type RowErrors = Record<"modelId" | "name" | "contextLength" | "maxOutputTokens" | PriceField, string | null>;

function rowErrors(row: ModelRow, rows: readonly ModelRow[]): RowErrors {
  const sameId = rows.filter((other) => other.modelId.trim() === row.modelId.trim()).length > 1;
  const sameName = rows.filter((other) => other.name === row.name).length > 1;
  return {
    modelId: requiredError(row.modelId) ?? (sameId ? "Listed twice." : null),
    name: resourceNameError(row.name) ?? (sameName ? "Used by another model." : null),
    contextLength: optionalCount(row.contextLength),
    maxOutputTokens: optionalCount(row.maxOutputTokens),
    input_per_mtok: priceError(row.prices.input_per_mtok),
    output_per_mtok: priceError(row.prices.output_per_mtok),
    cache_read_per_mtok: priceError(row.prices.cache_read_per_mtok),
    cache_write_per_mtok: priceError(row.prices.cache_write_per_mtok),
  };
}

/** A model's optional token counts, each a whole number of at least 1. */
const MODEL_COUNTS = [
  { field: "contextLength", label: "Context length (tokens)", hint: undefined },
  { field: "maxOutputTokens", label: "Most output tokens", hint: "The default limit of an answer." },
] as const;

const ALL_EFFORTS: readonly ReasoningEffort[] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

export function ProviderForm({
  type,
  existing,
  catalog,
  onSaved,
  onCancel,
}: EditFormProps<ConfiguredModelProvider> & {
  readonly type: string;
  readonly catalog: readonly CatalogModelProvider[];
}) {
  const settings = useServer().settings;
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
  const form = useFormSave({
    what: "the provider",
    savedMessage: (saved) => `Saved ${saved.name}.`,
    onSaved,
  });
  const { submitted, show } = form;

  const keyRequired = !custom && !stored;
  const errors = {
    name: custom && !existing ? resourceNameError(name) : null,
    baseUrl: urlError(baseUrl, custom),
    apiKey: keyRequired && apiKey.trim() === "" ? "Required." : null,
    models: rows.length === 0 ? "Add at least one model." : null,
  };
  const rowsInvalid = rows.some((row) => Object.values(rowErrors(row, rows)).some((error) => error !== null));
  const invalid = rowsInvalid || Object.values(errors).some((error) => error !== null);
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

  const save = () => form.submit(settings && !invalid ? () => settings.putModelProvider(manifest()) : null);

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
  return (
    <PanelForm
      label={existing ? `Edit ${existing.name}` : `Add ${providerLabel(type)}`}
      testId="provider-form"
      errorTestId="provider-save-error"
      save={form}
      submitLabel={existing ? "Save" : "Add provider"}
      onSubmit={() => void save()}
      onCancel={onCancel}
    >
      {custom && !existing ? (
        <NameField
          value={name}
          onChange={setName}
          error={errors.name}
          submitted={submitted}
          testId="provider-name"
          hint="Agents name its models as <name>/<model>. Lowercase letters, digits, '.', '_' and '-'."
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
                    {MODEL_COUNTS.map(({ field, label, hint }) => (
                      <TextField
                        key={field}
                        label={label}
                        type="number"
                        min={1}
                        value={row[field]}
                        onChange={(value) => change(row.key, { [field]: value })}
                        hint={hint}
                        error={show(rowError[field])}
                      />
                    ))}
                  </div>
                  <Fieldset legend="Prices (for the cost of each turn)" plain>
                    <div className="tf-grid-2">
                      {PRICE_FIELDS.map(({ field, label }) => (
                        <TextField
                          key={field}
                          label={label}
                          type="number"
                          min={0}
                          step="any"
                          value={row.prices[field]}
                          onChange={(value) => change(row.key, { prices: { ...row.prices, [field]: value } })}
                          testId={`provider-model-${field}`}
                          error={show(rowError[field])}
                        />
                      ))}
                    </div>
                  </Fieldset>
                  <Fieldset legend="Reasoning efforts the model accepts" plain>
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
                  </Fieldset>
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
    </PanelForm>
  );
}
