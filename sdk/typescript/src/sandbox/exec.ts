// The `exec` tool's results. A call runs a shell command in the agent's sandbox (arguments `{intent, command,
// cwd?, env?}`); its `tool.response` carries JSON text: `{"success": true, "response": {"exitCode", "result"}}`
// when the command ran and exited (whatever its exit code), `{"success": false, "error"}` when it could not
// run or was stopped. A result too large for the model's context arrives shortened, with the path of the
// complete text in the sandbox on its first line. The parser reads all of these, and any other text without
// throwing.

import type { ToolResponseEvent } from "../events.js";
import { foldAll, toolResponseOf } from "../fold/fold.js";
import type { ConversationState, FoldInput } from "../fold/types.js";

/** The name of the sandbox's command tool. */
export const EXEC_TOOL = "exec";

/** What an `exec` result says. */
export type ExecResult =
  /** The command ran and exited: its exit code (0 or not) and its output (stdout and stderr together). */
  | { readonly kind: "exited"; readonly exitCode: number; readonly output: string }
  /** The command could not run, or was stopped (timeout, cancelled turn, signal): why, in the tool's words. */
  | { readonly kind: "error"; readonly error: string }
  /**
   * The result was too large to show whole: `text` is the beginning and end the model got. `savedPath` is
   * the file in the sandbox holding the complete result (its JSON text, `savedBytes` long) when the server
   * saved it; download it and parse it again. `exitCode` when the beginning shows it.
   */
  | {
      readonly kind: "preview";
      readonly savedPath: string | undefined;
      readonly savedBytes: number | undefined;
      readonly exitCode: number | undefined;
      readonly text: string;
    }
  /** Text that is none of these (another server, another tool): as it arrived. */
  | { readonly kind: "unparsed"; readonly text: string };

/** The arguments of an `exec` call, as the model gave them. */
export interface ExecArguments {
  /** What the command is for, in the model's words (for the user). */
  readonly intent?: string | undefined;
  readonly command?: string | undefined;
  /** The working directory; `/workspace` by default. */
  readonly cwd?: string | undefined;
  readonly env?: Readonly<Record<string, string>> | undefined;
}

/** One `exec` call of a turn with its result. */
export interface ExecCall {
  readonly toolCallId: string;
  /** The turn that made the call (`""` for stream frames folded before their `turn.created`). */
  readonly turnId: string;
  /** The thread: `main`, or a sub-agent's. */
  readonly threadId: string;
  /** The arguments; `undefined` when they are not a JSON object (or, streaming, not complete yet). */
  readonly arguments: ExecArguments | undefined;
  /** The result; `undefined` while the command runs (or when the events end before it). */
  readonly result: ExecResult | undefined;
  /** The `tool.response` event the result was read from. */
  readonly response: ToolResponseEvent | undefined;
}

const SAVED = /^\[The complete output is saved in the sandbox at (\/.*?) \((\d+) bytes\)\./;
const SAVED_PATH_ONLY = /^\[The complete output is saved in the sandbox at (\/[^\s\]]+)/;
const SHORTENED = /^\[This (?:error )?output is too large to show in full/m;
/** The start of a result's JSON on a line of its own (a JSON string cannot hold a raw line break). */
const EXIT_CODE_AT_START = /^\{"(?:success":true,")?response":\{"exitCode":(-?\d+)[,}]/m;

/** Reads the text of an `exec` result (a `tool.response` event's `content`). Never throws. */
export function parseExecResult(text: string): ExecResult {
  const saved = SAVED.exec(text) ?? SAVED_PATH_ONLY.exec(text);
  if (saved || SHORTENED.test(text)) {
    const code = EXIT_CODE_AT_START.exec(text)?.[1];
    return {
      kind: "preview",
      savedPath: saved?.[1],
      savedBytes: saved?.[2] === undefined ? undefined : Number(saved[2]),
      exitCode: code === undefined ? undefined : Number(code),
      text,
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "unparsed", text };
  }
  if (isObject(value)) {
    if (value.success === true && isObject(value.response)) {
      const { exitCode, result } = value.response;
      if (typeof exitCode === "number" && Number.isInteger(exitCode) && typeof result === "string") {
        return { kind: "exited", exitCode, output: result };
      }
    }
    if (value.success === false && typeof value.error === "string") {
      return { kind: "error", error: value.error };
    }
  }
  return { kind: "unparsed", text };
}

/**
 * The `exec` calls in a conversation's events, in order, each with its parsed result once its
 * `tool.response` arrived. Takes what `fold` takes: stream frames `{seq, event}` (the calls' arguments
 * arrive in deltas), history items `{turn_id, event}` or stored events.
 */
export function execCallsOf(events: Iterable<FoldInput>): ExecCall[] {
  return execCallsIn(foldAll(events));
}

/** The `exec` calls of a folded conversation (see {@link execCallsOf}), every thread, turn by turn. */
export function execCallsIn(state: ConversationState): ExecCall[] {
  const calls: ExecCall[] = [];
  for (const turn of state.turns) {
    for (const view of Object.values(turn.messages)) {
      for (const call of view.message.tool_calls ?? []) {
        if (call.function.name !== EXEC_TOOL) {
          continue;
        }
        const response = toolResponseOf(state, call.id);
        calls.push({
          toolCallId: call.id,
          turnId: turn.id,
          threadId: view.threadId,
          arguments: execArguments(call.function.arguments),
          result: response === undefined ? undefined : parseExecResult(response.content),
          response,
        });
      }
    }
  }
  return calls;
}

function execArguments(text: string): ExecArguments | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(value)) {
    return undefined;
  }
  const stringAt = (key: string) => (typeof value[key] === "string" ? (value[key] as string) : undefined);
  const env = isObject(value.env)
    ? Object.fromEntries(
        Object.entries(value.env).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
      )
    : undefined;
  return { intent: stringAt("intent"), command: stringAt("command"), cwd: stringAt("cwd"), env };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
