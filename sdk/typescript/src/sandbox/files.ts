// Files sent with a message. A `file` part carries its bytes as a base64 `data:` URI; the server gives
// images and PDFs to the model as they are and writes any other file into the agent's sandbox, at
// `/workspace/uploads/<name>`. The helpers here build such parts and check them against the server's limits
// before anything is sent, so a file the server would refuse (too large, no sandbox, a bad name) is refused
// here with the numbers, not after its upload.

import { TrueForgeFileError } from "../errors.js";
import type { Capabilities, FileContentPart, UserMessageContentItem } from "../resources/types.js";

/** The bytes of a file: a `Uint8Array` (or any other view), an `ArrayBuffer`, or a `Blob` / `File`. */
export type FileData = Uint8Array | ArrayBufferView | ArrayBuffer | Blob;

/** The server's limits, as `GET /api/v1/capabilities` reports them (`capabilities.limits`). */
export type ServerLimits = NonNullable<Capabilities["limits"]>;

/** What the checks know about the server and the agent that receives the files. */
export interface FileCheckOptions {
  /**
   * The server's capabilities (`await tf.capabilities()`), or only their `limits`. The sizes are checked
   * against its limits; with the whole capabilities, a server whose sandbox is off also refuses files that
   * need one. Without it (or from a server that reports no limits) sizes are not checked.
   */
  readonly server?: Capabilities | ServerLimits | undefined;
  /**
   * Whether the agent that receives the message has a sandbox (its `config.sandbox.enabled`). `false`
   * refuses files that need one; by default only the capabilities decide.
   */
  readonly sandbox?: boolean | undefined;
}

export interface FilePartOptions extends FileCheckOptions {
  /**
   * The file's media type, e.g. `text/csv` (parameters such as `;charset=utf-8` are kept). By default a
   * `Blob`'s own `type`, else `application/octet-stream`. Written in lower case.
   */
  readonly mediaType?: string | undefined;
}

/** The media type of a file whose type is not known. */
export const DEFAULT_MEDIA_TYPE = "application/octet-stream";

/** The longest file name, in UTF-8 bytes (a path segment of the sandbox's file system). */
export const MAX_FILE_NAME_BYTES = 255;

/**
 * Whether a file of this media type goes into the sandbox: everything but images (`image/*`) and PDFs
 * (`application/pdf`), which the model reads itself. Such a file needs an agent with a sandbox. Parameters
 * are ignored and case does not matter (`filePart` writes the type in lower case, so the server applies the
 * same rule).
 */
export function isSandboxFile(mediaType: string): boolean {
  return !goesInline(essence(mediaType).toLowerCase());
}

/**
 * Whether `name` is a plain file name the server accepts for an upload: not empty, not `.` or `..`, without
 * `/` or `\`, control characters or unpaired surrogates, at most 255 bytes in UTF-8.
 */
export function isPlainFileName(name: string): boolean {
  return nameProblem(name) === undefined;
}

/**
 * Builds the `file` part of a `user.message` from a file's bytes: `{type: "file", name, data:
 * "data:<media type>;base64,…"}`.
 *
 * A name that is not a plain file name (see {@link isPlainFileName}) is refused, never changed: the model
 * is told the file's path by its name, so the SDK does not pick another one. With `server` (and `sandbox`)
 * the file is checked, before it is read or encoded, as {@link checkFileParts} checks a message. Throws
 * `TrueForgeFileError` (`invalid_name`, `invalid_media_type`, `sandbox_required`, `file_too_large`,
 * `request_too_large`).
 */
export async function filePart(
  data: FileData,
  name: string,
  options: FilePartOptions = {},
): Promise<FileContentPart> {
  checkName(name);
  const blob = isBlob(data) ? data : undefined;
  const mediaType = normalizeMediaType(options.mediaType ?? blob?.type ?? "", name);
  const size = blob
    ? blob.size
    : data instanceof ArrayBuffer
      ? data.byteLength
      : (data as ArrayBufferView).byteLength;
  const header = `data:${mediaType};base64,`;
  checkFile(name, mediaType, size, options);
  const limit = limitsOf(options.server)?.max_request_body_bytes;
  if (limit !== undefined) {
    // The part's JSON with an empty `data`, plus the length `data` will have (base64 is ASCII).
    const bytes = requestBytes([{ type: "file", name, data: "" }]) + header.length + 4 * Math.ceil(size / 3);
    checkRequestSize(bytes, limit, name);
  }
  const bytes = blob ? new Uint8Array(await blob.arrayBuffer()) : toBytes(data as Exclude<FileData, Blob>);
  return { type: "file", name, data: `${header}${base64(bytes)}` };
}

/**
 * Checks the parts of a message before it is sent, as the server will: every file part has a plain file
 * name and a base64 `data:` URI; a file that goes into the sandbox ({@link isSandboxFile}) is refused when
 * `sandbox` is `false` or the capabilities say the server's sandbox is off, and when it is over
 * `max_sandbox_file_bytes`; and the turn's request body (a turn whose only input is this message) must fit
 * `max_request_body_bytes`. Answers the body's size in bytes; throws `TrueForgeFileError` with the sizes and
 * the limit. Nothing is sent.
 */
export function checkFileParts(
  parts: readonly UserMessageContentItem[],
  options: FileCheckOptions = {},
): number {
  for (const part of parts) {
    if (part.type !== "file") {
      continue;
    }
    checkName(part.name);
    const uri = parseDataUri(part.data);
    if (!uri) {
      throw new TrueForgeFileError(
        "invalid_data",
        `the file ${JSON.stringify(part.name)} is not a base64 data: URI ("data:<media type>;base64,<bytes>")`,
        { file: part.name },
      );
    }
    checkFile(part.name, uri.mediaType, uri.size, options);
  }
  const bytes = requestBytes(parts);
  const limit = limitsOf(options.server)?.max_request_body_bytes;
  if (limit !== undefined) {
    checkRequestSize(bytes, limit, undefined);
  }
  return bytes;
}

// ---------------------------------------------------------------------------------------------------------

/** The server's rule, on the media type as written: images and PDFs go to the model. */
function goesInline(mediaType: string): boolean {
  return mediaType.startsWith("image/") || mediaType === "application/pdf";
}

/** The `type/subtype` of a media type (or of a data URI's header), without parameters. */
function essence(mediaType: string): string {
  return (mediaType.split(/[;,]/, 1)[0] ?? "").trim();
}

function nameProblem(name: string): string | undefined {
  if (name === "") {
    return "it is empty";
  }
  if (name === "." || name === "..") {
    return `"${name}" names a directory`;
  }
  if (/[/\\]/.test(name)) {
    return "it contains a path separator (/ or \\)";
  }
  if (/\p{Cc}/u.test(name)) {
    return "it contains a control character";
  }
  if (/\p{Cs}/u.test(name)) {
    return "it contains an unpaired surrogate";
  }
  if (utf8Length(name) > MAX_FILE_NAME_BYTES) {
    return `it is longer than ${MAX_FILE_NAME_BYTES} bytes`;
  }
  return undefined;
}

function checkName(name: string): void {
  const problem = nameProblem(name);
  if (problem !== undefined) {
    throw new TrueForgeFileError(
      "invalid_name",
      `${JSON.stringify(name)} is not a plain file name: ${problem}`,
      { file: name },
    );
  }
}

// RFC 6838's restricted names, for the type, the subtype and parameter names and values.
const TOKEN = "[A-Za-z0-9!#$&^_.+-]+";
const MEDIA_TYPE = new RegExp(`^(${TOKEN}/${TOKEN})((?:\\s*;\\s*${TOKEN}=${TOKEN})*)$`);

function normalizeMediaType(mediaType: string, name: string): string {
  const trimmed = mediaType.trim();
  if (trimmed === "") {
    return DEFAULT_MEDIA_TYPE;
  }
  const match = MEDIA_TYPE.exec(trimmed);
  if (!match?.[1]) {
    throw new TrueForgeFileError(
      "invalid_media_type",
      `the media type ${JSON.stringify(mediaType)} of ${JSON.stringify(name)} is not type/subtype[;name=value]`,
      { file: name },
    );
  }
  const parameters = (match[2] ?? "")
    .split(";")
    .map((parameter) => parameter.trim())
    .filter((parameter) => parameter !== "")
    .map((parameter) => {
      const [key = "", value = ""] = parameter.split("=");
      return `${key.toLowerCase()}=${value}`;
    });
  return [match[1].toLowerCase(), ...parameters].join(";");
}

/** The media type and decoded size of a base64 data URI, as the server reads it; `undefined` if it is not one. */
function parseDataUri(data: string): { mediaType: string; size: number } | undefined {
  if (!data.startsWith("data:")) {
    return undefined;
  }
  const comma = data.indexOf(",");
  if (comma < 0) {
    return undefined;
  }
  const header = data.slice("data:".length, comma);
  if (!header.split(";").includes("base64")) {
    return undefined;
  }
  const payload = data.slice(comma + 1).trim();
  if (payload.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(payload)) {
    return undefined;
  }
  const padding = payload.endsWith("==") ? 2 : payload.endsWith("=") ? 1 : 0;
  return { mediaType: essence(header), size: (payload.length / 4) * 3 - padding };
}

function limitsOf(server: FileCheckOptions["server"]): ServerLimits | undefined {
  if (!server) {
    return undefined;
  }
  return "sandbox" in server ? server.limits : server;
}

/** Why files that need a sandbox cannot go with this message, if they cannot. */
function noSandbox(options: FileCheckOptions): string | undefined {
  if (options.sandbox === false) {
    return "the agent has no sandbox";
  }
  const server = options.server;
  if (server && "sandbox" in server && !server.sandbox.enabled) {
    return `the server offers no sandbox${server.sandbox.reason ? ` (${server.sandbox.reason})` : ""}`;
  }
  return undefined;
}

/** The checks of one file that do not need its bytes. */
function checkFile(name: string, mediaType: string, size: number, options: FileCheckOptions): void {
  if (goesInline(essence(mediaType))) {
    return;
  }
  const reason = noSandbox(options);
  if (reason !== undefined) {
    throw new TrueForgeFileError(
      "sandbox_required",
      `the file ${JSON.stringify(name)} (${essence(mediaType)}) goes into the agent's sandbox, but ${reason}; only images and PDFs can be sent without one`,
      { file: name, size },
    );
  }
  const limit = limitsOf(options.server)?.max_sandbox_file_bytes;
  if (limit !== undefined && size > limit) {
    throw new TrueForgeFileError(
      "file_too_large",
      `the file ${JSON.stringify(name)} is too large: ${size} bytes, over the server's limit of ${limit} bytes per sandbox file`,
      { file: name, size, limit },
    );
  }
}

function checkRequestSize(bytes: number, limit: number, name: string | undefined): void {
  if (bytes > limit) {
    throw new TrueForgeFileError(
      "request_too_large",
      `${name === undefined ? "the message" : `the message with ${JSON.stringify(name)}`} would make a request of ${bytes} bytes (files in base64), over the server's limit of ${limit} bytes`,
      { file: name, size: bytes, limit },
    );
  }
}

/**
 * Room for the `previous_turn_id` the body may carry (a turn id: a ULID, a dot and the server's executor id,
 * or `auto`), so the estimate stays an upper bound.
 */
const TURN_ID_PLACEHOLDER = "x".repeat(128);

/** The size of the body of a turn whose only input is a message of `parts`, as `tf.turns` sends it. */
function requestBytes(parts: readonly UserMessageContentItem[]): number {
  return utf8Length(
    JSON.stringify({
      input: [{ type: "user.message", content: parts }],
      previous_turn_id: TURN_ID_PLACEHOLDER,
      stream: false,
    }),
  );
}

/** The length of `text` in UTF-8 (an unpaired surrogate counts as the 3 bytes of its replacement). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) {
      bytes += 1;
    } else if (code < 0x800) {
      bytes += 2;
    } else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index++;
      } else {
        bytes += 3;
      }
    } else {
      bytes += 3;
    }
  }
  return bytes;
}

function isBlob(data: FileData): data is Blob {
  return typeof Blob !== "undefined" && data instanceof Blob;
}

function toBytes(data: Exclude<FileData, Blob>): Uint8Array {
  if (data instanceof Uint8Array) {
    return data;
  }
  if (ArrayBuffer.isView(data)) {
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  }
  return new Uint8Array(data);
}

/** Bytes per `btoa` call: a multiple of 3, so the pieces join without padding in between. */
const BASE64_CHUNK = 3 * 8192;

/** Standard base64 with padding, in browsers and Node alike (no `Buffer`). */
function base64(bytes: Uint8Array): string {
  const pieces: string[] = [];
  for (let start = 0; start < bytes.length; start += BASE64_CHUNK) {
    const chunk = bytes.subarray(start, start + BASE64_CHUNK);
    pieces.push(btoa(String.fromCharCode.apply(null, chunk as unknown as number[])));
  }
  return pieces.join("");
}
