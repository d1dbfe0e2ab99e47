// The request core every call goes through: base URL, credentials, default headers, timeouts, the caller's
// abort signal, the mapping of failures to the SDK's error classes, and retries where a retry cannot do a
// second thing. Typed by the generated `paths`: a call names a path template and a method of the OpenAPI
// document, and its parameters, body and answer take the document's types.

import {
  type ErrorBody,
  TrueForgeAbortError,
  TrueForgeApiError,
  TrueForgeAuthenticationError,
  TrueForgeConnectionError,
  TrueForgePermissionError,
  TrueForgeProtocolError,
  TrueForgeTimeoutError,
} from "./errors.js";
import type { paths } from "./generated/schema.js";
import type { StreamTransport } from "./stream.js";

/** A bearer token, or a function that returns the current one (called before every attempt). */
export type TokenSupplier = string | (() => string | null | undefined | Promise<string | null | undefined>);

/** The `fetch` the client uses; the global one by default. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

/** How failed calls are retried. */
export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 disables retries). */
  readonly maxRetries?: number;
  /** Delay before the first retry, doubled for each further one, before jitter (default 500 ms). */
  readonly baseDelayMs?: number;
  /** The longest computed delay (default 8 s). */
  readonly maxDelayMs?: number;
  /** The longest `Retry-After` honoured; a server asking for more is not retried (default 60 s). */
  readonly maxRetryAfterMs?: number;
}

export interface HttpOptions {
  /** The server's address, e.g. `https://forge.example.com` (a path prefix is kept; `""` or `/` for the page's origin). */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer …`. */
  readonly token?: TokenSupplier | undefined;
  /** `include` to send the login cookie from a browser app on the same site. */
  readonly credentials?: RequestCredentials | undefined;
  readonly fetch?: FetchFunction | undefined;
  /** Headers sent with every request. */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** The longest one attempt of an ordinary call may take, until its body is read (default 60 s). */
  readonly timeoutMs?: number | undefined;
  /** Retries after the first attempt (default 2). */
  readonly maxRetries?: number | undefined;
  /** Finer control of retry delays. */
  readonly retry?: RetryOptions | undefined;
}

/** Options every call takes. */
export interface RequestOptions {
  /** Aborts the call (the SDK then throws `TrueForgeAbortError`). */
  readonly signal?: AbortSignal | undefined;
  /** The longest one attempt may take (default: the client's, 60 s). */
  readonly timeoutMs?: number | undefined;
  /** Headers for this call, over the client's. */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** Retries for this call (default: the client's). */
  readonly maxRetries?: number | undefined;
}

export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_RETRIES = 2;
export const IDEMPOTENCY_HEADER = "Idempotency-Key";

// ---------------------------------------------------------------------------------------------------------
// The retry policy, as pure functions (unit-tested on their own).

const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 429, 502, 503, 504]);
const SAFE_TO_REPEAT: ReadonlySet<string> = new Set(["GET", "HEAD", "PUT", "DELETE"]);

/**
 * Whether a request may be sent again without doing a second thing: GET, HEAD, PUT and DELETE always; a POST
 * only when it carries an `Idempotency-Key` (the server answers a repeat with the first result). Never
 * PATCH, never a POST without a key.
 */
export function isRepeatable(method: string, headers: Headers): boolean {
  const upper = method.toUpperCase();
  if (SAFE_TO_REPEAT.has(upper)) {
    return true;
  }
  return upper === "POST" && (headers.get(IDEMPOTENCY_HEADER) ?? "") !== "";
}

/** Whether an answer with this status is worth another attempt (408, 429, 502, 503, 504). */
export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

/** A `Retry-After` value (seconds or an HTTP date) in milliseconds; `undefined` when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) {
    return undefined;
  }
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    return Math.round(Number(trimmed) * 1000);
  }
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) {
    return undefined;
  }
  return Math.max(0, date - now);
}

/**
 * The delay before retry number `retry` (0 for the first retry): the server's `Retry-After` when it gave one
 * (`undefined` when that is over `maxRetryAfterMs`: do not retry), otherwise exponential backoff with
 * jitter, between half and all of `min(maxDelayMs, baseDelayMs * 2^retry)`.
 */
export function retryDelay(
  retry: number,
  retryAfterMs: number | undefined,
  options: RetryOptions = {},
  random: () => number = Math.random,
): number | undefined {
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
  if (retryAfterMs !== undefined) {
    return retryAfterMs > maxRetryAfterMs ? undefined : retryAfterMs;
  }
  const base = options.baseDelayMs ?? 500;
  const cap = Math.min(options.maxDelayMs ?? 8_000, base * 2 ** retry);
  return Math.round(cap * (0.5 + random() / 2));
}

// ---------------------------------------------------------------------------------------------------------
// Types of a call, derived from the generated document.

/** The methods of the API. */
export type HttpMethod = "get" | "put" | "post" | "delete" | "patch";

/** The paths of the document that have `method`. */
export type PathsWith<M extends HttpMethod> = {
  [P in keyof paths]: paths[P][M] extends { responses: unknown } ? P : never;
}[keyof paths];

/** The operation at `path` and `method`. */
export type Operation<P extends keyof paths, M extends HttpMethod> = Extract<
  paths[P][M],
  { responses: unknown }
>;

type ParametersOf<O> = O extends { parameters: infer X } ? X : never;
/** The path parameters of an operation (`never` when it has none). */
export type PathParams<O> = ParametersOf<O> extends { path: infer X } ? X : never;
/** The query parameters of an operation (`never` when it has none). */
export type QueryParams<O> = ParametersOf<O> extends { query?: infer X } ? X : never;
/** The JSON body of an operation (`never` when it takes none). */
export type JsonBody<O> = O extends { requestBody?: infer R }
  ? NonNullable<R> extends { content: { "application/json": infer B } }
    ? B
    : never
  : never;
type JsonOf<R> = R extends { content: { "application/json": infer T } } ? T : undefined;
/** The JSON answer of an operation's success (200 or 201; `undefined` for 204). */
export type JsonAnswer<O> = O extends { responses: infer R }
  ? R extends { 200: infer A }
    ? JsonOf<A>
    : R extends { 201: infer A }
      ? JsonOf<A>
      : undefined
  : never;

/** The arguments of a typed call: the operation's parameters and body, and the call options. */
export type CallArgs<O> = RequestOptions &
  ([PathParams<O>] extends [never] ? { readonly path?: undefined } : { readonly path: PathParams<O> }) & {
    readonly query?: QueryParams<O> | undefined;
    readonly body?: JsonBody<O> | undefined;
    /** Makes a POST safe to retry: the server runs it once per key. */
    readonly idempotencyKey?: string | undefined;
  };

// ---------------------------------------------------------------------------------------------------------
// The core.

type QueryValue = string | number | boolean | null | undefined | readonly (string | number | boolean)[];

interface SendInit extends RequestOptions {
  readonly query?: Readonly<Record<string, QueryValue>> | undefined;
  readonly body?: unknown;
  readonly idempotencyKey?: string | undefined;
  /** Answer with the `Response` once the headers arrived (the body is the caller's; the timeout ends there). */
  readonly raw?: boolean;
}

/** Replaces `{name}` segments of a path template with the encoded values. */
export function fillPath(
  template: string,
  params: Readonly<Record<string, string | number>> | undefined,
): string {
  return template.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const value = params?.[name];
    if (value === undefined || value === "") {
      throw new TypeError(`the path parameter ${name} of ${template} is missing`);
    }
    return encodeURIComponent(String(value));
  });
}

/** A query string (with its `?`) of the defined values; arrays repeat the key. */
export function queryString(query: Readonly<Record<string, QueryValue>> | undefined): string {
  if (!query) {
    return "";
  }
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) {
      continue;
    }
    if (Array.isArray(value)) {
      for (const item of value) {
        search.append(key, String(item));
      }
    } else {
      search.append(key, String(value));
    }
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** A random UUID (v4), also where `crypto.randomUUID` is missing (pages served over plain HTTP). */
export function randomId(): string {
  const cryptoObject = globalThis.crypto;
  if (typeof cryptoObject?.randomUUID === "function") {
    return cryptoObject.randomUUID();
  }
  const bytes = new Uint8Array(16);
  if (typeof cryptoObject?.getRandomValues === "function") {
    cryptoObject.getRandomValues(bytes);
  } else {
    for (let index = 0; index < bytes.length; index++) {
      bytes[index] = Math.floor(Math.random() * 256);
    }
  }
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Sleeps `ms`, or until `signal` aborts (then rejects with its reason). */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Reads an error answer: the server's `{"error": {...}}` envelope, or the raw text of anything else. */
export async function apiError(response: Response, method: string, path: string): Promise<TrueForgeApiError> {
  let text: string | undefined;
  try {
    text = await response.text();
  } catch {
    text = undefined;
  }
  const requestId = response.headers.get("x-request-id") ?? undefined;
  let error: ErrorBody | undefined;
  if (text) {
    try {
      const parsed: unknown = JSON.parse(text);
      const inner = (parsed as { error?: unknown } | null)?.error;
      if (typeof inner === "object" && inner !== null && typeof (inner as ErrorBody).message === "string") {
        const body = inner as Record<string, unknown>;
        const found: { message: string; code?: string; param?: string; type?: string } = {
          message: body.message as string,
        };
        for (const key of ["code", "param", "type"] as const) {
          const value = body[key];
          if (typeof value === "string") {
            found[key] = value;
          }
        }
        error = found;
      }
    } catch {
      // Not JSON: kept as text below.
    }
  }
  const ErrorClass =
    response.status === 401
      ? TrueForgeAuthenticationError
      : response.status === 403
        ? TrueForgePermissionError
        : TrueForgeApiError;
  return new ErrorClass({
    status: response.status,
    error,
    bodyText: error ? undefined : text || undefined,
    requestId,
    method,
    path,
  });
}

/** The request core of a client. Also the {@link StreamTransport} of its turn streams. */
export class HttpClient implements StreamTransport {
  readonly baseUrl: string;
  readonly #options: HttpOptions;
  readonly #fetch: FetchFunction;

  constructor(options: HttpOptions) {
    this.#options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    const custom = options.fetch;
    // Called through a wrapper: a bare `fetch` stored on an object fails with "Illegal invocation" in browsers.
    this.#fetch = custom ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** The absolute (or origin-relative) URL of an API path. */
  url(path: string): string {
    return `${this.baseUrl}${path}`;
  }

  async #headers(extra: HeadersInit | Readonly<Record<string, string>> | undefined): Promise<Headers> {
    const headers = new Headers(this.#options.headers as HeadersInit | undefined);
    const token = this.#options.token;
    const value = typeof token === "function" ? await token() : token;
    if (value) {
      headers.set("Authorization", `Bearer ${value}`);
    }
    new Headers(extra as HeadersInit | undefined).forEach((headerValue, name) => {
      headers.set(name, headerValue);
    });
    return headers;
  }

  async #attempt(path: string, init: RequestInit): Promise<Response> {
    const credentials = this.#options.credentials;
    return this.#fetch(this.url(path), credentials ? { ...init, credentials } : init);
  }

  /** {@link StreamTransport.request}: one attempt, any status. */
  async request(path: string, init: RequestInit): Promise<Response> {
    const signal = init.signal ?? undefined;
    if (signal?.aborted) {
      throw new TrueForgeAbortError("the request was aborted", { cause: signal.reason });
    }
    const headers = await this.#headers(init.headers ?? undefined);
    try {
      return await this.#attempt(path, { ...init, headers });
    } catch (error) {
      if (signal?.aborted) {
        throw new TrueForgeAbortError("the request was aborted", { cause: error });
      }
      throw new TrueForgeConnectionError(`${init.method ?? "GET"} ${path}: no answer (${describe(error)})`, {
        cause: error,
      });
    }
  }

  /**
   * Sends a request with the client's policy: timeout per attempt, the caller's signal, retries of
   * repeatable requests on connection errors and 408/429/502/503/504, and errors mapped to the SDK's
   * classes. Answers the `Response` of a 2xx with its body unread (the timeout ends with the headers).
   */
  async send(method: string, path: string, init: SendInit = {}): Promise<Response> {
    return (await this.#run(method, path, { ...init, raw: true })).response;
  }

  async #run(method: string, path: string, init: SendInit): Promise<{ response: Response; text: string }> {
    const upper = method.toUpperCase();
    const fullPath = `${path}${queryString(init.query)}`;
    const extra: Record<string, string> = { ...init.headers };
    if (init.idempotencyKey) {
      extra[IDEMPOTENCY_HEADER] = init.idempotencyKey;
    }
    let body: string | undefined;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      extra["content-type"] ??= "application/json";
    }
    const timeoutMs = init.timeoutMs ?? this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const maxRetries = Math.max(
      0,
      init.maxRetries ?? this.#options.maxRetries ?? this.#options.retry?.maxRetries ?? DEFAULT_MAX_RETRIES,
    );
    const caller = init.signal;

    for (let attempt = 0; ; attempt++) {
      if (caller?.aborted) {
        throw new TrueForgeAbortError(`${upper} ${path} was aborted`, { cause: caller.reason });
      }
      const headers = await this.#headers(extra);
      const repeatable = isRepeatable(upper, headers);
      const timeout = new AbortController();
      const timer = setTimeout(
        () => timeout.abort(new TrueForgeTimeoutError(`${upper} ${path} took longer than ${timeoutMs} ms`)),
        timeoutMs,
      );
      const signal = caller ? AbortSignal.any([caller, timeout.signal]) : timeout.signal;
      let failure: Error;
      let retryAfterMs: number | undefined;
      try {
        const requestInit: RequestInit = { method: upper, headers, signal };
        if (body !== undefined) {
          requestInit.body = body;
        }
        const response = await this.#attempt(fullPath, requestInit);
        if (response.ok) {
          if (init.raw) {
            clearTimeout(timer);
            return { response, text: "" };
          }
          // The body is read under the same timeout.
          const text = await response.text();
          clearTimeout(timer);
          return { response, text };
        }
        const error = await apiError(response, upper, path);
        clearTimeout(timer);
        if (!repeatable || !isRetryableStatus(response.status) || attempt >= maxRetries) {
          throw error;
        }
        failure = error;
        retryAfterMs = parseRetryAfter(response.headers.get("retry-after"));
      } catch (error) {
        clearTimeout(timer);
        if (error instanceof TrueForgeApiError) {
          throw error;
        }
        if (caller?.aborted) {
          throw new TrueForgeAbortError(`${upper} ${path} was aborted`, { cause: caller.reason });
        }
        failure = timeout.signal.aborted
          ? (timeout.signal.reason as TrueForgeTimeoutError)
          : new TrueForgeConnectionError(`${upper} ${path}: no answer (${describe(error)})`, {
              cause: error,
            });
        if (!repeatable || attempt >= maxRetries) {
          throw failure;
        }
      }
      const delay = retryDelay(attempt, retryAfterMs, this.#options.retry);
      if (delay === undefined) {
        throw failure;
      }
      try {
        await sleep(delay, caller);
      } catch {
        throw new TrueForgeAbortError(`${upper} ${path} was aborted`, { cause: caller?.reason });
      }
    }
  }

  /** Sends a request and reads its JSON answer (`undefined` for an empty one). */
  async sendJson(method: string, path: string, init: SendInit = {}): Promise<unknown> {
    const { response, text } = await this.#run(method, path, { ...init, raw: false });
    if (text === "") {
      return undefined;
    }
    const type = response.headers.get("content-type") ?? "";
    try {
      if (type && !/json/i.test(type)) {
        throw new SyntaxError(`content-type ${type}`);
      }
      return JSON.parse(text);
    } catch (error) {
      throw new TrueForgeProtocolError(
        `${method.toUpperCase()} ${path} answered ${response.status} with something that is not JSON (${type || "no content-type"}): ${text.slice(0, 120)}`,
        { cause: error },
      );
    }
  }

  /** A typed call of an operation of the document. */
  call<M extends HttpMethod, P extends PathsWith<M>>(
    method: M,
    template: P,
    args?: CallArgs<Operation<P, M>>,
  ): Promise<JsonAnswer<Operation<P, M>>> {
    const { path, query, body, ...options } = (args ?? {}) as CallArgs<Operation<P, M>> & {
      path?: Record<string, string>;
      query?: Record<string, QueryValue>;
    };
    return this.sendJson(method, fillPath(template, path), {
      ...options,
      query,
      body,
    }) as Promise<JsonAnswer<Operation<P, M>>>;
  }

  /** A typed call answering the raw `Response` (for bodies that are not JSON: files). */
  callRaw<M extends HttpMethod, P extends PathsWith<M>>(
    method: M,
    template: P,
    args?: CallArgs<Operation<P, M>>,
  ): Promise<Response> {
    const { path, query, body, ...options } = (args ?? {}) as CallArgs<Operation<P, M>> & {
      path?: Record<string, string>;
      query?: Record<string, QueryValue>;
    };
    return this.send(method, fillPath(template, path), { ...options, query, body });
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
  }
  return String(error);
}
