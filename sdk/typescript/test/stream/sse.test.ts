// The SSE parser, rule by rule (WHATWG HTML, "Parsing an event stream"), and a sample stream fed in two and
// three pieces split at every position.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type SseEvent, SseParser } from "../../src/sse.js";

const encoder = new TextEncoder();

function parseAll(text: string): SseEvent[] {
  const parser = new SseParser();
  return [...parser.push(encoder.encode(text)), ...parser.end()];
}

function parseBytes(chunks: Uint8Array[]): { events: SseEvent[]; parser: SseParser } {
  const parser = new SseParser();
  const events: SseEvent[] = [];
  for (const chunk of chunks) {
    events.push(...parser.push(chunk));
  }
  events.push(...parser.end());
  return { events, parser };
}

function message(data: string, lastEventId = "", ownId = false, type = "message"): SseEvent {
  return { type, data, lastEventId, ownId };
}

describe("SseParser rules", () => {
  test("LF, CRLF and CR all end lines, mixed in one stream", () => {
    const events = parseAll("data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\r\n");
    assert.deepEqual(
      events.map((e) => e.data),
      ["a", "b", "c", "d"],
    );
  });

  test("several data lines are joined with LF; the trailing LF is removed", () => {
    assert.deepEqual(parseAll("data: one\ndata: two\ndata\ndata:  three\n\n"), [
      message("one\ntwo\n\n three"),
    ]);
  });

  test("one space after the colon is removed, no more; a field without colon has an empty value", () => {
    assert.deepEqual(parseAll("data:x\n\ndata:  y\n\ndata\n\n"), [message("x"), message(" y"), message("")]);
  });

  test("comments are ignored, even between the lines of a frame", () => {
    assert.deepEqual(parseAll(": hello\ndata: a\n:keep-alive\ndata: b\n\n:only a comment\n\n"), [
      message("a\nb"),
    ]);
  });

  test("a frame without data is not dispatched, and resets the event type", () => {
    assert.deepEqual(parseAll("event: ping\n\nid: 4\n\ndata: x\n\n"), [message("x", "4")]);
  });

  test("event sets the type of its frame only", () => {
    assert.deepEqual(parseAll("event: custom\ndata: a\n\ndata: b\n\n"), [
      message("a", "", false, "custom"),
      message("b"),
    ]);
  });

  test("the id persists across frames; ownId tells whether the frame set it", () => {
    assert.deepEqual(parseAll("id: 1\ndata: a\n\ndata: b\n\ndata: c\nid: 3\n\nid\ndata: d\n\n"), [
      message("a", "1", true),
      message("b", "1", false),
      message("c", "3", true),
      message("d", "", true),
    ]);
  });

  test("an id containing NUL is ignored", () => {
    const parser = new SseParser();
    const events = parser.push(encoder.encode("id: 7\ndata: a\n\nid: 8\u00009\ndata: b\n\n"));
    assert.deepEqual(events, [message("a", "7", true), message("b", "7", false)]);
    assert.equal(parser.lastEventId, "7");
  });

  test("retry is taken only when it is all ASCII digits", () => {
    const parser = new SseParser();
    parser.push(encoder.encode("retry: 1500\n\n"));
    assert.equal(parser.retry, 1500);
    for (const bad of [
      "retry: 15s",
      "retry: -3",
      "retry: 1.5",
      "retry:",
      "retry: ",
      "retry:  20",
      "retry: ١٢",
    ]) {
      parser.push(encoder.encode(`${bad}\n\n`));
      assert.equal(parser.retry, 1500, bad);
    }
    parser.push(encoder.encode("retry:0\n"));
    assert.equal(parser.retry, 0);
  });

  test("unknown fields are ignored; field names are case sensitive", () => {
    assert.deepEqual(parseAll("foo: bar\nDATA: no\nData: no\ndata: yes\n\n"), [message("yes")]);
  });

  test("a leading BOM is removed, once, even split across chunks; a second one stays", () => {
    const bytes = encoder.encode("\uFEFFdata: a\n\n");
    assert.equal(bytes[0], 0xef);
    assert.deepEqual(parseBytes([bytes.slice(0, 1), bytes.slice(1, 2), bytes.slice(2)]).events, [
      message("a"),
    ]);
    const twice = encoder.encode("\uFEFF\uFEFFdata: a\n\n\uFEFFdata: b\n\n");
    // The second BOM makes the first line's field name "\uFEFFdata": an unknown field.
    assert.deepEqual(parseBytes([twice]).events, []);
  });

  test("a BOM later in the stream is content", () => {
    assert.deepEqual(parseAll("data: a\n\ndata: \uFEFFb\n\n"), [message("a"), message("\uFEFFb")]);
  });

  test("an unfinished frame at the end is discarded", () => {
    assert.deepEqual(parseAll("data: a\n\ndata: b\n"), [message("a")]);
    assert.deepEqual(parseAll("data: a\n\ndata: b"), [message("a")]);
  });

  test("a CRLF split between chunks is one line end, not two", () => {
    const { events } = parseBytes([
      encoder.encode("data: a\r"),
      encoder.encode("\ndata: b\r"),
      encoder.encode("\n\r\n"),
    ]);
    assert.deepEqual(events, [message("a\nb")]);
  });

  test("a CR at a chunk's end followed by an empty chunk then LF", () => {
    const { events } = parseBytes([encoder.encode("data: a\r"), new Uint8Array(0), encoder.encode("\n\r\n")]);
    assert.deepEqual(events, [message("a")]);
  });

  test("a multi-byte character split between chunks is decoded whole; invalid bytes become U+FFFD", () => {
    const bytes = encoder.encode("data: 日本✓😀\n\n");
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.deepEqual(parseBytes([bytes.slice(0, cut), bytes.slice(cut)]).events, [message("日本✓😀")]);
    }
    assert.deepEqual(parseBytes([new Uint8Array([0x64, 0x61, 0x74, 0x61, 0x3a, 0xff, 0x0a, 0x0a])]).events, [
      message("\uFFFD"),
    ]);
  });

  test("pushing after end is refused", () => {
    const parser = new SseParser();
    parser.end();
    assert.throws(() => parser.push(new Uint8Array([0x0a])));
  });
});

describe("SseParser split anywhere", () => {
  const sample =
    "\uFEFF: a comment\r\n" +
    "retry: 300\r\n" +
    'data: {"type":"turn.created","text":"héllo ✓ 日本 😀"}\r\n' +
    "id: 1\r\n" +
    "\r\n" +
    "event: other\rdata: line one\rdata: line two\rid: 2\r\r" +
    "data: no id here\n\n" +
    "id: 3\ndata\n\n" +
    "data:  spaced\r\nid: 4\u00005\n\r\n";
  const bytes = encoder.encode(sample);
  const expected: SseEvent[] = [
    message('{"type":"turn.created","text":"héllo ✓ 日本 😀"}', "1", true),
    message("line one\nline two", "2", true, "other"),
    message("no id here", "2", false),
    message("", "3", true),
    message(" spaced", "3", false),
  ];

  test("the whole sample in one chunk", () => {
    const { events, parser } = parseBytes([bytes]);
    assert.deepEqual(events, expected);
    assert.equal(parser.retry, 300);
    assert.equal(parser.lastEventId, "3");
  });

  test("every split into two chunks", () => {
    for (let cut = 0; cut <= bytes.length; cut++) {
      const { events, parser } = parseBytes([bytes.slice(0, cut), bytes.slice(cut)]);
      assert.deepEqual(events, expected, `split at byte ${cut}`);
      assert.equal(parser.retry, 300);
    }
  });

  test("every split into three chunks", () => {
    for (let a = 0; a <= bytes.length; a++) {
      for (let b = a; b <= bytes.length; b++) {
        const { events } = parseBytes([bytes.slice(0, a), bytes.slice(a, b), bytes.slice(b)]);
        assert.deepEqual(events, expected, `split at bytes ${a} and ${b}`);
      }
    }
  });

  test("one byte at a time", () => {
    const chunks = Array.from(bytes, (byte) => new Uint8Array([byte]));
    assert.deepEqual(parseBytes(chunks).events, expected);
  });

  test("text fed at every split gives the same events", () => {
    const text = sample.slice(1); // pushText takes decoded text: no BOM handling there
    for (let cut = 0; cut <= text.length; cut++) {
      const parser = new SseParser();
      const events = [
        ...parser.pushText(text.slice(0, cut)),
        ...parser.pushText(text.slice(cut)),
        ...parser.end(),
      ];
      assert.deepEqual(events, expected, `split at char ${cut}`);
    }
  });
});
