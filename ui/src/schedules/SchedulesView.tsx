// The signed-in user's schedules: each runs a saved agent on a cron, read in a time zone, as the user's own
// chats. The list (name, agent, cron and zone, active or paused, next run), New and Edit in a form that shows
// the server's refusal (an invalid cron or zone, a cron more frequent than the server allows, an agent that
// is gone), Pause and Resume, Run now, a confirmed Delete, and each schedule's runs, whose chats open here.

import type { Agent, Page, Schedule, ScheduleRequest, ScheduleRun } from "@trueforge/sdk";
import { type MouseEvent, useId, useMemo, useState } from "react";
import { toast } from "sonner";
import { routePath, useNavigation } from "../app/router.js";
import { useServer, useShell } from "../embed/context.js";
import type { AgentsPort, SchedulesPort } from "../server/port.js";
import { SelectField, TextField } from "../settings/fields.js";
import { type EditFormProps, PanelForm, useFormSave } from "../settings/forms.js";
import { EditAndDelete, ListRow, RowButton, StatusChip, useRowAction } from "../settings/rows.js";
import { EmptyState, Loadable, NotLoaded } from "../settings/states.js";
import { useLoadFrom } from "../settings/useLoad.js";
import { describeError } from "../state/errors.js";
import {
  browserTimeZone,
  CRON_PRESETS,
  cronError,
  formatWhen,
  missedText,
  runStatus,
  scheduleNameError,
  taskError,
  timeZoneError,
  timeZoneSuggestions,
} from "./schedule-format.js";
import "../settings/screens.css";
import "./schedules.css";

/** Runs read per page of a schedule's runs. */
const RUNS_PAGE = 20;

type Editing = { readonly mode: "new" } | { readonly mode: "edit"; readonly id: string } | null;

/** A click that the app handles itself (not one that opens the link in a new tab or window). */
function isPlainClick(event: MouseEvent): boolean {
  return !(event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || event.button !== 0);
}

function ScheduleForm({
  port,
  agents,
  existing,
  onSaved,
  onCancel,
}: EditFormProps<Schedule> & { readonly port: SchedulesPort; readonly agents: readonly Agent[] }) {
  const manifest = existing?.manifest;
  const [name, setName] = useState(existing?.name ?? "");
  const [agentId, setAgentId] = useState(
    existing?.agent_id ?? (agents.length === 1 ? agents[0]?.id : "") ?? "",
  );
  const [cron, setCron] = useState(manifest?.cron ?? "");
  const [timezone, setTimezone] = useState(() => manifest?.timezone ?? browserTimeZone());
  const [task, setTask] = useState(manifest?.task ?? "");
  const zonesId = useId();
  const zones = useMemo(() => timeZoneSuggestions(manifest ? [manifest.timezone] : []), [manifest]);
  const save = useFormSave<Schedule>({
    what: "the schedule",
    savedMessage: (saved) => (existing ? `Saved ${saved.name}.` : `Created ${saved.name}.`),
    onSaved,
  });
  const agentGone = agentId !== "" && !agents.some((agent) => agent.id === agentId);
  const errors = {
    name: scheduleNameError(name),
    agent:
      agentId === "" ? "Pick a saved agent." : agentGone ? "This agent was deleted: pick another." : null,
    cron: cronError(cron),
    timezone: timeZoneError(timezone),
    task: taskError(task),
  };
  const invalid = Object.values(errors).some((error) => error !== null);
  const options = [...agents]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((agent) => ({ value: agent.id, label: agent.name }));
  if (agentGone) {
    options.unshift({ value: agentId, label: "A deleted agent" });
  }

  const submit = () => {
    const request: ScheduleRequest = {
      name: name.trim(),
      agent_id: agentId,
      manifest: { task, cron: cron.trim(), timezone: timezone.trim() },
    };
    void save.submit(
      invalid ? null : () => (existing ? port.update(existing.id, request) : port.create(request)),
    );
  };

  return (
    <PanelForm
      label={existing ? `Edit ${existing.name}` : "New schedule"}
      testId="schedule-form"
      errorTestId="schedule-form-error"
      save={save}
      submitLabel={existing ? "Save" : "Create schedule"}
      onSubmit={submit}
      onCancel={onCancel}
    >
      <div className="tf-grid-2">
        <TextField
          label="Name"
          value={name}
          onChange={setName}
          required
          testId="schedule-name"
          placeholder="Morning digest"
          error={save.show(errors.name)}
        />
        <SelectField
          label="Agent"
          value={agentId}
          onChange={setAgentId}
          options={options}
          placeholder="Pick a saved agent"
          required
          testId="schedule-agent"
          hint="Each run is a new chat with this agent."
          error={save.show(errors.agent)}
        />
      </div>
      <div className="tf-grid-2">
        <div className="tf-field">
          <TextField
            label="Cron"
            value={cron}
            onChange={setCron}
            required
            monospace
            testId="schedule-cron"
            placeholder="0 9 * * MON-FRI"
            hint="Minute, hour, day of the month, month, day of the week (or seconds first). The server refuses a cron that runs more often than it allows (an hour apart by default)."
            error={save.show(errors.cron)}
          />
          <fieldset className="tf-presets" aria-label="Common crons">
            {CRON_PRESETS.map((preset) => (
              <button
                key={preset.cron}
                type="button"
                className="tf-button"
                aria-pressed={cron.trim() === preset.cron}
                title={preset.cron}
                onClick={() => setCron(preset.cron)}
              >
                {preset.label}
              </button>
            ))}
          </fieldset>
        </div>
        <TextField
          label="Time zone"
          value={timezone}
          onChange={setTimezone}
          required
          list={zonesId}
          testId="schedule-timezone"
          placeholder="Europe/Paris"
          hint="The IANA zone the cron is read in: 9:00 stays 9:00 across daylight-saving changes."
          error={save.show(errors.timezone)}
        />
        <datalist id={zonesId}>
          {zones.map((zone) => (
            <option key={zone} value={zone} />
          ))}
        </datalist>
      </div>
      <TextField
        label="Message"
        value={task}
        onChange={setTask}
        required
        rows={4}
        testId="schedule-task"
        hint="The first message of each run's chat: what the agent is asked to do."
        error={save.show(errors.task)}
      />
    </PanelForm>
  );
}

/** One run: its status, when it was due, and its chat (a started run), what was missed, or why it failed. */
function RunRow({ run, timeZone }: { readonly run: ScheduleRun; readonly timeZone: string }) {
  const { navigate } = useNavigation();
  const status = runStatus(run);
  const when = formatWhen(run.due_at, timeZone);
  const sessionId = run.session_id;
  return (
    <li className="tf-run" data-testid="schedule-run" data-status={run.status}>
      <StatusChip tone={status.tone}>{status.label}</StatusChip>
      <span className="tf-muted" title={run.due_at}>
        {run.trigger === "manual" ? "Run now" : "Scheduled"} · {when}
      </span>
      {sessionId ? (
        <a
          className="tf-link"
          href={routePath({ name: "chat", sessionId })}
          aria-label={`Open the chat of the run of ${when}`}
          data-testid="schedule-run-session"
          onClick={(event) => {
            if (isPlainClick(event)) {
              event.preventDefault();
              navigate({ name: "chat", sessionId });
            }
          }}
        >
          Open the chat
        </a>
      ) : null}
      {run.status === "missed" ? <p className="tf-run-detail">{missedText(run.missed_occurrences)}</p> : null}
      {run.status === "failed" ? (
        <p className="tf-run-detail tf-error-text" data-testid="schedule-run-error">
          {run.error ?? "It failed; the server did not say why."}
        </p>
      ) : null}
    </li>
  );
}

/** A schedule's runs, newest first, a page at a time, with Refresh. */
function ScheduleRuns({ port, schedule }: { readonly port: SchedulesPort; readonly schedule: Schedule }) {
  const first = useLoadFrom(
    port,
    (p) => p.runs(schedule.id, { limit: RUNS_PAGE }),
    `the runs of ${schedule.name}`,
  );
  const [older, setOlder] = useState<readonly Page<ScheduleRun>[]>([]);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const titleId = useId();
  const pages = first.data ? [first.data, ...older] : [];
  const runs = pages.flatMap((page) => page.data);
  const next = pages.at(-1)?.pagination.next_page_token;

  const loadOlder = async (pageToken: string) => {
    setLoadingOlder(true);
    try {
      const page = await port.runs(schedule.id, { limit: RUNS_PAGE, pageToken });
      setOlder((pagesSoFar) => [...pagesSoFar, page]);
    } catch (error) {
      toast.error(`Could not load older runs of ${schedule.name}: ${describeError(error)}`);
    } finally {
      setLoadingOlder(false);
    }
  };

  return (
    <section className="tf-runs" aria-labelledby={titleId} data-testid="schedule-runs">
      <div className="tf-runs-head">
        <h3 className="tf-subhead" id={titleId}>
          Runs of {schedule.name}
        </h3>
        <button
          type="button"
          className="tf-button tf-button-quiet"
          disabled={first.loading}
          onClick={() => {
            setOlder([]);
            first.reload();
          }}
        >
          Refresh
        </button>
      </div>
      <Loadable loaded={first} label="Loading the runs…" errorTestId="schedule-runs-error">
        {runs.length === 0 ? (
          <p className="tf-muted" data-testid="schedule-runs-empty">
            No run yet. Each run shows here, with a link to its chat.
          </p>
        ) : (
          <ul className="tf-run-list" aria-labelledby={titleId}>
            {runs.map((run) => (
              <RunRow key={run.id} run={run} timeZone={schedule.manifest.timezone} />
            ))}
          </ul>
        )}
      </Loadable>
      {next ? (
        <button
          type="button"
          className="tf-button"
          disabled={loadingOlder}
          aria-busy={loadingOlder}
          onClick={() => void loadOlder(next)}
        >
          {loadingOlder ? "Loading…" : "Older runs"}
        </button>
      ) : null}
    </section>
  );
}

/** Where a user without saved agents goes to make one. */
function NoAgents() {
  const shell = useShell();
  const { navigate } = useNavigation();
  return (
    <EmptyState testId="schedules-no-agents">
      <p>A schedule runs a saved agent, and there is none yet.</p>
      <p>
        {shell.builder ? (
          <button
            type="button"
            className="tf-link"
            onClick={() => navigate({ name: "agent", agentId: null })}
          >
            Build an agent
          </button>
        ) : (
          <button type="button" className="tf-link" onClick={() => navigate({ name: "agents" })}>
            Open the agents
          </button>
        )}{" "}
        then come back to schedule it.
      </p>
    </EmptyState>
  );
}

function Schedules({ port, loadAgents }: { readonly port: SchedulesPort; readonly loadAgents: AgentsPort }) {
  const schedules = useLoadFrom(port, (p) => p.list(), "your schedules");
  const agents = useLoadFrom(loadAgents, (p) => p.list(), "the agents");
  const [editing, setEditing] = useState<Editing>(null);
  /** The schedule whose runs are shown, and a counter that reloads them (after Run now). */
  const [runsOf, setRunsOf] = useState<{ readonly id: string; readonly key: number } | null>(null);
  const action = useRowAction();
  const list = schedules.data ?? [];
  const agentList = agents.data ?? [];
  const agentNames = new Map(agentList.map((agent) => [agent.id, agent.name]));
  const noAgents = agents.data !== undefined && agentList.length === 0;

  const replace = (saved: Schedule) =>
    schedules.update((current) =>
      current.some((entry) => entry.id === saved.id)
        ? current.map((entry) => (entry.id === saved.id ? saved : entry))
        : [...current, saved],
    );

  const setPaused = (schedule: Schedule, pause: boolean) =>
    action.run(
      `state:${schedule.id}`,
      `Could not ${pause ? "pause" : "resume"} ${schedule.name}`,
      async () => {
        replace(await (pause ? port.pause(schedule.id) : port.resume(schedule.id)));
        toast.success(`${pause ? "Paused" : "Resumed"} ${schedule.name}.`);
      },
    );

  const runNow = (schedule: Schedule) =>
    action.run(`run:${schedule.id}`, `Could not run ${schedule.name}`, async () => {
      const run = await port.run(schedule.id);
      if (run.status === "failed") {
        toast.error(`${schedule.name} did not start: ${run.error ?? "the server did not say why"}`);
      } else {
        toast.success(`Started a run of ${schedule.name}.`);
      }
      setRunsOf((shown) => ({ id: schedule.id, key: (shown?.key ?? 0) + 1 }));
      schedules.reload();
    });

  return (
    <div className="tf-page" data-testid="schedules">
      <div className="tf-page-head">
        <h1>Schedules</h1>
        <button
          type="button"
          className="tf-button tf-button-primary"
          data-testid="schedule-new"
          disabled={editing?.mode === "new" || agentList.length === 0}
          onClick={() => setEditing({ mode: "new" })}
        >
          New schedule
        </button>
      </div>
      <p className="tf-field-hint tf-schedules-intro">
        A schedule runs a saved agent on a cron, in a time zone: each run is a new chat with the agent,
        started with the schedule's message and listed with your other chats.
      </p>
      {agents.error !== null && agents.data === undefined ? (
        <NotLoaded loaded={agents} label="Loading the agents…" errorTestId="schedule-agents-error" />
      ) : null}
      {editing?.mode === "new" && agents.data ? (
        <ScheduleForm
          port={port}
          agents={agents.data}
          existing={null}
          onCancel={() => setEditing(null)}
          onSaved={(saved) => {
            replace(saved);
            setEditing(null);
          }}
        />
      ) : null}
      <Loadable loaded={schedules} label="Loading your schedules…" errorTestId="schedules-error">
        {list.length === 0 ? (
          noAgents ? (
            <NoAgents />
          ) : (
            <EmptyState testId="schedules-empty">
              <p>You have no schedule yet.</p>
              <p>Make one to run an agent every morning, every Monday, every hour…</p>
            </EmptyState>
          )
        ) : (
          <ul className="tf-list" data-testid="schedule-list" aria-label="Your schedules">
            {list.map((schedule) => {
              const isEditing = editing?.mode === "edit" && editing.id === schedule.id;
              const showsRuns = runsOf?.id === schedule.id;
              const active = schedule.state === "active";
              const agentName = agentNames.get(schedule.agent_id);
              const zone = schedule.manifest.timezone;
              return (
                <ListRow
                  key={schedule.id}
                  testId="schedule-row"
                  name={schedule.name}
                  title={schedule.name}
                  subtitle={
                    <>
                      <span className="tf-block" data-testid="schedule-agent-name">
                        {agentName !== undefined
                          ? `Agent: ${agentName}`
                          : agents.data
                            ? "Agent: deleted (its runs fail until another is picked)"
                            : "Agent: …"}
                      </span>
                      <span className="tf-block">
                        <span className="tf-mono" data-testid="schedule-cron-text">
                          {schedule.manifest.cron}
                        </span>{" "}
                        · {zone}
                      </span>
                      <span className="tf-block tf-clamp">{schedule.manifest.task}</span>
                    </>
                  }
                  badges={
                    <>
                      <StatusChip tone={active ? "ok" : "muted"}>
                        <span data-testid="schedule-state">{active ? "Active" : "Paused"}</span>
                      </StatusChip>
                      <span
                        className="tf-chip"
                        data-testid="schedule-next-run"
                        title={schedule.next_run_at ?? undefined}
                      >
                        {schedule.next_run_at
                          ? `Next run: ${formatWhen(schedule.next_run_at, zone)}`
                          : "No next run while paused"}
                      </span>
                      {schedule.last_run_at ? (
                        <span className="tf-chip" title={schedule.last_run_at}>
                          Last run: {formatWhen(schedule.last_run_at, zone)}
                        </span>
                      ) : null}
                    </>
                  }
                  actions={
                    <>
                      <RowButton
                        primary
                        label={`Run ${schedule.name} now`}
                        disabled={action.busy !== null}
                        busy={action.busy === `run:${schedule.id}`}
                        onClick={() => void runNow(schedule)}
                      >
                        {action.busy === `run:${schedule.id}` ? "Starting…" : "Run now"}
                      </RowButton>
                      <RowButton
                        label={`${active ? "Pause" : "Resume"} ${schedule.name}`}
                        disabled={action.busy !== null}
                        busy={action.busy === `state:${schedule.id}`}
                        onClick={() => void setPaused(schedule, active)}
                      >
                        {active ? "Pause" : "Resume"}
                      </RowButton>
                      <RowButton
                        label={`Runs of ${schedule.name}`}
                        expanded={showsRuns}
                        onClick={() => setRunsOf(showsRuns ? null : { id: schedule.id, key: 0 })}
                      >
                        Runs
                      </RowButton>
                      <EditAndDelete
                        what={schedule.name}
                        editing={isEditing}
                        onToggleEdit={() => setEditing(isEditing ? null : { mode: "edit", id: schedule.id })}
                        remove={() => port.delete(schedule.id)}
                        onDeleted={() => {
                          schedules.update((current) => current.filter((entry) => entry.id !== schedule.id));
                          setEditing((open) =>
                            open?.mode === "edit" && open.id === schedule.id ? null : open,
                          );
                          setRunsOf((shown) => (shown?.id === schedule.id ? null : shown));
                        }}
                        description={
                          <p>
                            It stops running, and its list of runs is deleted; the chats its runs started
                            stay. This cannot be undone.
                          </p>
                        }
                      />
                    </>
                  }
                >
                  {isEditing && agents.data ? (
                    <ScheduleForm
                      port={port}
                      agents={agents.data}
                      existing={schedule}
                      onCancel={() => setEditing(null)}
                      onSaved={(saved) => {
                        replace(saved);
                        setEditing(null);
                      }}
                    />
                  ) : null}
                  {showsRuns && runsOf ? (
                    <ScheduleRuns key={runsOf.key} port={port} schedule={schedule} />
                  ) : null}
                </ListRow>
              );
            })}
          </ul>
        )}
      </Loadable>
    </div>
  );
}

export default function SchedulesView() {
  const server = useServer();
  const port = server.schedules;
  const agents = server.agents;
  if (port && agents) {
    return <Schedules port={port} loadAgents={agents} />;
  }
  return (
    <div className="tf-page" data-testid="schedules">
      <h1>Schedules</h1>
      <EmptyState testId="schedules-unavailable">This server offers no schedules.</EmptyState>
    </div>
  );
}
