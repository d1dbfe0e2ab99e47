// An incremental parser of Server-Sent Events (the `text/event-stream` format of the WHATWG HTML standard,
// "Server-sent events", section "Parsing an event stream"): bytes in, dispatched events out. It keeps no more
// than the unfinished line and the event being built, so a chunk may end anywhere: inside a line, between the
// CR and LF of a line end, inside a multi-byte UTF-8 character (a streaming `TextDecoder` holds the partial
// bytes). Only platform APIs that Node and browsers share are used.

/** One dispatched event. */
export interface SseEvent {
  /** The event type: the last `event` field of the frame, `message` when it had none. */
  readonly type: string;
  /** The `data` fields of the frame joined with LF. */
  readonly data: string;
  /** The stream's last event id when the event was dispatched (it persists across frames). */
  readonly lastEventId: string;
  /** Whether this frame set the id itself (a valid `id` field in the frame), rather than inheriting it. */
  readonly ownId: boolean;
}

const LF = 10;
const CR = 13;

function isAsciiDigits(value: string): boolean {
  if (value.length === 0) {
    return false;
  }
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 48 || code > 57) {
      return false;
    }
  }
  return true;
}

/**
 * Parses one event stream. Feed it with {@link SseParser.push} (bytes) or {@link SseParser.pushText}
 * (already decoded text; do not mix the two on one parser), then call {@link SseParser.end} when the body
 * ended. An event is dispatched at the blank line that ends its frame; a frame the stream ends inside of is
 * discarded, as the standard says.
 */
export class SseParser {
  // A leading byte order mark is removed by the decoder (`ignoreBOM: false`), once, at the stream's start.
  private readonly decoder = new TextDecoder("utf-8", { ignoreBOM: false });
  /** The unfinished line (never contains CR or LF). */
  private line = "";
  /** The previous chunk ended with a CR: a LF at the start of the next one belongs to that line end. */
  private skipLf = false;
  private data = "";
  private hasData = false;
  private eventType = "";
  private ownId = false;
  private id = "";
  private reconnectionTime: number | undefined;
  private ended = false;

  /** The stream's last event id (the last valid `id` field seen). */
  get lastEventId(): string {
    return this.id;
  }

  /** The reconnection time in milliseconds the stream asked for with `retry`, if it did. */
  get retry(): number | undefined {
    return this.reconnectionTime;
  }

  /** Feeds bytes; returns the events they complete, in order. */
  push(chunk: Uint8Array): SseEvent[] {
    return this.pushText(this.decoder.decode(chunk, { stream: true }));
  }

  /** Feeds decoded text; returns the events it completes, in order. */
  pushText(text: string): SseEvent[] {
    if (this.ended) {
      throw new Error("the event stream already ended");
    }
    const events: SseEvent[] = [];
    let start = 0;
    if (this.skipLf && text.length > 0) {
      this.skipLf = false;
      if (text.charCodeAt(0) === LF) {
        start = 1;
      }
    }
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code !== LF && code !== CR) {
        continue;
      }
      const line = this.line + text.slice(start, i);
      this.line = "";
      if (code === CR) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === LF) {
            i++;
          }
        } else {
          this.skipLf = true;
        }
      }
      start = i + 1;
      const event = this.processLine(line);
      if (event !== undefined) {
        events.push(event);
      }
    }
    if (start < text.length) {
      this.line += text.slice(start);
    }
    return events;
  }

  /**
   * Ends the stream: flushes the decoder and discards the unfinished frame, if any (an event is only
   * dispatched by the blank line that ends it). Returns the events still complete (always none for a
   * well-formed end, kept for symmetry).
   */
  end(): SseEvent[] {
    const rest = this.decoder.decode();
    const events = rest.length > 0 ? this.pushText(rest) : [];
    this.ended = true;
    this.line = "";
    this.data = "";
    this.hasData = false;
    this.eventType = "";
    this.ownId = false;
    return events;
  }

  private processLine(line: string): SseEvent | undefined {
    if (line.length === 0) {
      return this.dispatch();
    }
    const colon = line.indexOf(":");
    if (colon === 0) {
      return undefined; // a comment
    }
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = "";
    } else {
      field = line.slice(0, colon);
      value = line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1);
    }
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.data += `${value}\n`;
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\u0000")) {
          this.id = value;
          this.ownId = true;
        }
        break;
      case "retry":
        if (isAsciiDigits(value)) {
          this.reconnectionTime = Number.parseInt(value, 10);
        }
        break;
      default:
        break; // unknown fields are ignored
    }
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    const hasData = this.hasData;
    const data = this.data;
    const type = this.eventType;
    const ownId = this.ownId;
    this.data = "";
    this.hasData = false;
    this.eventType = "";
    this.ownId = false;
    if (!hasData) {
      return undefined;
    }
    return {
      type: type.length > 0 ? type : "message",
      data: data.slice(0, -1),
      lastEventId: this.id,
      ownId,
    };
  }
}
