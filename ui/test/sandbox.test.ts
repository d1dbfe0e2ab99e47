// The sandbox parts of the UI without a browser: reading `exec` calls and responses, cutting long outputs,
// and the composer's rules for attachments (which files a chat takes, their limits, safe names).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseExecCall, parseExecResult, shortenOutput } from "../src/atoms/exec-format.js";
import {
  attachmentPolicy,
  fileProblem,
  goesInline,
  readCapabilities,
  safeFileName,
  uniqueFileNames,
} from "../src/containers/attachments.js";

describe("exec", () => {
  test("a call's intent, command, cwd and env", () => {
    assert.deepEqual(
      parseExecCall(
        JSON.stringify({ intent: "List", command: "ls -la", cwd: "/workspace", env: { A: "1" } }),
      ),
      { intent: "List", command: "ls -la", cwd: "/workspace", env: { A: "1" } },
    );
    // Arguments still streaming (not JSON yet) and a call without an intent.
    assert.deepEqual(parseExecCall('{"command":"ec'), { intent: null, command: "…", cwd: null, env: {} });
    assert.equal(parseExecCall('{"command":"pwd"}').intent, null);
  });

  test("a response: ran (with its exit code), failed, or text that is not the tool's JSON", () => {
    assert.deepEqual(parseExecResult('{"success":true,"response":{"exitCode":0,"result":"hi\\n"}}'), {
      kind: "ran",
      exitCode: 0,
      output: "hi\n",
    });
    assert.deepEqual(parseExecResult('{"success":true,"response":{"exitCode":2,"result":""}}'), {
      kind: "ran",
      exitCode: 2,
      output: "",
    });
    assert.deepEqual(parseExecResult('{"success":false,"error":"no sandbox"}'), {
      kind: "failed",
      error: "no sandbox",
    });
    assert.deepEqual(parseExecResult("[truncated] …"), { kind: "raw", text: "[truncated] …" });
    assert.deepEqual(parseExecResult('{"other":1}'), { kind: "raw", text: '{"other":1}' });
  });

  test("a short output is whole; a long one keeps its head and tail", () => {
    assert.deepEqual(shortenOutput("a\nb"), { head: "a\nb", tail: "", hiddenLines: 0, hiddenChars: 0 });
    const lines = Array.from({ length: 500 }, (_, index) => String(index + 1));
    const shown = shortenOutput(lines.join("\n"));
    assert.equal(shown.head, lines.slice(0, 30).join("\n"));
    assert.equal(shown.tail, lines.slice(-20).join("\n"));
    assert.equal(shown.hiddenLines, 450);
    // One enormous line is cut by characters.
    const wide = shortenOutput("x".repeat(100_000));
    assert.equal(wide.head.length, 4_000);
    assert.ok(wide.hiddenChars > 90_000);
  });
});

describe("attachments", () => {
  const csv = { name: "a.csv", type: "text/csv", size: 10 };
  const png = { name: "a.png", type: "image/png", size: 10 };
  const pdf = { name: "a.pdf", type: "application/pdf", size: 10 };

  test("images and PDFs go inline; other files need the sandbox", () => {
    assert.ok(goesInline(png));
    assert.ok(goesInline(pdf));
    assert.ok(!goesInline(csv));
    assert.ok(!goesInline({ type: "" }));
  });

  test("the policy: any file with a sandbox the server runs, else images and PDFs with the reason", () => {
    const on = readCapabilities({
      sandbox: { enabled: true },
      skill: { enabled: true },
      settings: { enabled: true },
      limits: { max_request_body_bytes: 1000, max_sandbox_file_bytes: 100 },
    });
    assert.deepEqual(on, { sandbox: { enabled: true }, maxRequestBodyBytes: 1000, maxSandboxFileBytes: 100 });
    assert.deepEqual(attachmentPolicy(on, true), { anyFile: true, maxSandboxFileBytes: 100 });
    assert.equal(attachmentPolicy(on, false).anyFile, false);
    assert.match(attachmentPolicy(on, false).reason ?? "", /this chat's agent has none/);
    // Not known yet: any file for now, checked once it is known.
    assert.equal(attachmentPolicy(on, undefined).pending, true);
    assert.equal(fileProblem(csv, attachmentPolicy(on, undefined)), null);
    const off = readCapabilities({
      sandbox: { enabled: false, reason: "bubblewrap is not installed" },
      skill: { enabled: true },
      settings: { enabled: true },
    });
    assert.match(attachmentPolicy(off, true).reason ?? "", /runs none: bubblewrap is not installed/);
  });

  test("each file is checked: its type without a sandbox, its size against the sandbox's limit", () => {
    const none = { anyFile: false, reason: "No sandbox." };
    assert.equal(fileProblem(png, none), null);
    assert.equal(fileProblem(csv, none), "a.csv: only images and PDFs can be attached here. No sandbox.");
    const sandbox = { anyFile: true, maxSandboxFileBytes: 64 * 1024 };
    assert.equal(fileProblem({ ...csv, size: 64 * 1024 }, sandbox), null);
    assert.equal(
      fileProblem({ ...csv, size: 64 * 1024 + 1 }, sandbox),
      "a.csv is too large: 65,537 bytes, and the sandbox takes files of at most 65,536 bytes.",
    );
    assert.equal(
      fileProblem({ ...csv, size: 3 * 1024 * 1024 }, sandbox),
      "a.csv is too large: 3.0 MiB, and the sandbox takes files of at most 64.0 KiB.",
    );
    // An image is not the sandbox's: only the whole request's limit applies to it.
    assert.equal(fileProblem({ ...png, size: 3 * 1024 * 1024 }, sandbox), null);
  });

  test("names are plain file names, unique in a message", () => {
    assert.equal(safeFileName("report.csv"), "report.csv");
    assert.equal(safeFileName("../etc/passwd"), ".._etc_passwd");
    assert.equal(safeFileName("a\\b/c.txt"), "a_b_c.txt");
    assert.equal(safeFileName(".."), "file");
    assert.equal(safeFileName("  "), "file");
    assert.equal(safeFileName("tab\there"), "tab_here");
    const long = safeFileName(`${"n".repeat(300)}.csv`);
    assert.equal(long.length, 200);
    assert.ok(long.endsWith(".csv"));
    assert.deepEqual(uniqueFileNames(["a.csv", "A.csv", "a.csv", "b"]), [
      "a.csv",
      "A (2).csv",
      "a (3).csv",
      "b",
    ]);
  });
});
