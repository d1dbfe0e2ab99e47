// The sandbox's `exec` tool: its call is a shell command with an intent (the card's title), its response
// `{"success": true, "response": {"exitCode", "result"}}` or `{"success": false, "error"}`. The card shows the
// command highlighted as shell, the exit code as a badge, and the output, long outputs cut in the middle
// until "Show all".

import { useState } from "react";
import { useHighlighted } from "./CodeBlock.js";
import { type ExecCall, shortenOutput } from "./exec-format.js";

/** The exit code as a badge: green for 0, red otherwise. */
export function ExitBadge({ code }: { readonly code: number | null }) {
  if (code === null) {
    return null;
  }
  return (
    <span
      className={`tf-chip tf-exit ${code === 0 ? "tf-exit-ok" : "tf-exit-bad"}`}
      data-testid="exec-exit-code"
      data-exit-code={code}
      title={code === 0 ? "The command succeeded" : "The command failed"}
    >
      exit {code}
    </span>
  );
}

export function ExecCommand({ call, running }: { readonly call: ExecCall; readonly running: boolean }) {
  const html = useHighlighted(call.command, "bash", running && call.command === "…");
  const env = Object.keys(call.env);
  return (
    <div className="tf-exec-command" data-testid="exec-command">
      <pre>
        <span className="tf-exec-prompt" aria-hidden="true">
          ${" "}
        </span>
        {html === null ? (
          <code>{call.command}</code>
        ) : (
          // biome-ignore lint/security/noDangerouslySetInnerHtml: highlight.js escapes the code it marks up.
          <code className="hljs" dangerouslySetInnerHTML={{ __html: html }} />
        )}
        {running ? <span className="tf-spinner tf-exec-spinner" role="status" aria-label="Running" /> : null}
      </pre>
      {call.cwd !== null || env.length > 0 ? (
        <p className="tf-exec-meta">
          {call.cwd !== null ? (
            <span>
              in <code>{call.cwd}</code>
            </span>
          ) : null}
          {env.length > 0 ? (
            <span title={env.map((name) => `${name}=${call.env[name]}`).join("\n")}>
              env <code>{env.join(", ")}</code>
            </span>
          ) : null}
        </p>
      ) : null}
    </div>
  );
}

export function ExecOutput({ output }: { readonly output: string }) {
  const [all, setAll] = useState(false);
  if (output === "") {
    return <p className="tf-exec-empty">No output.</p>;
  }
  const shown = shortenOutput(output);
  if (all || shown.hiddenChars <= 0) {
    return (
      <pre className="tf-exec-output" data-testid="exec-output">
        {output}
      </pre>
    );
  }
  return (
    <pre className="tf-exec-output" data-testid="exec-output">
      {shown.head}
      {"\n"}
      <button type="button" className="tf-exec-more" onClick={() => setAll(true)}>
        {shown.hiddenLines > 0 ? `… ${shown.hiddenLines} more lines.` : "… more."} Show all
      </button>
      {shown.tail === "" ? null : `\n${shown.tail}`}
    </pre>
  );
}
