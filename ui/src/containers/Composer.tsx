// The input area. Enter sends, Shift+Enter starts a new line; files are attached with the paperclip or by
// dropping them, and refused here (with the reason) before anything is sent: a file the chat cannot take
// (not an image or a PDF without a sandbox), one over the sandbox's per-file limit, or files that would make
// the request larger than the server takes.

import { type ReactNode, useEffect, useRef, useState } from "react";
import { formatBytes } from "../atoms/format.js";
import { PaperclipIcon, SendIcon, StopIcon, XIcon } from "../atoms/icons.js";
import {
  type AttachmentPolicy,
  fileProblem,
  goesInline,
  INLINE_TYPES,
  uniqueFileNames,
} from "./attachments.js";

export interface ComposerProps {
  readonly streaming: boolean;
  readonly disabled: boolean;
  readonly placeholder: string;
  /** The largest request the server takes, when known. */
  readonly maxRequestBytes: number | undefined;
  /** Which files the chat takes; absent: any file (the server decides). */
  readonly attachments?: AttachmentPolicy;
  onSend(text: string, files: File[]): void;
  onStop(): void;
  /** Extra controls left of the send button (the model picker of a new chat). */
  readonly accessory?: ReactNode;
}

/** The bytes a file takes in the request: base64 in a data URI (4 bytes per 3), plus the JSON around it. */
export function encodedSize(file: { size: number; name: string; type: string }): number {
  return Math.ceil(file.size / 3) * 4 + file.name.length + file.type.length + 64;
}

const ANY_FILE: AttachmentPolicy = { anyFile: true };

export function Composer({
  streaming,
  disabled,
  placeholder,
  maxRequestBytes,
  attachments = ANY_FILE,
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
  // A file attached before the chat's sandbox was known waits for the answer.
  const checking = attachments.pending === true && files.some((file) => !goesInline(file));
  const canSend =
    !disabled && !streaming && (text.trim() !== "" || files.length > 0) && !tooLarge && !checking;

  // Once the policy is known (or changes), files it does not take are taken off again, saying why.
  useEffect(() => {
    const refused = files.filter((file) => fileProblem(file, attachments) !== null);
    if (refused.length === 0) {
      return;
    }
    setFiles(files.filter((file) => !refused.includes(file)));
    setProblem(refused.map((file) => fileProblem(file, attachments)).join(" "));
  }, [attachments, files]);

  const add = (list: FileList | null) => {
    if (!list || list.length === 0) {
      return;
    }
    const refused: string[] = [];
    const taken: File[] = [];
    for (const file of Array.from(list)) {
      const reason = fileProblem(file, attachments);
      if (reason === null) {
        taken.push(file);
      } else {
        refused.push(reason);
      }
    }
    const next = [...files, ...taken];
    const size = next.reduce((sum, file) => sum + encodedSize(file), 1024);
    if (maxRequestBytes !== undefined && size > maxRequestBytes) {
      refused.push(
        `Too large to send: the files need ${formatBytes(size)} encoded and the server takes at most ${formatBytes(maxRequestBytes)}.`,
      );
    }
    setProblem(refused.length > 0 ? refused.join(" ") : null);
    setFiles(next);
  };
  const names = uniqueFileNames(files.map((file) => file.name));
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
            <li
              key={`${file.name}-${file.size}-${file.lastModified}`}
              className="tf-chip tf-file-chip"
              data-testid="attachment"
              title={
                goesInline(file)
                  ? "Sent to the model as it is"
                  : `Goes into the agent's sandbox, in its uploads folder, as ${names[index]}`
              }
            >
              {goesInline(file) ? null : <span className="tf-file-where">sandbox</span>}
              {names[index]} · {formatBytes(file.size)}
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
        <p className="tf-composer-problem" role="alert" data-testid="composer-problem">
          {problem ?? `Too large to send: the server takes at most ${formatBytes(maxRequestBytes ?? 0)}.`}
        </p>
      )}
      {checking && !problem && (
        <p className="tf-composer-hint" role="status">
          {attachments.reason}
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
          accept={attachments.anyFile || attachments.pending ? undefined : INLINE_TYPES}
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
          title={
            attachments.anyFile
              ? "Attach files: images and PDFs go to the model, other files into the agent's sandbox"
              : `Attach images or PDFs. ${attachments.reason ?? ""}`.trim()
          }
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
