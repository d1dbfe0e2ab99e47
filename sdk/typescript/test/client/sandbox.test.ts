// The sandbox against the real server, its local (bubblewrap) sandbox and the fake model calling `exec`:
// files sent with a message land in /workspace/uploads, what the server would refuse is refused by the
// helpers first (and the server refuses it too when built by hand), artifacts download byte for byte, every
// refused download surfaces with its status, and exec results read from real `tool.response` events.

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import {
  type Capabilities,
  checkFileParts,
  type ExecCall,
  type ExecResult,
  execCallsOf,
  type FileContentPart,
  filePart,
  parseExecResult,
  parseSandboxArtifacts,
  type StoredEvent,
  TrueForgeApiError,
  TrueForgeFileError,
  type TurnEvent,
  type UserMessageContentItem,
} from "../../src/index.js";
import { FAKE_MODEL, type Harness, harness } from "./helpers.js";

/** The server's limits in this file: small enough to cross, large enough for a saved large result. */
const FILE_LIMIT = 256 * 1024;
const BODY_LIMIT = 1024 * 1024;

let h: Harness;
let caps: Capabilities;
before(async () => {
  h = await harness({
    SANDBOX_FILE_MAX_BYTES_FOR_DOWNLOAD: String(FILE_LIMIT),
    MAX_REQUEST_BODY_BYTES: String(BODY_LIMIT),
  });
  caps = await h.tf.capabilities();
});
after(() => h.stop());

async function sandboxSession(): Promise<string> {
  const session = await h.tf.sessions.create({
    agent: { spec: { model: { name: FAKE_MODEL }, config: { sandbox: { enabled: true } } } },
  });
  return session.id;
}

async function plainSession(): Promise<string> {
  return (await h.tf.sessions.create({ agent: { spec: { model: { name: FAKE_MODEL } } } })).id;
}

/** The directives that make the fake model call `exec` once with `command` (spaces as `\u0020`). */
function execDirectives(command: string, extra: Record<string, unknown> = {}): string {
  const args = JSON.stringify({ intent: "test", command, ...extra }).replace(/ /g, "\\u0020");
  return `#steps=1 #tool=exec #args=${args}`;
}

function text(value: string): UserMessageContentItem {
  return { type: "text", text: value };
}

async function allEvents(sessionId: string, turnId: string): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for await (const page of h.tf.turns.eventPages(sessionId, turnId)) {
    events.push(...page.data);
  }
  return events;
}

/** Runs a turn of one message to its end; answers the turn id, its events and its exec calls. */
async function runMessage(sessionId: string, content: string | UserMessageContentItem[]) {
  const outcome = await h.tf.turns.run(
    sessionId,
    { input: [{ type: "user.message", content }] },
    { intervalMs: 20 },
  );
  assert.equal(outcome.status, "done", outcome.status === "failed" ? outcome.message : outcome.status);
  const events = await allEvents(sessionId, outcome.turn.id);
  const answer = outcome.status === "done" ? outcome.output?.content : undefined;
  return {
    turnId: outcome.turn.id,
    events,
    calls: execCallsOf(events),
    answer: typeof answer === "string" ? answer : "",
  };
}

/** The one exec call's result, asserted present. */
function onlyResult(calls: ExecCall[]): ExecResult {
  assert.equal(calls.length, 1, JSON.stringify(calls));
  const result = calls[0]?.result;
  assert.ok(result, "the call has its result");
  return result;
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** A hand-built file part (no helper involved). */
function handPart(name: string, mediaType: string, bytes: Uint8Array): FileContentPart {
  return { type: "file", name, data: `data:${mediaType};base64,${Buffer.from(bytes).toString("base64")}` };
}

function isFileError(
  code: TrueForgeFileError["code"],
  check: (error: TrueForgeFileError) => void = () => {},
) {
  return (error: unknown) => {
    assert.ok(error instanceof TrueForgeFileError, String(error));
    assert.equal(error.code, code, error.message);
    check(error);
    return true;
  };
}

function isApiError(status: number, message?: RegExp) {
  return (error: unknown) => {
    assert.ok(error instanceof TrueForgeApiError, String(error));
    assert.equal(error.status, status, error.message);
    assert.ok(error.error?.message, "the server's message");
    if (message) {
      assert.match(error.error.message, message);
    }
    return true;
  };
}

const CSV = "region,total\nnorth,12\nsouth,30\n";

describe("sandbox: files sent with a message", () => {
  test("the capabilities report the sandbox and this server's limits", () => {
    assert.equal(caps.sandbox.enabled, true, caps.sandbox.reason);
    assert.deepEqual(caps.limits, { max_request_body_bytes: BODY_LIMIT, max_sandbox_file_bytes: FILE_LIMIT });
  });

  test("a CSV built with filePart lands in /workspace/uploads; exec cat shows it", async () => {
    const sessionId = await sandboxSession();
    const part = await filePart(new TextEncoder().encode(CSV), "sales.csv", {
      mediaType: "text/csv",
      server: caps,
      sandbox: true,
    });
    assert.equal(part.data, `data:text/csv;base64,${Buffer.from(CSV).toString("base64")}`);
    const content = [text(`what is in it? ${execDirectives("cat /workspace/uploads/sales.csv")}`), part];
    const size = checkFileParts(content, { server: caps, sandbox: true });
    assert.ok(size > part.data.length && size < BODY_LIMIT, String(size));

    const run = await runMessage(sessionId, content);
    assert.ok(
      run.events.some((event) => event.type === "sandbox.created"),
      "the turn made the sandbox",
    );
    assert.equal(run.calls[0]?.arguments?.command, "cat /workspace/uploads/sales.csv");
    assert.deepEqual(onlyResult(run.calls), { kind: "exited", exitCode: 0, output: CSV });
    assert.equal(run.answer, "Done after 1 tool results.");
  });

  test("a file of exactly max_sandbox_file_bytes lands whole; one byte more is refused before any request", async () => {
    const sessionId = await sandboxSession();
    const edge = randomBytes(FILE_LIMIT);
    const part = await filePart(edge, "edge.bin", { server: caps });
    assert.ok(part.data.startsWith("data:application/octet-stream;base64,"));
    const run = await runMessage(sessionId, [
      text(execDirectives("wc -c < uploads/edge.bin && sha256sum uploads/edge.bin")),
      part,
    ]);
    const result = onlyResult(run.calls);
    assert.ok(result.kind === "exited", JSON.stringify(result));
    assert.equal(result.output, `${FILE_LIMIT}\n${sha256(edge)}  uploads/edge.bin\n`);

    // One byte more: the helper refuses it with the numbers, before reading or encoding it.
    const over = randomBytes(FILE_LIMIT + 1);
    await assert.rejects(
      filePart(over, "over.bin", { server: caps }),
      isFileError("file_too_large", (error) => {
        assert.equal(error.file, "over.bin");
        assert.equal(error.size, FILE_LIMIT + 1);
        assert.equal(error.limit, FILE_LIMIT);
      }),
    );
    // Built by hand: checkFileParts refuses it too, and so does the server.
    const hand = handPart("over.bin", "application/octet-stream", over);
    assert.throws(
      () => checkFileParts([hand], { server: caps }),
      isFileError("file_too_large", (error) => assert.equal(error.size, FILE_LIMIT + 1)),
    );
    await assert.rejects(
      h.tf.turns.create(sessionId, { input: [{ type: "user.message", content: [hand] }] }),
      isApiError(422, /too large/),
    );
  });

  test("parts whose request would pass max_request_body_bytes are refused (the server answers 413)", async () => {
    const sessionId = await sandboxSession();
    // An image goes to the model, not the sandbox: only the request's size limits it.
    const image = randomBytes(Math.ceil((BODY_LIMIT * 3) / 4));
    await assert.rejects(
      filePart(image, "photo.png", { mediaType: "image/png", server: caps }),
      isFileError("request_too_large", (error) => {
        assert.equal(error.limit, BODY_LIMIT);
        assert.ok((error.size ?? 0) > BODY_LIMIT, String(error.size));
      }),
    );
    // Two parts each under the limit, together over it.
    const half = randomBytes(Math.floor(BODY_LIMIT / 2));
    const first = await filePart(half, "a.png", { mediaType: "image/png", server: caps });
    const second = await filePart(half, "b.png", { mediaType: "image/png", server: caps });
    assert.throws(
      () => checkFileParts([first, second], { server: caps }),
      isFileError("request_too_large", (error) => {
        assert.equal(error.file, undefined);
        assert.ok((error.size ?? 0) > BODY_LIMIT);
      }),
    );
    await assert.rejects(
      h.tf.turns.create(sessionId, { input: [{ type: "user.message", content: [first, second] }] }),
      isApiError(413),
    );
  });

  test("a CSV for an agent without a sandbox: refused by the helper and by the server (422)", async () => {
    const sessionId = await plainSession();
    await assert.rejects(
      filePart(new TextEncoder().encode(CSV), "sales.csv", {
        mediaType: "text/csv",
        server: caps,
        sandbox: false,
      }),
      isFileError("sandbox_required", (error) => assert.match(error.message, /no sandbox/)),
    );
    const hand = handPart("sales.csv", "text/csv", new TextEncoder().encode(CSV));
    assert.throws(() => checkFileParts([hand], { sandbox: false }), isFileError("sandbox_required"));
    await assert.rejects(
      h.tf.turns.create(sessionId, { input: [{ type: "user.message", content: [hand] }] }),
      isApiError(422, /needs a sandbox/),
    );

    // An image needs no sandbox: the helper and the server take it.
    const png = await filePart(randomBytes(64), "dot.png", {
      mediaType: "image/png",
      server: caps,
      sandbox: false,
    });
    const run = await runMessage(sessionId, [text("look"), png]);
    assert.equal(run.calls.length, 0);
  });

  test("a name that is not a plain file name: refused by the helper, and by the server when built by hand", async () => {
    const sessionId = await sandboxSession();
    for (const name of ["../escape.csv", "dir/a.csv", "..", ".", "", "a\\b.csv", "tab\t.csv"]) {
      await assert.rejects(
        filePart(new Uint8Array([1]), name, { mediaType: "text/csv" }),
        isFileError("invalid_name", (error) => assert.equal(error.file, name)),
        JSON.stringify(name),
      );
    }
    for (const name of ["../escape.csv", "dir/a.csv"]) {
      const hand = handPart(name, "text/csv", new TextEncoder().encode(CSV));
      assert.throws(() => checkFileParts([hand]), isFileError("invalid_name"));
      await assert.rejects(
        h.tf.turns.create(sessionId, { input: [{ type: "user.message", content: [hand] }] }),
        isApiError(422, /plain file name/),
        name,
      );
    }
  });

  test("a server whose sandbox is off: the capabilities say so and the helper refuses sandbox files", async () => {
    const off = await harness({ TRUEFORGE_SANDBOX: "off" });
    try {
      const offCaps = await off.tf.capabilities();
      assert.equal(offCaps.sandbox.enabled, false);
      assert.ok(offCaps.sandbox.reason, "the capabilities say why");
      await assert.rejects(
        filePart(new TextEncoder().encode(CSV), "sales.csv", { mediaType: "text/csv", server: offCaps }),
        isFileError("sandbox_required", (error) =>
          assert.ok(error.message.includes(offCaps.sandbox.reason ?? "")),
        ),
      );
      // `sandbox: true` cannot override a server without one.
      const hand = handPart("sales.csv", "text/csv", new TextEncoder().encode(CSV));
      assert.throws(
        () => checkFileParts([hand], { server: offCaps, sandbox: true }),
        isFileError("sandbox_required"),
      );
      const session = await off.tf.sessions.create({ agent: { spec: { model: { name: FAKE_MODEL } } } });
      await assert.rejects(
        off.tf.turns.create(session.id, { input: [{ type: "user.message", content: [hand] }] }),
        isApiError(422, /needs a sandbox/),
      );
    } finally {
      await off.stop();
    }
  });
});

describe("sandbox: artifacts and downloads", () => {
  let sessionId: string;
  let turnId: string;
  let answer: string;
  const blob = randomBytes(3000);
  const report = "a,b\n1,2\n";

  before(async () => {
    sessionId = await sandboxSession();
    const command =
      "mkdir -p out && cp uploads/blob.bin out/blob.bin && printf 'a,b\\n1,2\\n' > out/report.csv " +
      "&& head -c 300000 /dev/zero > out/big.bin";
    const fence =
      "```sandbox_artifacts\n[Blob](/workspace/out/blob.bin)\n- [Report](/workspace/out/report.csv)\n```";
    // `#echo` after the tool step: the answer is the message's text, fence included.
    const run = await runMessage(sessionId, [
      text(`${execDirectives(command)} #echo\n\nHere are your files:\n${fence}\n`),
      await filePart(blob, "blob.bin", { server: caps }),
    ]);
    assert.deepEqual(onlyResult(run.calls), { kind: "exited", exitCode: 0, output: "" });
    turnId = run.turnId;
    answer = run.answer;
  });

  test("the answer's sandbox_artifacts fence lists the files; each downloads byte for byte", async () => {
    const artifacts = parseSandboxArtifacts(answer);
    assert.deepEqual(artifacts, [
      { label: "Blob", path: "/workspace/out/blob.bin" },
      { label: "Report", path: "/workspace/out/report.csv" },
    ]);
    const [blobArtifact, reportArtifact] = artifacts;
    assert.ok(blobArtifact && reportArtifact);
    const file = await h.tf.turns.readSandboxFile(sessionId, turnId, blobArtifact, { maxBytes: FILE_LIMIT });
    assert.equal(file.name, "blob.bin");
    assert.equal(file.path, "/workspace/out/blob.bin");
    assert.equal(sha256(file.bytes), sha256(blob));
    assert.deepEqual(Buffer.from(file.bytes), blob);
    const csv = await h.tf.turns.readSandboxFile(sessionId, turnId, reportArtifact.path);
    assert.equal(new TextDecoder().decode(csv.bytes), report);

    // The raw download, as a Response.
    const response = await h.tf.turns.downloadSandboxFile(sessionId, turnId, blobArtifact.path);
    assert.deepEqual(Buffer.from(await response.arrayBuffer()), blob);
  });

  test("readSandboxFile stops at its own limit with a typed error", async () => {
    await assert.rejects(
      h.tf.turns.readSandboxFile(sessionId, turnId, "/workspace/out/blob.bin", { maxBytes: 1000 }),
      isFileError("file_too_large", (error) => {
        assert.equal(error.file, "/workspace/out/blob.bin");
        assert.equal(error.limit, 1000);
        assert.ok((error.size ?? 0) > 1000, String(error.size));
      }),
    );
    // Exactly the limit is read whole.
    const exact = await h.tf.turns.readSandboxFile(sessionId, turnId, "/workspace/out/blob.bin", {
      maxBytes: blob.length,
    });
    assert.equal(exact.bytes.length, blob.length);
  });

  test("refused downloads: 404 missing, 400 directory or bad path, 413 over the server's limit, 412 no sandbox", async () => {
    const cases: [string, number][] = [
      ["/workspace/missing.txt", 404],
      ["/workspace/out", 400],
      ["workspace/out/report.csv", 400],
      ["/workspace/../etc/passwd", 400],
      ["/workspace/out/big.bin", 413],
    ];
    for (const [path, status] of cases) {
      await assert.rejects(h.tf.turns.downloadSandboxFile(sessionId, turnId, path), isApiError(status), path);
    }
    // readSandboxFile surfaces the same errors.
    await assert.rejects(
      h.tf.turns.readSandboxFile(sessionId, turnId, "/workspace/missing.txt"),
      isApiError(404),
    );

    const plain = await plainSession();
    const run = await runMessage(plain, "hello");
    await assert.rejects(
      h.tf.turns.downloadSandboxFile(plain, run.turnId, "/workspace/out/report.csv"),
      isApiError(412),
    );
    // The sandbox turn's id with another session: no such turn there.
    await assert.rejects(
      h.tf.turns.downloadSandboxFile(plain, turnId, "/workspace/out/report.csv"),
      isApiError(404),
    );
  });
});

describe("sandbox: exec results from real tool.response events", () => {
  let sessionId: string;
  before(async () => {
    sessionId = await sandboxSession();
  });

  test("a non-zero exit is a result with its code", async () => {
    const run = await runMessage(sessionId, execDirectives("echo oops && exit 3"));
    assert.deepEqual(onlyResult(run.calls), { kind: "exited", exitCode: 3, output: "oops\n" });
  });

  test("a command that cannot run is an error with the tool's reason", async () => {
    const run = await runMessage(sessionId, execDirectives("true", { env: { "1A": "x" } }));
    const result = onlyResult(run.calls);
    assert.ok(result.kind === "error", JSON.stringify(result));
    assert.match(result.error, /not a valid variable name/);
    assert.deepEqual(run.calls[0]?.arguments?.env, { "1A": "x" });
  });

  test("a large result is a preview with the saved path; the saved file parses to the whole result", async () => {
    const run = await runMessage(sessionId, execDirectives(`python3 -c "print('row,' * 30000)"`));
    const result = onlyResult(run.calls);
    assert.ok(result.kind === "preview", JSON.stringify(result).slice(0, 300));
    assert.ok(result.savedPath?.startsWith("/workspace/"), result.savedPath);
    assert.equal(result.exitCode, 0);
    assert.ok(result.text.length < 20_000, "the model got a preview");
    const saved = await h.tf.turns.readSandboxFile(sessionId, run.turnId, result.savedPath ?? "", {
      maxBytes: FILE_LIMIT,
    });
    assert.equal(saved.bytes.length, result.savedBytes);
    const whole = parseExecResult(new TextDecoder().decode(saved.bytes));
    assert.deepEqual(whole, { kind: "exited", exitCode: 0, output: `${"row,".repeat(30000)}\n` });
  });

  test("stream frames read the same as stored events", async () => {
    const stream = await h.tf.turns.stream(sessionId, {
      input: [{ type: "user.message", content: execDirectives("printf hi") }],
    });
    const frames: { seq: number; event: TurnEvent }[] = [];
    for await (const frame of stream) {
      frames.push(frame);
    }
    const fromFrames = execCallsOf(frames);
    assert.deepEqual(onlyResult(fromFrames), { kind: "exited", exitCode: 0, output: "hi" });
    const stored = execCallsOf(await allEvents(sessionId, stream.turnId ?? ""));
    assert.deepEqual(
      stored.map((call) => [call.toolCallId, call.result]),
      fromFrames.map((call) => [call.toolCallId, call.result]),
    );
  });
});

describe("the README's Sandbox example", () => {
  const README = new URL("../../../README.md", import.meta.url);
  const SDK = new URL("../../src/index.js", import.meta.url);
  const PROMPT = '"Total the sales per region"';

  test("sends the CSV, prints the command's output and downloads the listed file", async () => {
    await h.tf.agents.create({
      name: "analyst",
      manifest: { model: { name: FAKE_MODEL }, config: { sandbox: { enabled: true } } },
    });
    const markdown = await readFile(README, "utf8");
    const section = markdown.split(/^## Sandbox$/m)[1] ?? "";
    const source = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(source, "the README has a ```ts block under ## Sandbox");
    assert.equal(source.split(PROMPT).length, 2, "the prompt appears once");
    // What a real model would decide by itself: run a command, then list the file it wrote.
    const steered = `Total the sales per region ${execDirectives("tail -n +2 uploads/sales.csv > totals.csv && cat totals.csv")} #echo
\`\`\`sandbox_artifacts
[Totals](/workspace/totals.csv)
\`\`\``;
    const program = source
      .replace(PROMPT, JSON.stringify(steered))
      .replace('from "@trueforge/sdk"', `from ${JSON.stringify(SDK.href)}`);
    const { outputText, diagnostics } = ts.transpileModule(program, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      reportDiagnostics: true,
    });
    assert.deepEqual(diagnostics ?? [], []);

    const dir = await mkdtemp(join(tmpdir(), "trueforge-readme-sandbox-"));
    const file = join(dir, "example.mjs");
    await writeFile(file, outputText);
    const printed: string[] = [];
    const log = console.log;
    process.env.TRUEFORGE_URL = h.server.baseUrl;
    console.log = (...values: unknown[]) => {
      printed.push(`${values.map(String).join(" ")}\n`);
    };
    try {
      await import(pathToFileURL(file).href);
    } finally {
      console.log = log;
      delete process.env.TRUEFORGE_URL;
      await rm(dir, { recursive: true, force: true });
    }
    assert.deepEqual(printed, [
      "tail -n +2 uploads/sales.csv > totals.csv && cat totals.csv north,12\nsouth,30\n\n",
      "Totals: totals.csv, 18 bytes\n",
    ]);
  });
});
