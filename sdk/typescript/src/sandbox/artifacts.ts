// Files an agent made in its sandbox and offers the user. The model lists them in its answer in a fenced
// block of the language `sandbox_artifacts`, one markdown link per line with the file's absolute path:
//
//   ```sandbox_artifacts
//   [Report](/workspace/report.csv)
//   ```
//
// They download through the server (`tf.turns.readSandboxFile` or `downloadSandboxFile`, with the id of the
// turn that answered); the sandbox itself is not reachable from a client.

import { TrueForgeAbortError, TrueForgeConnectionError, TrueForgeFileError } from "../errors.js";

/** A file listed in a `sandbox_artifacts` block. */
export interface SandboxArtifact {
  /** The link's text (the file's name when the link has none). */
  readonly label: string;
  /** The absolute path of the file in the sandbox. */
  readonly path: string;
}

/** The language of the fences that list artifacts. */
export const SANDBOX_ARTIFACTS_FENCE = "sandbox_artifacts";

const OPENING = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/;
const LINK = /^\[(.*?)\]\(\s*(<[^>]*>|.*?)\s*\)$/;
/** `name: /path`, the other form the web UI reads. */
const PAIR = /^([^:[\]]+):\s*(\/\S.*)$/;

/**
 * The files listed in the `sandbox_artifacts` blocks of an answer, in order, each path once. Lines are
 * `[label](/abs/path)` (optionally as list items, the path optionally in `<…>`) or `label: /abs/path`;
 * other lines are ignored, and so is a path the server would refuse: relative, with a `.` or `..` segment,
 * or a NUL. A block still open at the end of the text (a streaming answer) counts up to there.
 */
export function parseSandboxArtifacts(text: string): SandboxArtifact[] {
  const artifacts: SandboxArtifact[] = [];
  const seen = new Set<string>();
  let fence: { marker: string; artifacts: boolean } | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (fence === undefined) {
      const opening = OPENING.exec(line);
      if (opening?.[1]) {
        fence = { marker: opening[1], artifacts: opening[2] === SANDBOX_ARTIFACTS_FENCE };
      }
      continue;
    }
    if (isClosing(line, fence.marker)) {
      fence = undefined;
      continue;
    }
    if (!fence.artifacts) {
      continue;
    }
    const artifact = artifactOf(line);
    if (artifact && !seen.has(artifact.path)) {
      seen.add(artifact.path);
      artifacts.push(artifact);
    }
  }
  return artifacts;
}

/** Whether a path names a file the download route can serve: absolute, no `.`/`..` segment, no NUL. */
export function isSandboxPath(path: string): boolean {
  return (
    path.startsWith("/") &&
    !path.includes("\0") &&
    path.split("/").every((segment) => segment !== "." && segment !== "..")
  );
}

function isClosing(line: string, marker: string): boolean {
  const trimmed = line.trim();
  const char = marker[0] ?? "`";
  return (
    line.length - line.trimStart().length <= 3 &&
    trimmed.length >= marker.length &&
    [...trimmed].every((c) => c === char)
  );
}

function artifactOf(line: string): SandboxArtifact | undefined {
  const item = line.trim().replace(/^(?:[-*+]|\d+[.)])\s+/, "");
  const link = LINK.exec(item);
  let label: string;
  let path: string;
  if (link) {
    label = (link[1] ?? "").trim();
    path = (link[2] ?? "").replace(/^<(.*)>$/, "$1").trim();
  } else {
    const pair = PAIR.exec(item);
    if (!pair) {
      return undefined;
    }
    label = (pair[1] ?? "").trim();
    path = (pair[2] ?? "").trim();
  }
  if (!isSandboxPath(path)) {
    return undefined;
  }
  return { label: label || baseName(path), path };
}

/** The last segment of a path. */
export function baseName(path: string): string {
  return path.replace(/\/+$/, "").split("/").pop() ?? "";
}

/** A downloaded sandbox file. */
export interface SandboxFileContent {
  /** The path it was read from. */
  readonly path: string;
  /** The file's name: the server's `Content-Disposition` file name, else the path's last segment. */
  readonly name: string;
  readonly bytes: Uint8Array;
}

/** The largest download `readSandboxFile` reads when not told (20 MiB, the server's default file limit). */
export const DEFAULT_MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024;

/**
 * Reads a download's body into bytes, at most `maxBytes`: a larger `Content-Length` is refused before the
 * body is read, and a body that grows past the limit is cancelled there. Throws `TrueForgeFileError`
 * (`file_too_large`, with the bytes seen and the limit), `TrueForgeAbortError` when `signal` aborted,
 * `TrueForgeConnectionError` when the body broke off.
 */
export async function readLimitedBody(
  response: Response,
  maxBytes: number,
  path: string,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  const tooLarge = (size: number) =>
    new TrueForgeFileError(
      "file_too_large",
      `the sandbox file ${path} is too large: ${size === maxBytes + 1 ? "over" : `${size} bytes, over`} the limit of ${maxBytes} bytes`,
      { file: path, size, limit: maxBytes },
    );
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(declared);
  }
  const body = response.body;
  if (!body) {
    return new Uint8Array(0);
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge(total);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof TrueForgeFileError) {
      throw error;
    }
    if (signal?.aborted) {
      throw new TrueForgeAbortError(`the download of ${path} was aborted`, { cause: signal.reason });
    }
    throw new TrueForgeConnectionError(`the download of ${path} broke off after ${total} bytes`, {
      cause: error,
    });
  } finally {
    reader.releaseLock();
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** The `filename` of a `Content-Disposition` header (`filename*=UTF-8''…` first). */
export function dispositionFileName(header: string | null): string | undefined {
  if (!header) {
    return undefined;
  }
  const extended = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(header)?.[1];
  if (extended) {
    try {
      return decodeURIComponent(extended.trim());
    } catch {
      // Not percent-encoding: fall back to the plain parameter.
    }
  }
  const quoted = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header)?.[1];
  if (quoted !== undefined) {
    return quoted.replace(/\\(.)/g, "$1");
  }
  return /filename\s*=\s*([^;\s]+)/i.exec(header)?.[1];
}
