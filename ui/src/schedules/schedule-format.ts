// The schedules screen's rules and words, without React (the tests run them in Node): the form's checks (the
// server's own limits, so most mistakes show next to their field instead of coming back as a 400), the
// browser's time zone and the zones to suggest, times in a schedule's zone, and what a run says.

import type { ScheduleRun } from "@trueforge/sdk";

/** The server's limits (crates/server/src/routes/schedules.rs). */
export const MAX_NAME_CHARS = 100;
export const MAX_TASK_CHARS = 100_000;
/** A `missed` run counts at most this many occurrences; one at the limit stands for "at least" that many. */
export const MAX_COUNTED_MISSED = 100_000;

/** Crons to start from: the field stays free text. */
export const CRON_PRESETS: readonly { readonly label: string; readonly cron: string }[] = [
  { label: "Every hour", cron: "0 * * * *" },
  { label: "Every day at 9:00", cron: "0 9 * * *" },
  { label: "Weekdays at 9:00", cron: "0 9 * * MON-FRI" },
  { label: "Mondays at 9:00", cron: "0 9 * * MON" },
];

/** A control character (Unicode's Cc, as the server's `char::is_control`): a tab, a line break… */
function isControl(char: string): boolean {
  const code = char.codePointAt(0) ?? 0;
  return code <= 0x1f || (code >= 0x7f && code <= 0x9f);
}

export function scheduleNameError(name: string): string | null {
  const trimmed = name.trim();
  if (trimmed === "") {
    return "Required.";
  }
  if ([...trimmed].length > MAX_NAME_CHARS) {
    return `At most ${MAX_NAME_CHARS} characters.`;
  }
  return [...trimmed].some(isControl) ? "No control characters (tabs, line breaks)." : null;
}

/**
 * The shape of a cron only (five or six fields): what the fields mean, and how often it may run, is the
 * server's to say.
 */
export function cronError(cron: string): string | null {
  const fields = cron.trim().split(/\s+/).filter(Boolean);
  if (fields.length === 0) {
    return "Required.";
  }
  return fields.length === 5 || fields.length === 6
    ? null
    : `Use five fields (minute hour day-of-month month day-of-week), or six with seconds first; this has ${fields.length}.`;
}

export function timeZoneError(zone: string): string | null {
  return zone.trim() === "" ? "Required." : null;
}

export function taskError(task: string): string | null {
  if (task.trim() === "") {
    return "Required.";
  }
  return [...task].length > MAX_TASK_CHARS
    ? `At most ${MAX_TASK_CHARS.toLocaleString("en")} characters.`
    : null;
}

/** The browser's IANA time zone, `UTC` when it has none to tell. */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

/** The zones the browser knows, with `UTC` and `extra` (the zone of a schedule being edited), sorted. */
export function timeZoneSuggestions(extra: readonly string[] = []): string[] {
  let known: string[] = [];
  try {
    known = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  } catch {
    known = [];
  }
  return [...new Set(["UTC", ...known, ...extra.filter(Boolean)])].sort((a, b) => a.localeCompare(b));
}

/**
 * `iso` as a date and time in `timeZone` with the zone's short name ("5 Jan 2026, 09:00 CET"); in the
 * browser's zone when the browser does not know `timeZone`; the text itself when it is not a time.
 */
export function formatWhen(iso: string, timeZone?: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return iso;
  }
  const options: Intl.DateTimeFormatOptions = {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  };
  try {
    return date.toLocaleString(undefined, timeZone ? { ...options, timeZone } : options);
  } catch {
    return date.toLocaleString(undefined, options);
  }
}

export type Tone = "ok" | "warn" | "danger" | "muted";

/** What a run's status chip says, and its colour. */
export function runStatus(run: Pick<ScheduleRun, "status">): { readonly label: string; readonly tone: Tone } {
  switch (run.status) {
    case "started":
      return { label: "Started", tone: "ok" };
    case "failed":
      return { label: "Failed", tone: "danger" };
    case "missed":
      return { label: "Missed", tone: "warn" };
    case "dispatching":
      return { label: "Starting", tone: "muted" };
  }
}

/** How many occurrences a `missed` run stands for, in words. */
export function missedText(count: number): string {
  if (count >= MAX_COUNTED_MISSED) {
    return `At least ${MAX_COUNTED_MISSED.toLocaleString("en")} occurrences were missed while no server ran.`;
  }
  return count === 1
    ? "1 occurrence was missed while no server ran."
    : `${count.toLocaleString("en")} occurrences were missed while no server ran.`;
}
