// The input area. Enter sends, Shift+Enter starts a new line; files are attached with the paperclip or by
// dropping them, and refused here (with the reason) when they would make the request larger than the server
// takes, before anything is sent.

import { type ReactNode, useRef, useState } from "react";
import { formatBytes } from "../atoms/format.js";
import { PaperclipIcon, SendIcon, StopIcon, XIcon } from "../atoms/icons.js";

export interface ComposerProps {
  readonly streaming: boolean;
  readonly disabled: boolean;
  readonly placeholder: string;
  /** The largest request the server takes, when known. */
  readonly maxRequestBytes: number | undefined;
  onSend(text: string, files: File[]): void;
  onStop(): void;
  /** Extra controls left of the send button (the model picker of a new chat). */
  readonly accessory?: ReactNode;
}

/** The bytes a file takes in the request: base64 in a data URI (4 bytes per 3), plus the JSON around it. */
export function encodedSize(file: { size: number; name: string; type: string }): number {
  return Math.ceil(file.size / 3) * 4 + file.name.length + file.type.length + 64;
}

export function Composer({
  streaming,
  disabled,
  placeholder,
  maxRequestBytes,
  onSend,
  onStop,
  accessory,
}: ComposerProps) {
  const [text, setText] = useState("");
  const [files, setFiles] = useState<File[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);

  const total = files.reduce((sum, file) => sum + encodedSize(file), text.length * 2 + 1024);
  const tooLarge = maxRequestBytes !== undefined && total > maxRequestBytes;
  const canSend = !disabled && !streaming && (text.trim() !== "" || files.length > 0) && !tooLarge;

  const add = (list: FileList | null) => {
    if (!list) {
      return;
    }
    const next = [...files, ...Array.from(list)];
    const size = next.reduce((sum, file) => sum + encodedSize(file), 1024);
    if (maxRequestBytes !== undefined && size > maxRequestBytes) {
      setProblem(
        `Too large to send: the files need ${formatBytes(size)} encoded and the server takes at most ${formatBytes(maxRequestBytes)}.`,
      );
    } else {
      setProblem(null);
    }
    setFiles(next);
  };
  const send = () => {
    if (!canSend) {
      return;
    }
    onSend(text.trim(), files);
    setText("");
    setFiles([]);
    setProblem(null);
  };

  return (
    <form
      className="tf-composer"
      aria-label="Message composer"
      onSubmit={(event) => {
        event.preventDefault();
        send();
      }}
      onDragOver={(event) => event.preventDefault()}
      onDrop={(event) => {
        event.preventDefault();
        add(event.dataTransfer.files);
      }}
    >
      {files.length > 0 && (
        <ul className="tf-files" aria-label="Attached files">
          {files.map((file, index) => (
            <li key={`${file.name}-${file.size}-${file.lastModified}`} className="tf-chip">
              {file.name} · {formatBytes(file.size)}
              <button
                type="button"
                className="tf-icon-button"
                aria-label={`Remove ${file.name}`}
                onClick={() => {
                  const next = files.filter((_, at) => at !== index);
                  setFiles(next);
                  setProblem(null);
                }}
              >
                <XIcon />
              </button>
            </li>
          ))}
        </ul>
      )}
      {(problem || tooLarge) && (
        <p className="tf-composer-problem" role="alert">
          {problem ?? `Too large to send: the server takes at most ${formatBytes(maxRequestBytes ?? 0)}.`}
        </p>
      )}
      <label className="tf-visually-hidden" htmlFor="tf-composer-input">
        Message
      </label>
      <textarea
        id="tf-composer-input"
        className="tf-composer-input"
        placeholder={placeholder}
        value={text}
        rows={1}
        disabled={disabled}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
            event.preventDefault();
            send();
          }
        }}
      />
      <div className="tf-composer-bar">
        <input
          ref={input}
          type="file"
          multiple
          hidden
          data-testid="file-input"
          onChange={(event) => {
            add(event.target.files);
            event.target.value = "";
          }}
        />
        <button
          type="button"
          className="tf-icon-button"
          aria-label="Attach files"
          title="Attach files"
          onClick={() => input.current?.click()}
          disabled={disabled}
        >
          <PaperclipIcon />
        </button>
        <div className="tf-composer-accessory">{accessory}</div>
        {streaming ? (
          <button type="button" className="tf-button tf-button-danger" onClick={onStop} aria-label="Stop">
            <StopIcon /> Stop
          </button>
        ) : (
          <button type="submit" className="tf-button tf-button-primary" disabled={!canSend} aria-label="Send">
            <SendIcon /> Send
          </button>
        )}
      </div>
    </form>
  );
}
