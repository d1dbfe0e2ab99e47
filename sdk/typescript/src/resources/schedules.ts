// Schedules: a saved agent run on a cron (in a time zone) as the caller's own sessions. Each occurrence (or a
// `run` asked for now) becomes a normal session and turn, listed with the caller's sessions; `runs` tells
// which session each occurrence became, and which occurrences were missed while no server ran.

import type { operations } from "../generated/schema.js";
import type { HttpClient, RequestOptions } from "../http.js";
import {
  type Page,
  paginate,
  type Schedule,
  type ScheduleRequest,
  type ScheduleRun,
  withPageToken,
} from "./types.js";

export type ListSchedulesQuery = NonNullable<operations["list_schedules"]["parameters"]["query"]>;
export type ListScheduleRunsQuery = NonNullable<operations["list_schedule_runs"]["parameters"]["query"]>;

/** The body as the document types it: the server's default zone filled in where the caller left it out. */
function withZone(body: ScheduleRequest) {
  return { ...body, manifest: { ...body.manifest, timezone: body.manifest.timezone ?? "UTC" } };
}

export class Schedules {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  /** One page of the caller's schedules, oldest first. */
  list(query?: ListSchedulesQuery, options?: RequestOptions): Promise<Page<Schedule>> {
    return this.#http.call("get", "/api/v1/schedules", { ...options, query });
  }

  /** Every page of the caller's schedules, fetched as the loop asks. */
  pages(
    query: ListSchedulesQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<Page<Schedule>, void, undefined> {
    return paginate((token) => this.list(withPageToken(query, token), options), query.page_token);
  }

  /**
   * Makes a schedule, active from now. Refused with 400 when the cron or time zone is invalid or the cron
   * runs more often than the server's minimum interval, and with 404 when the tenant has no such saved agent.
   */
  async create(body: ScheduleRequest, options?: RequestOptions): Promise<Schedule> {
    return (await this.#http.call("post", "/api/v1/schedules", { ...options, body: withZone(body) })).data;
  }

  async get(scheduleId: string, options?: RequestOptions): Promise<Schedule> {
    return (
      await this.#http.call("get", "/api/v1/schedules/{schedule_id}", {
        ...options,
        path: { schedule_id: scheduleId },
      })
    ).data;
  }

  /** Replaces the name, agent and manifest; an active schedule's next run is computed again from now. */
  async update(scheduleId: string, body: ScheduleRequest, options?: RequestOptions): Promise<Schedule> {
    return (
      await this.#http.call("put", "/api/v1/schedules/{schedule_id}", {
        ...options,
        path: { schedule_id: scheduleId },
        body: withZone(body),
      })
    ).data;
  }

  /** Deletes the schedule and its runs; the sessions it made stay. */
  async delete(scheduleId: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/schedules/{schedule_id}", {
      ...options,
      path: { schedule_id: scheduleId },
    });
  }

  /** No occurrence runs until {@link Schedules.resume} (a manual {@link Schedules.run} still does). */
  async pause(scheduleId: string, options?: RequestOptions): Promise<Schedule> {
    return (
      await this.#http.call("post", "/api/v1/schedules/{schedule_id}/pause", {
        ...options,
        path: { schedule_id: scheduleId },
      })
    ).data;
  }

  /** Active again from now: what passed while it was paused does not run. */
  async resume(scheduleId: string, options?: RequestOptions): Promise<Schedule> {
    return (
      await this.#http.call("post", "/api/v1/schedules/{schedule_id}/resume", {
        ...options,
        path: { schedule_id: scheduleId },
      })
    ).data;
  }

  /** Runs it now, paused or not: the run, `started` with its `session_id` and `turn_id`, or `failed` with why. */
  async run(scheduleId: string, options?: RequestOptions): Promise<ScheduleRun> {
    return (
      await this.#http.call("post", "/api/v1/schedules/{schedule_id}/run", {
        ...options,
        path: { schedule_id: scheduleId },
      })
    ).data;
  }

  /** One page of the schedule's runs, newest first. */
  runs(
    scheduleId: string,
    query?: ListScheduleRunsQuery,
    options?: RequestOptions,
  ): Promise<Page<ScheduleRun>> {
    return this.#http.call("get", "/api/v1/schedules/{schedule_id}/runs", {
      ...options,
      path: { schedule_id: scheduleId },
      query,
    });
  }

  /** Every page of the schedule's runs, newest first, fetched as the loop asks. */
  runPages(
    scheduleId: string,
    query: ListScheduleRunsQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<Page<ScheduleRun>, void, undefined> {
    return paginate((token) => this.runs(scheduleId, withPageToken(query, token), options), query.page_token);
  }
}
