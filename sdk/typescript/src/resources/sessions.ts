// Sessions: a conversation with an agent, saved (by name) or inline.

import type { operations } from "../generated/schema.js";
import type { HttpClient, RequestOptions } from "../http.js";
import {
  type CreateSessionRequest,
  type Page,
  paginate,
  type Session,
  type SessionEventItem,
  toStoredEvent,
  type UpdateSessionRequest,
  withPageToken,
} from "./types.js";

export type ListSessionsQuery = NonNullable<operations["list_sessions"]["parameters"]["query"]>;
export type ListSessionEventsQuery = NonNullable<operations["list_session_events"]["parameters"]["query"]>;

export class Sessions {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  /** Creates a session running a saved agent (`{agent: {name}}`) or a spec of its own (`{agent: {spec}}`). */
  async create(body: CreateSessionRequest, options?: RequestOptions): Promise<Session> {
    return (await this.#http.call("post", "/api/v1/sessions", { ...options, body })).data;
  }

  /** One page of the caller's sessions (newest first by default). */
  list(query?: ListSessionsQuery, options?: RequestOptions): Promise<Page<Session>> {
    return this.#http.call("get", "/api/v1/sessions", { ...options, query });
  }

  /** Every page of the caller's sessions, fetched as the loop asks: `for await (const page of …)`. */
  pages(
    query: ListSessionsQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<Page<Session>, void, undefined> {
    return paginate((token) => this.list(withPageToken(query, token), options), query.page_token);
  }

  async get(sessionId: string, options?: RequestOptions): Promise<Session> {
    return (
      await this.#http.call("get", "/api/v1/sessions/{session_id}", {
        ...options,
        path: { session_id: sessionId },
      })
    ).data;
  }

  /** Replaces the inline agent spec of a session; its next turn uses it. */
  async update(sessionId: string, body: UpdateSessionRequest, options?: RequestOptions): Promise<Session> {
    return (
      await this.#http.call("patch", "/api/v1/sessions/{session_id}", {
        ...options,
        path: { session_id: sessionId },
        body,
      })
    ).data;
  }

  /** Deletes a session with its turns and events (stopping a running turn); succeeds when there is none. */
  async delete(sessionId: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("delete", "/api/v1/sessions/{session_id}", {
      ...options,
      path: { session_id: sessionId },
    });
  }

  /** Cancels the session's running turn, if any. */
  async cancel(sessionId: string, options?: RequestOptions): Promise<void> {
    await this.#http.call("post", "/api/v1/sessions/{session_id}/cancel", {
      ...options,
      path: { session_id: sessionId },
      body: {},
    });
  }

  /** One page of the persisted events of a branch of the session's turns, newest first. */
  async events(
    sessionId: string,
    query?: ListSessionEventsQuery,
    options?: RequestOptions,
  ): Promise<Page<SessionEventItem>> {
    const page = await this.#http.call("get", "/api/v1/sessions/{session_id}/events", {
      ...options,
      path: { session_id: sessionId },
      query,
    });
    return {
      ...page,
      data: page.data.map((item) => ({ turn_id: item.turn_id, event: toStoredEvent(item.event) })),
    };
  }

  /** Every page of the session's events, newest first, fetched as the loop asks. */
  eventPages(
    sessionId: string,
    query: ListSessionEventsQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<Page<SessionEventItem>, void, undefined> {
    return paginate(
      (token) => this.events(sessionId, withPageToken(query, token), options),
      query.page_token,
    );
  }
}
