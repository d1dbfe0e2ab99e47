// What the composer may attach, and how a file is named on the way: images and PDFs go to the model as they
// are; any other file goes into the chat's sandbox (`/workspace/uploads/<name>`), so it needs an agent with
// the sandbox on and must fit the server's per-file limit. Everything is checked here, before the upload.

import type { AgentSpec, Capabilities, Session } from "@trueforge/sdk";
import { useEffect, useState } from "react";
import { formatBytes } from "../atoms/format.js";
import type { AgentUIServer } from "../server/port.js";

/** What the composer takes. `anyFile` off: images and PDFs only, `reason` says why. */
export interface AttachmentPolicy {
  readonly anyFile: boolean;
  /**
   * Whether the chat has a sandbox is not known yet: any file is attached for now, checked (and refused if
   * need be) once it is known, and not sent before.
   */
  readonly pending?: boolean;
  /** Why only images and PDFs are taken (shown when another file is picked). */
  readonly reason?: string;
  /** The largest file the sandbox takes, in bytes (files other than images and PDFs). */
  readonly maxSandboxFileBytes?: number;
}

/** Images and PDFs: sent to the model as they are, with or without a sandbox. */
export const INLINE_TYPES = "image/*,application/pdf";

/** By the file's media type, as the server decides (from the data URI the browser makes of it). */
export function goesInline(file: { readonly type: string }): boolean {
  return file.type.startsWith("image/") || file.type === "application/pdf";
}

/**
 * A name the sandbox takes as one plain file: no `/` or `\` (they would make directories), no control
 * characters, not `.` or `..`, at most 200 characters (the extension kept).
 */
export function safeFileName(name: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced.
  let safe = name.replace(/[/\\\u0000-\u001f\u007f]/g, "_").trim();
  if (safe === "" || /^\.+$/.test(safe)) {
    safe = "file";
  }
  if (safe.length > 200) {
    const dot = safe.lastIndexOf(".");
    const extension = dot > 0 && safe.length - dot <= 16 ? safe.slice(dot) : "";
    safe = safe.slice(0, 200 - extension.length) + extension;
  }
  return safe;
}

/** Safe names for a message's files, unique among them (a second `a.csv` becomes `a (2).csv`). */
export function uniqueFileNames(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((name) => {
    const safe = safeFileName(name);
    let candidate = safe;
    for (let count = 2; taken.has(candidate.toLowerCase()); count++) {
      const dot = safe.lastIndexOf(".");
      candidate = dot > 0 ? `${safe.slice(0, dot)} (${count})${safe.slice(dot)}` : `${safe} (${count})`;
    }
    taken.add(candidate.toLowerCase());
    return candidate;
  });
}

/** Why a file cannot be attached under `policy`, or `null` when it can. */
export function fileProblem(
  file: { readonly name: string; readonly type: string; readonly size: number },
  policy: AttachmentPolicy,
): string | null {
  if (goesInline(file) || policy.pending) {
    return null;
  }
  if (!policy.anyFile) {
    return `${file.name}: only images and PDFs can be attached here. ${policy.reason ?? ""}`.trim();
  }
  const max = policy.maxSandboxFileBytes;
  if (max !== undefined && file.size > max) {
    // Exact figures when the rounded ones would read the same ("64.0 KiB, at most 64.0 KiB").
    const exact = formatBytes(file.size) === formatBytes(max);
    const size = (bytes: number) => (exact ? `${bytes.toLocaleString("en-US")} bytes` : formatBytes(bytes));
    return `${file.name} is too large: ${size(file.size)}, and the sandbox takes files of at most ${size(max)}.`;
  }
  return null;
}

/** What the UI reads of the capabilities. */
export interface ServerCapabilities {
  readonly sandbox: { readonly enabled: boolean; readonly reason?: string };
  readonly maxRequestBodyBytes?: number;
  readonly maxSandboxFileBytes?: number;
}

export function readCapabilities(capabilities: Capabilities): ServerCapabilities {
  const { enabled, reason } = capabilities.sandbox;
  // A server older than these limits leaves them out.
  const limit = (value: number | undefined) => (typeof value === "number" && value > 0 ? value : undefined);
  const maxRequestBodyBytes = limit(capabilities.limits?.max_request_body_bytes);
  const maxSandboxFileBytes = limit(capabilities.limits?.max_sandbox_file_bytes);
  return {
    sandbox: { enabled: enabled === true, ...(reason ? { reason } : {}) },
    ...(maxRequestBodyBytes !== undefined ? { maxRequestBodyBytes } : {}),
    ...(maxSandboxFileBytes !== undefined ? { maxSandboxFileBytes } : {}),
  };
}

/** The server's capabilities, `null` until they are known (or when the port has none). */
export function useCapabilities(server: AgentUIServer): ServerCapabilities | null {
  const [capabilities, setCapabilities] = useState<ServerCapabilities | null>(null);
  useEffect(() => {
    let live = true;
    server.agents
      ?.capabilities()
      .then((value) => live && setCapabilities(readCapabilities(value)))
      .catch(() => {
        // The chat works without them: the port's own limit stays, and only images and PDFs are taken.
      });
    return () => {
      live = false;
    };
  }, [server]);
  return capabilities;
}

export function sandboxOn(spec: AgentSpec | undefined): boolean {
  return spec?.config?.sandbox?.enabled === true;
}

/**
 * Whether the chat's agent has the sandbox on: the session's inline spec, the saved agent it refers to, or
 * (a new chat) the fixed agent of the shell; a new free chat has none. `undefined` until it is known.
 */
export function useAgentSandbox(
  server: AgentUIServer,
  session: Session | null,
  sessionId: string | null,
  mode: { readonly type: string; readonly agentName?: string },
): boolean | undefined {
  const [saved, setSaved] = useState<{ key: string; on: boolean } | null>(null);
  const agent = session?.agent;
  // The saved agent to look up, by id (a session's reference) or by name (the shell's fixed agent).
  const lookup =
    agent?.type === "reference"
      ? { key: `id:${agent.id}`, match: (item: { id: string }) => item.id === agent.id }
      : sessionId === null && mode.type === "agent"
        ? { key: `name:${mode.agentName}`, match: (item: { name: string }) => item.name === mode.agentName }
        : null;
  const key = lookup?.key ?? null;
  // biome-ignore lint/correctness/useExhaustiveDependencies: `lookup` is rebuilt each render; `key` names it.
  useEffect(() => {
    if (key === null || lookup === null || !server.agents) {
      return;
    }
    let live = true;
    server.agents.list().then(
      (agents) => {
        const found = agents.find((item) => lookup.match(item));
        if (live) {
          setSaved({ key, on: sandboxOn(found?.manifest) });
        }
      },
      () => live && setSaved({ key, on: false }),
    );
    return () => {
      live = false;
    };
  }, [server, key]);
  if (agent?.type === "inline") {
    return sandboxOn(agent.spec);
  }
  if (key !== null) {
    return saved?.key === key ? saved.on : undefined;
  }
  if (sessionId !== null) {
    // The session is still loading.
    return undefined;
  }
  return false;
}

/** The attachment policy of a chat from the server's capabilities and its agent. */
export function attachmentPolicy(
  capabilities: ServerCapabilities | null,
  agentSandbox: boolean | undefined,
): AttachmentPolicy {
  const maxSandboxFileBytes = capabilities?.maxSandboxFileBytes;
  const limit = maxSandboxFileBytes !== undefined ? { maxSandboxFileBytes } : {};
  if (agentSandbox === undefined) {
    return { anyFile: false, pending: true, reason: "Checking whether this chat has a sandbox…", ...limit };
  }
  if (!agentSandbox) {
    return {
      anyFile: false,
      reason: "Other files go into the agent's sandbox, and this chat's agent has none.",
      ...limit,
    };
  }
  if (capabilities !== null && !capabilities.sandbox.enabled) {
    return {
      anyFile: false,
      reason: `Other files go into the agent's sandbox, and this server runs none${capabilities.sandbox.reason ? `: ${capabilities.sandbox.reason}` : "."}`,
      ...limit,
    };
  }
  return { anyFile: true, ...limit };
}
