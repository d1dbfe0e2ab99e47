// Files an agent produced in its sandbox, listed by the model in a ```sandbox_artifacts fence: one file per
// line, `[name](path)` or `name: path`. Each downloads through the server (the sandbox is not reachable
// from the browser); a refused download (gone, too large, missing…) says why in the server's words.

import { useState } from "react";
import { toast } from "sonner";
import { useOptionalChatSession } from "../containers/chat-session.js";
import { useServer } from "../embed/context.js";
import { describeError } from "../state/errors.js";
import { DownloadIcon } from "./icons.js";

export interface Artifact {
  readonly name: string;
  readonly path: string;
}

export function parseArtifacts(text: string): Artifact[] {
  const files: Artifact[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim().replace(/^[-*]\s+/, "");
    const link = /^\[([^\]]+)\]\(([^)]+)\)$/.exec(trimmed);
    if (link?.[1] && link[2]) {
      files.push({ name: link[1], path: link[2] });
      continue;
    }
    const pair = /^([^:]+):\s*(\S.*)$/.exec(trimmed);
    if (pair?.[1] && pair[2]) {
      files.push({ name: pair[1].trim(), path: pair[2].trim() });
    }
  }
  return files;
}

function save(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.rel = "noopener";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function ArtifactList({
  files,
  turnId,
}: {
  readonly files: Artifact[];
  readonly turnId: string | null;
}) {
  const server = useServer();
  const session = useOptionalChatSession();
  const [busy, setBusy] = useState<string | null>(null);
  const [failure, setFailure] = useState<{ path: string; message: string } | null>(null);
  const download = server.chat.downloadFile;
  const sessionId = session?.sessionId ?? null;
  if (files.length === 0) {
    return null;
  }
  return (
    <details className="tf-artifacts" open>
      <summary>
        {files.length} {files.length === 1 ? "file" : "files"} generated
      </summary>
      <ul>
        {files.map((file) => (
          <li key={file.path}>
            {download && sessionId && turnId ? (
              <button
                type="button"
                className="tf-button tf-button-quiet"
                disabled={busy === file.path}
                aria-busy={busy === file.path}
                title={file.path}
                onClick={async () => {
                  setBusy(file.path);
                  setFailure(null);
                  try {
                    save(
                      await download.call(server.chat, sessionId, turnId, file.path),
                      file.path.split("/").pop() || file.name,
                    );
                  } catch (error) {
                    const message = describeError(error);
                    setFailure({ path: file.path, message });
                    toast.error(`Could not download ${file.name}: ${message}`);
                  } finally {
                    setBusy(null);
                  }
                }}
              >
                <DownloadIcon /> {file.name}
              </button>
            ) : (
              <span>
                {file.name} <code>{file.path}</code>
              </span>
            )}
          </li>
        ))}
      </ul>
      {failure !== null ? (
        <p className="tf-error-text" role="alert" data-testid="artifact-error">
          Could not download {failure.path}: {failure.message}
        </p>
      ) : null}
    </details>
  );
}
