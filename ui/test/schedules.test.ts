// The schedules screen's rules and words without a browser (src/schedules/schedule-format.ts): the form's
// checks, the time zones it suggests, times in a schedule's zone, and what a run's status says.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  browserTimeZone,
  CRON_PRESETS,
  cronError,
  formatWhen,
  MAX_NAME_CHARS,
  MAX_TASK_CHARS,
  missedText,
  runStatus,
  scheduleNameError,
  taskError,
  timeZoneError,
  timeZoneSuggestions,
} from "../src/schedules/schedule-format.js";

describe("the schedule form's checks", () => {
  test("a name: 1 to 100 characters (trimmed, counted as characters), no control characters", () => {
    assert.equal(scheduleNameError("Morning digest"), null);
    assert.equal(scheduleNameError("   "), "Required.");
    assert.equal(scheduleNameError("é".repeat(MAX_NAME_CHARS)), null);
    assert.equal(scheduleNameError("🙂".repeat(MAX_NAME_CHARS)), null, "an emoji is one character");
    assert.match(scheduleNameError("x".repeat(MAX_NAME_CHARS + 1)) ?? "", /At most 100/);
    assert.match(scheduleNameError("two\tparts") ?? "", /control/);
    assert.match(scheduleNameError("a\u0085b") ?? "", /control/);
  });

  test("a cron: five or six fields; what they mean is the server's to say", () => {
    assert.equal(cronError("0 9 * * MON-FRI"), null);
    assert.equal(cronError("  0  9 * *   *  "), null);
    assert.equal(cronError("0 0 9 * * *"), null);
    assert.equal(cronError("*/5 * * * *"), null, "too frequent, but only the server knows its minimum");
    assert.equal(cronError(""), "Required.");
    assert.match(cronError("0 9 * *") ?? "", /five fields.*this has 4/);
    assert.match(cronError("0 0 9 * * * 2026") ?? "", /this has 7/);
  });

  test("a time zone and a message are required; the message has the server's limit", () => {
    assert.equal(timeZoneError("Europe/Paris"), null);
    assert.equal(timeZoneError(" "), "Required.");
    assert.equal(taskError("Summarise yesterday's issues"), null);
    assert.equal(taskError("\n  \n"), "Required.");
    assert.equal(taskError("x".repeat(MAX_TASK_CHARS)), null);
    assert.match(taskError("x".repeat(MAX_TASK_CHARS + 1)) ?? "", /At most 100,000/);
  });

  test("every preset passes the form's check", () => {
    for (const preset of CRON_PRESETS) {
      assert.equal(cronError(preset.cron), null, preset.cron);
    }
  });
});

describe("time zones and times", () => {
  test("the browser's zone is one the suggestions hold, with UTC and an edited schedule's zone", () => {
    const zone = browserTimeZone();
    assert.ok(zone.length > 0);
    const suggestions = timeZoneSuggestions(["Mars/Olympus_Mons"]);
    assert.ok(suggestions.includes("UTC"));
    assert.ok(suggestions.includes("Mars/Olympus_Mons"));
    assert.deepEqual(
      suggestions,
      [...suggestions].sort((a, b) => a.localeCompare(b)),
    );
    assert.equal(new Set(suggestions).size, suggestions.length, "no zone twice");
  });

  test("a time is shown in the schedule's zone, with the zone's name", () => {
    const iso = "2026-01-05T08:00:00Z";
    const paris = formatWhen(iso, "Europe/Paris");
    assert.match(paris, /09:00|9:00/, paris);
    const tokyo = formatWhen(iso, "Asia/Tokyo");
    assert.match(tokyo, /17:00|5:00/, tokyo);
    assert.notEqual(paris, tokyo);
  });

  test("a zone the browser does not know falls back to the browser's; a non-time is shown as it is", () => {
    assert.equal(formatWhen("2026-01-05T08:00:00Z", "Mars/Olympus_Mons"), formatWhen("2026-01-05T08:00:00Z"));
    assert.equal(formatWhen("soon", "UTC"), "soon");
  });
});

describe("runs", () => {
  test("each status has its words and colour", () => {
    assert.deepEqual(runStatus({ status: "started" }), { label: "Started", tone: "ok" });
    assert.deepEqual(runStatus({ status: "failed" }), { label: "Failed", tone: "danger" });
    assert.deepEqual(runStatus({ status: "missed" }), { label: "Missed", tone: "warn" });
    assert.deepEqual(runStatus({ status: "dispatching" }), { label: "Starting", tone: "muted" });
  });

  test("a missed run says how many occurrences it stands for, 'at least' at the server's cap", () => {
    assert.equal(missedText(1), "1 occurrence was missed while no server ran.");
    assert.equal(missedText(3), "3 occurrences were missed while no server ran.");
    assert.equal(missedText(12_345), "12,345 occurrences were missed while no server ran.");
    assert.equal(missedText(100_000), "At least 100,000 occurrences were missed while no server ran.");
  });
});
