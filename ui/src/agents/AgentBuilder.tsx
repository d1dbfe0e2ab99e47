// The agent builder: a form that creates a saved agent or changes one (model, reasoning effort,
// instructions, MCP servers and their tools, skills, capabilities), tries it in a chat, deletes it, and
// lists the tools its users allowed for good.

import type { Agent, AvailableMcpServer, AvailableModel, AvailableSkill, Capabilities } from "@trueforge/sdk";
import { type ReactNode, useCallback, useId, useMemo, useRef, useState } from "react";
import { useNavigation } from "../app/router.js";
import { ChevronIcon } from "../atoms/icons.js";
import { useServer } from "../embed/context.js";
import { CheckboxField, Fieldset, NameField, SelectField, TextField } from "../settings/fields.js";
import { Form, FormFooter, SubmitButton, useFormSave } from "../settings/forms.js";
import { EmptyState, NotLoaded } from "../settings/states.js";
import { type Loaded, useLoad, useLoadFrom } from "../settings/useLoad.js";
import { resourceNameError } from "../settings/validation.js";
import { DeleteAgent, useStartChat } from "./agent-actions.js";
import { McpPicker } from "./McpPicker.js";
import { PickerState, SettingsLink, useOpenSettings } from "./settings-link.js";
import { type AgentForm, emptyForm, formFromSpec, specFromForm } from "./spec-form.js";
import { ToolApprovals } from "./ToolApprovals.js";
import "../settings/screens.css";

/** The capabilities every server offers, each a switch of the form (the sandbox, which a server may lack, apart). */
const CAPABILITY_SWITCHES = [
  {
    field: "askUserQuestions",
    label: "Ask the user questions",
    hint: "The agent may stop to ask clarifying questions, with choices to pick from.",
    testId: "cap-ask-user",
  },
  {
    field: "dynamicSubAgents",
    label: "Dynamic sub-agents",
    hint: "The agent may hand self-contained tasks to sub-agents it creates.",
    testId: "cap-sub-agents",
  },
  {
    field: "generativeUi",
    label: "Generative UI",
    hint: "The agent may answer with interactive components (forms, tables, charts) besides text.",
    testId: "cap-generative-ui",
  },
] as const;

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
  const models = useLoadFrom(port, (agents) => agents.models(), "the models");
  const mcpServers = useLoadFrom(port, (agents) => agents.mcpServers(), "the MCP servers");
  const skills = useLoadFrom(port, (agents) => agents.skills(), "the skills");
  const capabilities = useLoadFrom(port, (agents) => agents.capabilities(), "the server's capabilities");

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
    body = <NotLoaded loaded={loaded} label="Loading the agent…" errorTestId="agent-load-error" />;
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
    body = <NotLoaded loaded={models} label="Loading the models…" />;
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
  const { navigate } = useNavigation();
  const openSettings = useOpenSettings();
  const startChat = useStartChat();
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
  const saveForm = useFormSave<Agent>({
    what: "the agent",
    savedMessage: (saved) => (agent ? `Saved ${saved.name}.` : `Created ${saved.name}.`),
    onSaved: (saved) => onSaved(saved, agent === null),
  });
  const { submitted, saving, show } = saveForm;
  const [starting, setStarting] = useState(false);

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

  const save = (): Promise<Agent | null> => {
    if (port && invalid) {
      requestAnimationFrame(() =>
        formRef.current?.querySelector<HTMLElement>("[aria-invalid='true']")?.focus(),
      );
    }
    return saveForm.submit(
      port && !invalid
        ? async () => {
            const result = agent ? await port.update(agent.id, spec) : await port.create(form.name, spec);
            setBaseline(JSON.stringify(spec));
            return result;
          }
        : null,
    );
  };

  const tryInChat = async () => {
    const target = agent === null || dirty ? await save() : agent;
    if (!target) {
      return;
    }
    setStarting(true);
    if (!(await startChat(target.name))) {
      setStarting(false);
    }
  };

  const remove = port?.delete;
  const sandboxOn = capabilities?.sandbox.enabled === true;
  const sandboxReason = capabilities?.sandbox.reason;
  const skillsOn = capabilities?.skill.enabled !== false;
  const busy = saving || starting;

  return (
    <>
      <div className="tf-page-head">
        <h1 id={headingId}>{agent ? agent.name : "New agent"}</h1>
        {dirty && agent ? <span className="tf-chip tf-chip-warn">Unsaved changes</span> : null}
      </div>
      <Form ref={formRef} testId="agent-form" labelledBy={headingId} onSubmit={() => void save()}>
        <Fieldset legend="Agent">
          {agent === null ? (
            <NameField
              value={form.name}
              onChange={(value) => set("name", value)}
              error={errors.name}
              submitted={submitted}
              autoFocus
              testId="agent-name"
              hint="2 to 64 characters: lowercase letters, digits, '.', '_' and '-'; a letter first. It cannot be changed later."
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
                show(errors.model) ?? (form.model && !model ? "This model is not configured any more." : null)
              }
              hint={
                models.length === 0 && openSettings ? (
                  <SettingsLink section="models">Add a model provider in the settings</SettingsLink>
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
          {CAPABILITY_SWITCHES.map(({ field, label, hint, testId }) => (
            <CheckboxField
              key={field}
              label={label}
              hint={hint}
              checked={form[field]}
              onChange={(on) => set(field, on)}
              testId={testId}
            />
          ))}
          <CheckboxField
            label="Sandbox"
            hint={
              sandboxOn
                ? "A workspace per chat where the agent runs commands (the exec tool) and keeps files: files users send go in, files it makes can be downloaded."
                : `Not available on this server${sandboxReason ? `: ${sandboxReason}` : "."}`
            }
            checked={form.sandbox}
            // Off stays possible for a spec that has it on.
            disabled={!sandboxOn && !form.sandbox}
            onChange={(on) => set("sandbox", on)}
            testId="cap-sandbox"
          />
        </Fieldset>

        <FormFooter error={saveForm.error} errorTestId="agent-save-error">
          <SubmitButton saving={saving} disabled={busy} testId="agent-save">
            {agent ? "Save" : "Create agent"}
          </SubmitButton>
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
            <DeleteAgent
              agent={agent}
              disabled={busy}
              testId="agent-delete"
              remove={() => remove.call(port, agent.id)}
              onDeleted={() => navigate({ name: "agents" })}
            />
          ) : null}
        </FormFooter>
      </Form>
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
      <PickerState
        loaded={skills}
        label="Loading the skills…"
        empty={configured.length === 0 && missing.length === 0}
        what="skill"
        section="skills"
      />
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
