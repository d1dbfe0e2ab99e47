import { useEffect, useState } from "react";
import { CopyIcon } from "./icons.js";

/**
 * The code as highlighted HTML once highlight.js (a lazy chunk) has it, `null` meanwhile, while `streaming`,
 * and for a language it does not know.
 */
export function useHighlighted(code: string, language: string, streaming: boolean): string | null {
  const [html, setHtml] = useState<string | null>(null);
  useEffect(() => {
    if (streaming || language === "") {
      setHtml(null);
      return;
    }
    let live = true;
    import("./highlight.js")
      .then(({ highlight }) => {
        if (live) {
          setHtml(highlight(code, language));
        }
      })
      .catch(() => {
        // Highlighting is decoration: the plain block stays.
      });
    return () => {
      live = false;
    };
  }, [code, language, streaming]);
  return html;
}

/** A fenced code block: plain while its message streams, highlighted once it is whole. */
export function CodeBlock({
  code,
  language,
  streaming,
}: {
  readonly code: string;
  readonly language: string;
  readonly streaming: boolean;
}) {
  const html = useHighlighted(code, language, streaming);
  return (
    <div className="tf-code">
      <div className="tf-code-bar">
        <span>{language || "text"}</span>
        <button
          type="button"
          className="tf-icon-button"
          aria-label="Copy code"
          onClick={() => void navigator.clipboard?.writeText(code)}
        >
          <CopyIcon />
        </button>
      </div>
      <pre>
        {html === null ? (
          <code>{code}</code>
        ) : (
          // biome-ignore lint/security/noDangerouslySetInnerHtml: highlight.js escapes the code it marks up.
          <code className="hljs" dangerouslySetInnerHTML={{ __html: html }} />
        )}
      </pre>
    </div>
  );
}
