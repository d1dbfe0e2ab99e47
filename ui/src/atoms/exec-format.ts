// The sandbox's `exec` tool, read for its card: the call's intent, command, cwd and env; the response
// `{"success": true, "response": {"exitCode", "result"}}` or `{"success": false, "error"}`; and how much of a
// long output is shown before "Show all". No React here (unit-tested without a browser).

import type { ToolCallView } from "@trueforge/sdk";
import { parseArguments } from "./format.js";

export interface ExecCall {
  readonly intent: string | null;
  readonly command: string;
  readonly cwd: string | null;
  readonly env: Record<string, string>;
}

export type ExecResult =
  | { readonly kind: "ran"; readonly exitCode: number | null; readonly output: string }
  | { readonly kind: "failed"; readonly error: string }
  /** Not the tool's JSON (cut by the large-response handling, or another server's shape): shown as text. */
  | { readonly kind: "raw"; readonly text: string };

/** Whether the call is the sandbox's `exec` (a built-in tool, not an MCP server's tool of the same name). */
export function isExec(view: ToolCallView): boolean {
  return view.call.function.name === "exec" && view.call.tool_info.type !== "mcp";
}

export function parseExecCall(argumentsText: string): ExecCall {
  const args = parseArguments(argumentsText) ?? {};
  const text = (value: unknown) => (typeof value === "string" && value.trim() !== "" ? value : null);
  const env: Record<string, string> = {};
  if (typeof args.env === "object" && args.env !== null && !Array.isArray(args.env)) {
    for (const [name, value] of Object.entries(args.env)) {
      env[name] = typeof value === "string" ? value : JSON.stringify(value);
    }
  }
  return {
    intent: text(args.intent),
    // While the call streams its arguments do not parse yet: the raw text is the best there is.
    command: typeof args.command === "string" ? args.command : argumentsText === "" ? "" : "…",
    cwd: text(args.cwd),
    env,
  };
}

export function parseExecResult(content: string): ExecResult {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    return { kind: "raw", text: content };
  }
  if (typeof value !== "object" || value === null) {
    return { kind: "raw", text: content };
  }
  const record = value as { success?: unknown; error?: unknown; response?: unknown };
  if (record.success === false) {
    return { kind: "failed", error: typeof record.error === "string" ? record.error : content };
  }
  const response = record.response as { exitCode?: unknown; result?: unknown } | undefined;
  if (record.success === true && typeof response === "object" && response !== null) {
    return {
      kind: "ran",
      exitCode: typeof response.exitCode === "number" ? response.exitCode : null,
      output: typeof response.result === "string" ? response.result : JSON.stringify(response.result ?? ""),
    };
  }
  return { kind: "raw", text: content };
}

/** How much of a long output is shown before "Show all": its first and last lines, at most so many characters. */
const HEAD_LINES = 30;
const TAIL_LINES = 20;
const MAX_CHARS = 8_000;

export interface ShownOutput {
  readonly head: string;
  readonly tail: string;
  /** Lines left out between head and tail (0: the whole output is shown). */
  readonly hiddenLines: number;
  readonly hiddenChars: number;
}

/** The output as shown before "Show all": whole when short, else its head and tail around a gap. */
export function shortenOutput(output: string): ShownOutput {
  const lines = output.split("\n");
  if (lines.length <= HEAD_LINES + TAIL_LINES + 5 && output.length <= MAX_CHARS) {
    return { head: output, tail: "", hiddenLines: 0, hiddenChars: 0 };
  }
  let head = lines.slice(0, HEAD_LINES).join("\n");
  let tail = lines.length > HEAD_LINES + TAIL_LINES ? lines.slice(-TAIL_LINES).join("\n") : "";
  // A few very long lines: cut by characters as well.
  if (head.length > MAX_CHARS / 2) {
    head = head.slice(0, MAX_CHARS / 2);
  }
  if (tail.length > MAX_CHARS / 2) {
    tail = tail.slice(-MAX_CHARS / 2);
  }
  const shownLines = head.split("\n").length + (tail === "" ? 0 : tail.split("\n").length);
  return {
    head,
    tail,
    hiddenLines: Math.max(0, lines.length - shownLines),
    hiddenChars: output.length - head.length - tail.length,
  };
}
