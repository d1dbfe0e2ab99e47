// The agent builder: a form that creates a saved agent or changes one (model, reasoning effort,
// instructions, MCP servers and their tools, skills, capabilities), tries it in a chat, deletes it, and
// lists the tools its users allowed for good.

import type { Agent, AvailableMcpServer, AvailableModel, AvailableSkill, Capabilities } from "@trueforge/sdk";
import { type ReactNode, useCallback, useId, useMemo, useRef, useState } from "react";
import { toast } from "sonner";
import { useNavigation } from "../app/router.js";
import { ChevronIcon } from "../atoms/icons.js";
import { useServer, useShell } from "../embed/context.js";
import {
  CheckboxField,
  ConfirmDelete,
  EmptyState,
  ErrorState,
  Fieldset,
  FormError,
  LoadingState,
  SelectField,
  TextField,
} from "../settings/fields.js";
import { type Loaded, useLoad } from "../settings/useLoad.js";
import { resourceNameError } from "../settings/validation.js";
import { describeError } from "../state/errors.js";
import { McpPicker } from "./McpPicker.js";
import { type AgentForm, emptyForm, formFromSpec, specFromForm } from "./spec-form.js";
import { ToolApprovals } from "./ToolApprovals.js";
import "../settings/screens.css";

export default function AgentBuilder({ agentId }: { readonly agentId: string | null }) {
  const server = useServer();
  const { navigate } = useNavigation();
  const port = server.agents;
  // The agent as last saved here: a created agent is shown without asking the server for it again.
  const [saved, setSaved] = useState<Agent | null>(null);
  const needsLoad = port !== undefined && agentId !== null && saved?.id !== agentId;
  const loadAgent = useMemo(
    () =>
      port && needsLoad
        ? async () => (await port.list()).find((agent) => agent.id === agentId) ?? null
        : null,
    [port, needsLoad, agentId],
  );
  const loaded = useLoad(loadAgent, "the agent");
  const models = useLoad(
    useMemo(() => (port ? () => port.models() : null), [port]),
    "the models",
  );
  const mcpServers = useLoad(
    useMemo(() => (port ? () => port.mcpServers() : null), [port]),
    "the MCP servers",
  );
  const skills = useLoad(
    useMemo(() => (port ? () => port.skills() : null), [port]),
    "the skills",
  );
  const capabilities = useLoad(
    useMemo(() => (port ? () => port.capabilities() : null), [port]),
    "the server's capabilities",
  );

  const back = (
    <button
      type="button"
      className="tf-button tf-button-quiet tf-back"
      onClick={() => navigate({ name: "agents" })}
    >
      <ChevronIcon className="tf-flip" /> Agents
    </button>
  );

  if (!port) {
    return (
      <div className="tf-page">
        {back}
        <h1>Agent</h1>
        <EmptyState>This server offers no agent builder.</EmptyState>
      </div>
    );
  }

  // `undefined`: not loaded yet; `null`: a new agent, or no agent has that id.
  const agent: Agent | null | undefined =
    agentId === null ? null : saved?.id === agentId ? saved : loaded.data;

  let body: ReactNode;
  if (agentId !== null && agent === undefined) {
    body = loaded.error ? (
      <ErrorState message={loaded.error} onRetry={loaded.reload} testId="agent-load-error" />
    ) : (
      <LoadingState label="Loading the agent…" />
    );
  } else if (agentId !== null && agent === null) {
    body = (
      <EmptyState testId="agent-missing">
        <p>This agent does not exist (any more).</p>
        <button type="button" className="tf-button" onClick={() => navigate({ name: "agents" })}>
          Back to the agents
        </button>
      </EmptyState>
    );
  } else if (!models.data) {
    body = models.error ? (
      <ErrorState message={models.error} onRetry={models.reload} />
    ) : (
      <LoadingState label="Loading the models…" />
    );
  } else {
    body = (
      <AgentEditor
        key={agentId ?? "new"}
        agent={agent ?? null}
        models={models.data}
        mcpServers={mcpServers}
        skills={skills}
        capabilities={capabilities.data}
        onSaved={(result, created) => {
          setSaved(result);
          if (created) {
            navigate({ name: "agent", agentId: result.id }, { replace: true });
          }
        }}
      />
    );
  }
  return (
    <div className="tf-page" data-testid="agent-builder">
      {back}
      {body}
    </div>
  );
}

function AgentEditor({
  agent,
  models,
  mcpServers,
  skills,
  capabilities,
  onSaved,
}: {
  readonly agent: Agent | null;
  readonly models: readonly AvailableModel[];
  readonly mcpServers: Loaded<AvailableMcpServer[]>;
  readonly skills: Loaded<AvailableSkill[]>;
  readonly capabilities: Capabilities | undefined;
  readonly onSaved: (agent: Agent, created: boolean) => void;
}) {
  const server = useServer();
  const shell = useShell();
  const { navigate } = useNavigation();
  const port = server.agents;
  const headingId = useId();
  const formRef = useRef<HTMLFormElement>(null);
  const [form, setForm] = useState<AgentForm>(() =>
    agent ? formFromSpec(agent.name, agent.manifest) : emptyForm(models[0]?.name ?? ""),
  );
  // The spec the form writes over: the one loaded when the editor opened (the form shows every part a
  // save can change, so later answers of the server need not replace it).
  const [base] = useState(agent?.manifest);
  const spec = useMemo(() => specFromForm(form, base), [form, base]);
  const [baseline, setBaseline] = useState(() => JSON.stringify(spec));
  const dirty = JSON.stringify(spec) !== baseline || (agent === null && form.name !== "");
  const [submitted, setSubmitted] = useState(false);
  const [saving, setSaving] = useState(false);
  const [starting, setStarting] = useState(false);
  const [serverError, setServerError] = useState<string | null>(null);

  const set = useCallback(<K extends keyof AgentForm>(field: K, value: AgentForm[K]) => {
    setForm((current) => ({ ...current, [field]: value }));
  }, []);

  const model = models.find((m) => m.name === form.model);
  const efforts = model?.properties.reasoning_efforts ?? [];
  const errors = {
    name: agent === null ? resourceNameError(form.name) : null,
    model: form.model === "" ? "Choose a model." : null,
  };
  const invalid = Object.values(errors).some((error) => error !== null);
  // A name's rules are shown as soon as something is typed; the rest after a first Save.
  const shown = (field: keyof typeof errors) =>
    submitted || (field === "name" && form.name !== "") ? errors[field] : null;

  const save = async (): Promise<Agent | null> => {
    setSubmitted(true);
    if (!port) {
      return null;
    }
    if (invalid) {
      requestAnimationFrame(() =>
        formRef.current?.querySelector<HTMLElement>("[aria-invalid='true']")?.focus(),
      );
      return null;
    }
    setSaving(true);
    setServerError(null);
    try {
      const result = agent ? await port.update(agent.id, spec) : await port.create(form.name, spec);
      setBaseline(JSON.stringify(spec));
      toast.success(agent ? `Saved ${result.name}.` : `Created ${result.name}.`);
      onSaved(result, agent === null);
      return result;
    } catch (error) {
      const message = describeError(error);
      setServerError(message);
      toast.error(`Could not save the agent: ${message}`);
      return null;
    } finally {
      setSaving(false);
    }
  };

  const tryInChat = async () => {
    const target = agent === null || dirty ? await save() : agent;
    if (!target) {
      return;
    }
    setStarting(true);
    try {
      const session = await server.chat.createSession({ name: target.name });
      navigate({ name: "chat", sessionId: session.id });
    } catch (error) {
      toast.error(`Could not start a chat with ${target.name}: ${describeError(error)}`);
      setStarting(false);
    }
  };

  const remove = port?.delete;
  const sandboxOn = capabilities?.sandbox.enabled === true;
  const skillsOn = capabilities?.skill.enabled !== false;
  const busy = saving || starting;

  return (
    <>
      <div className="tf-page-head">
        <h1 id={headingId}>{agent ? agent.name : "New agent"}</h1>
        {dirty && agent ? <span className="tf-chip tf-chip-warn">Unsaved changes</span> : null}
      </div>
      <form
        ref={formRef}
        className="tf-form"
        data-testid="agent-form"
        aria-labelledby={headingId}
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <Fieldset legend="Agent">
          {agent === null ? (
            <TextField
              label="Name"
              value={form.name}
              onChange={(value) => set("name", value)}
              required
              autoFocus
              monospace
              testId="agent-name"
              hint="2 to 64 characters: lowercase letters, digits, '.', '_' and '-'; a letter first. It cannot be changed later."
              error={shown("name")}
            />
          ) : (
            <p className="tf-field-hint">
              The name <span className="tf-mono">{agent.name}</span> cannot be changed.
            </p>
          )}
          <div className="tf-grid-2">
            <SelectField
              label="Model"
              value={form.model}
              required
              testId="agent-model"
              placeholder={models.length === 0 ? "No model is configured" : "Choose a model"}
              options={[
                ...models.map((m) => ({ value: m.name, label: m.name })),
                ...(form.model && !model
                  ? [{ value: form.model, label: `${form.model} (not configured)` }]
                  : []),
              ]}
              onChange={(value) => {
                const next = models.find((m) => m.name === value);
                setForm((current) => ({
                  ...current,
                  model: value,
                  reasoningEffort:
                    current.reasoningEffort &&
                    next?.properties.reasoning_efforts?.includes(current.reasoningEffort)
                      ? current.reasoningEffort
                      : "",
                }));
              }}
              error={
                shown("model") ?? (form.model && !model ? "This model is not configured any more." : null)
              }
              hint={
                models.length === 0 && shell.settings && server.settings ? (
                  <button
                    type="button"
                    className="tf-link"
                    onClick={() => navigate({ name: "settings", section: "models" })}
                  >
                    Add a model provider in the settings
                  </button>
                ) : undefined
              }
            />
            {efforts.length > 0 || form.reasoningEffort !== "" ? (
              <SelectField
                label="Reasoning effort"
                value={form.reasoningEffort}
                testId="agent-reasoning"
                placeholder="The model's default"
                options={[
                  ...efforts.map((effort) => ({ value: effort, label: effort })),
                  ...(form.reasoningEffort !== "" && !efforts.includes(form.reasoningEffort)
                    ? [
                        {
                          value: form.reasoningEffort,
                          label: `${form.reasoningEffort} (not offered by this model)`,
                        },
                      ]
                    : []),
                ]}
                error={
                  form.reasoningEffort !== "" && !efforts.includes(form.reasoningEffort)
                    ? "The model does not list this effort."
                    : null
                }
                onChange={(value) => set("reasoningEffort", value as AgentForm["reasoningEffort"])}
              />
            ) : null}
          </div>
          <TextField
            label="Instructions"
            value={form.instructions}
            onChange={(value) => set("instructions", value)}
            rows={8}
            testId="agent-instructions"
            placeholder="What the agent is for, how it should work and answer."
            hint="The system instructions the model gets in every chat with this agent."
          />
        </Fieldset>

        <McpPicker available={mcpServers} choices={form.mcp} onChange={(mcp) => set("mcp", mcp)} />

        <SkillsPicker
          skills={skills}
          chosen={form.skills}
          enabled={skillsOn}
          reason={capabilities?.skill.reason}
          onChange={(list) => set("skills", list)}
        />

        <Fieldset legend="Capabilities" testId="agent-capabilities">
          <CheckboxField
            label="Ask the user questions"
            hint="The agent may stop to ask clarifying questions, with choices to pick from."
            checked={form.askUserQuestions}
            onChange={(on) => set("askUserQuestions", on)}
            testId="cap-ask-user"
          />
          <CheckboxField
            label="Dynamic sub-agents"
            hint="The agent may hand self-contained tasks to sub-agents it creates."
            checked={form.dynamicSubAgents}
            onChange={(on) => set("dynamicSubAgents", on)}
            testId="cap-sub-agents"
          />
          <CheckboxField
            label="Generative UI"
            hint="The agent may answer with interactive components (forms, tables, charts) besides text."
            checked={form.generativeUi}
            onChange={(on) => set("generativeUi", on)}
            testId="cap-generative-ui"
          />
          <CheckboxField
            label="Sandbox"
            hint={
              sandboxOn
                ? "A remote machine where the agent runs commands and keeps files."
                : "Not available: this server does not run sandboxes yet."
            }
            checked={form.sandbox}
            // Off stays possible for a spec that has it on.
            disabled={!sandboxOn && !form.sandbox}
            onChange={(on) => set("sandbox", on)}
            testId="cap-sandbox"
          />
        </Fieldset>

        <div className="tf-form-actions">
          <FormError message={serverError} testId="agent-save-error" />
          <div className="tf-row tf-wrap">
            <button
              type="submit"
              className="tf-button tf-button-primary"
              disabled={busy}
              aria-busy={saving}
              data-testid="agent-save"
            >
              {saving ? "Saving…" : agent ? "Save" : "Create agent"}
            </button>
            <button
              type="button"
              className="tf-button"
              disabled={busy}
              aria-busy={starting}
              data-testid="agent-try"
              onClick={() => void tryInChat()}
            >
              {starting ? "Starting…" : agent === null || dirty ? "Save and try in chat" : "Try in chat"}
            </button>
            {agent && remove ? (
              <ConfirmDelete
                what={agent.name}
                disabled={busy}
                testId="agent-delete"
                description={
                  <p>The agent is removed from the library for everyone. This cannot be undone.</p>
                }
                onConfirm={async () => {
                  try {
                    await remove.call(port, agent.id);
                    toast.success(`Deleted ${agent.name}.`);
                    navigate({ name: "agents" });
                  } catch (error) {
                    toast.error(`Could not delete ${agent.name}: ${describeError(error)}`);
                    throw error;
                  }
                }}
              />
            ) : null}
          </div>
        </div>
      </form>
      {agent ? <ToolApprovals agentId={agent.id} /> : null}
    </>
  );
}

function SkillsPicker({
  skills,
  chosen,
  enabled,
  reason,
  onChange,
}: {
  readonly skills: Loaded<AvailableSkill[]>;
  readonly chosen: readonly string[];
  readonly enabled: boolean;
  readonly reason: string | undefined;
  readonly onChange: (skills: string[]) => void;
}) {
  const server = useServer();
  const shell = useShell();
  const { navigate } = useNavigation();
  const configured = skills.data ?? [];
  const known = new Set(configured.map((skill) => skill.name));
  const missing = skills.data ? chosen.filter((name) => !known.has(name)) : [];
  const toggle = (name: string, on: boolean) =>
    onChange(on ? [...chosen, name] : chosen.filter((skill) => skill !== name));
  return (
    <Fieldset
      legend="Skills"
      hint={
        enabled
          ? "Instructions and files the agent loads when a task calls for them."
          : `Skills are off on this server${reason ? `: ${reason}` : "."}`
      }
      testId="agent-skills"
    >
      {skills.loading && !skills.data ? <LoadingState label="Loading the skills…" /> : null}
      {skills.error && !skills.data ? <ErrorState message={skills.error} onRetry={skills.reload} /> : null}
      {skills.data && configured.length === 0 && missing.length === 0 ? (
        <p className="tf-muted">
          No skill is configured.{" "}
          {shell.settings && server.settings ? (
            <button
              type="button"
              className="tf-link"
              onClick={() => navigate({ name: "settings", section: "skills" })}
            >
              Add one in the settings
            </button>
          ) : null}
        </p>
      ) : null}
      <div className="tf-check-grid">
        {configured.map((skill) => (
          <CheckboxField
            key={skill.name}
            label={skill.name}
            hint={skill.description}
            checked={chosen.includes(skill.name)}
            disabled={!enabled && !chosen.includes(skill.name)}
            onChange={(on) => toggle(skill.name, on)}
            testId="agent-skill"
          />
        ))}
        {missing.map((name) => (
          <CheckboxField
            key={name}
            label={name}
            hint="Not configured any more: remove it, or add it again in the settings."
            checked
            onChange={(on) => toggle(name, on)}
            testId="agent-skill"
          />
        ))}
      </div>
    </Fieldset>
  );
}
