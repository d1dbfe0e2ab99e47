// The README's example is code that runs: its ```ts block under "## Example" is transpiled with
// TypeScript's transpileModule and run against the real server, with the SDK imported from this build.
// The one change made to it: the user's message gets the directives that make the fake model call the
// tool that needs approval (a real model would decide that by itself).

import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { draftsAgent, type Harness, harness } from "./helpers.js";

const README = new URL("../../../README.md", import.meta.url);
const SDK = new URL("../../src/index.js", import.meta.url);
const PROMPT = '"Archive my old drafts"';

let h: Harness;
before(async () => {
  h = await harness();
  await draftsAgent(h.tf, "helper");
});
after(() => h.stop());

function example(markdown: string): string {
  const section = markdown.split(/^## Example$/m)[1] ?? "";
  const match = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(match?.[1], "the README has a ```ts block under ## Example");
  return match[1];
}

test("the README example streams, approves, and resumes after a reload", async () => {
  const source = example(await readFile(README, "utf8"));
  const lines = source
    .trimEnd()
    .split("\n")
    .filter((line) => line.trim() !== "");
  assert.ok(lines.length <= 20, `the example is at most 20 lines (${lines.length})`);
  assert.equal(source.split(PROMPT).length, 2, "the prompt appears once");

  const steered = source
    .replace(PROMPT, '"Archive my old drafts #steps=1 #tool=archive_drafts"')
    .replace('from "@trueforge/sdk"', `from ${JSON.stringify(SDK.href)}`);
  const { outputText, diagnostics } = ts.transpileModule(steered, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    reportDiagnostics: true,
  });
  assert.deepEqual(diagnostics ?? [], []);

  const dir = await mkdtemp(join(tmpdir(), "trueforge-readme-"));
  const file = join(dir, "example.mjs");
  await writeFile(file, outputText);
  const printed: string[] = [];
  const write = process.stdout.write;
  const log = console.log;
  process.env.TRUEFORGE_URL = h.server.baseUrl;
  process.stdout.write = ((chunk: string | Uint8Array) => {
    printed.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  console.log = (...values: unknown[]) => {
    printed.push(`${values.join(" ")}\n`);
  };
  try {
    await import(pathToFileURL(file).href);
  } finally {
    process.stdout.write = write;
    console.log = log;
    delete process.env.TRUEFORGE_URL;
    await rm(dir, { recursive: true, force: true });
  }
  const output = printed.join("");
  assert.match(output, /\[tool\] Archived 3 drafts\./, output);

  // The approval was for the session: the example's session now runs the tool without asking.
  const sessions = await h.tf.sessions.list({ limit: 1 });
  const sessionId = sessions.data[0]?.id ?? "";
  const outcome = await h.tf.turns.run(
    sessionId,
    { input: [{ type: "user.message", content: "again #steps=1 #tool=archive_drafts" }] },
    { intervalMs: 20 },
  );
  assert.equal(outcome.status, "done");
});
