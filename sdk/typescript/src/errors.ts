// The errors every call of the SDK may throw. One base class, so `catch (e) { if (e instanceof TrueForgeError) }`
// covers the SDK; a subclass per cause, so callers can tell a refusal of the server from a lost connection.

/** The `error` object of the server's error envelope (`{"error": {...}}`). */
export interface ErrorBody {
  readonly message: string;
  readonly code?: string | undefined;
  readonly param?: string | undefined;
  readonly type?: string | undefined;
}

/** Base class of every error the SDK throws. */
export class TrueForgeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The server answered with a status outside 2xx. */
export class TrueForgeApiError extends TrueForgeError {
  /** The HTTP status. */
  readonly status: number;
  /** The server's error, when it answered with its JSON envelope. */
  readonly error: ErrorBody | undefined;
  /** The raw body text when it was not the JSON envelope (an HTML page of a proxy, for example). */
  readonly bodyText: string | undefined;
  /** The `x-request-id` header, when the server sent one. */
  readonly requestId: string | undefined;

  constructor(init: {
    status: number;
    error?: ErrorBody | undefined;
    bodyText?: string | undefined;
    requestId?: string | undefined;
    method: string;
    path: string;
  }) {
    const reason =
      init.error?.message ?? (init.bodyText ? "the answer was not TrueForge's JSON error" : "no body");
    super(`${init.method} ${init.path} failed with ${init.status}: ${reason}`);
    this.status = init.status;
    this.error = init.error;
    this.bodyText = init.bodyText;
    this.requestId = init.requestId;
  }
}

/**
 * The server answered 401: no credentials, or ones it refused (an expired login, a revoked API key). A browser
 * app sends the user to `tf.auth.loginUrl(…)`; a script needs a valid token or key.
 */
export class TrueForgeAuthenticationError extends TrueForgeApiError {}

/** The server answered 403: the caller is known but may not do this (settings for a non-admin, for example). */
export class TrueForgePermissionError extends TrueForgeApiError {}

/** No answer: the connection failed or broke before the response (or the stream) was complete. */
export class TrueForgeConnectionError extends TrueForgeError {}

/** The call took longer than its timeout. */
export class TrueForgeTimeoutError extends TrueForgeError {}

/** The caller's `AbortSignal` aborted the call. */
export class TrueForgeAbortError extends TrueForgeError {}

/**
 * The server answered something that is not the protocol: a 2xx that is not JSON (an HTML page), malformed JSON
 * in an SSE frame, an SSE `id` that is not a sequence number.
 */
export class TrueForgeProtocolError extends TrueForgeError {}

/** Why a file was refused (see {@link TrueForgeFileError}). */
export type FileErrorCode =
  /** The name is not a plain file name: empty, `.` or `..`, with `/`, `\` or a control character, over 255 bytes. */
  | "invalid_name"
  /** The media type is not `type/subtype` (with optional `;name=value` parameters). */
  | "invalid_media_type"
  /** A part built by hand whose `data` is not a base64 `data:` URI. */
  | "invalid_data"
  /** The file goes into a sandbox (not an image or a PDF) and the agent or the server has none. */
  | "sandbox_required"
  /** One file is over the limit: `max_sandbox_file_bytes` for an upload, `maxBytes` for a download. */
  | "file_too_large"
  /** The request that carries the parts would be over the server's `max_request_body_bytes`. */
  | "request_too_large";

/**
 * A file was refused by the SDK before (or, for a download, while) it was sent: a bad name, a file that
 * needs a sandbox the agent does not have, a size over one of the server's limits. Thrown before any
 * request, so nothing was uploaded.
 */
export class TrueForgeFileError extends TrueForgeError {
  readonly code: FileErrorCode;
  /** The file's name (an upload) or its path in the sandbox (a download); absent for a whole request. */
  readonly file: string | undefined;
  /**
   * The size refused, in bytes: the file's, or the request body's as it would be sent. For a download
   * stopped past its limit, the bytes received by then (so at least `limit + 1`).
   */
  readonly size: number | undefined;
  /** The limit `size` is over, in bytes. */
  readonly limit: number | undefined;

  constructor(
    code: FileErrorCode,
    message: string,
    details: { readonly file?: string | undefined; readonly size?: number; readonly limit?: number } = {},
  ) {
    super(message);
    this.code = code;
    this.file = details.file;
    this.size = details.size;
    this.limit = details.limit;
  }
}
