// The sandbox_artifacts fences of an answer, and reading a download with a size limit (on hand-made
// responses; the real server's downloads are in test/client/sandbox.test.ts).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  isSandboxPath,
  parseSandboxArtifacts,
  readLimitedBody,
  TrueForge,
  TrueForgeAbortError,
  TrueForgeApiError,
  TrueForgeConnectionError,
  TrueForgeFileError,
} from "../../src/index.js";

describe("parseSandboxArtifacts", () => {
  test("the links of every sandbox_artifacts fence, in order, each path once", () => {
    const answer = [
      "Here is the report.",
      "",
      "```sandbox_artifacts",
      "[Report](/workspace/out/report.csv)",
      "- [Chart](/workspace/out/chart.png)",
      "* [Spaced name](</workspace/out/my file.txt>)",
      "1. [Paren](/workspace/out/a(1).csv)",
      "[](/workspace/out/unnamed.bin)",
      "Notes: /workspace/notes.md",
      "",
      "not a link",
      "```",
      "",
      "```python",
      "[Ignored](/workspace/ignored.py)",
      "```",
      "",
      "~~~~ sandbox_artifacts",
      "[Report again](/workspace/out/report.csv)",
      "```",
      "[Inside tildes](/workspace/tilde.txt)",
      "~~~~",
      "[Outside](/workspace/outside.txt)",
    ].join("\n");
    assert.deepEqual(parseSandboxArtifacts(answer), [
      { label: "Report", path: "/workspace/out/report.csv" },
      { label: "Chart", path: "/workspace/out/chart.png" },
      { label: "Spaced name", path: "/workspace/out/my file.txt" },
      { label: "Paren", path: "/workspace/out/a(1).csv" },
      { label: "unnamed.bin", path: "/workspace/out/unnamed.bin" },
      { label: "Notes", path: "/workspace/notes.md" },
      { label: "Inside tildes", path: "/workspace/tilde.txt" },
    ]);
  });

  test("relative paths and paths the server refuses are left out", () => {
    const answer = [
      "```sandbox_artifacts",
      "[Relative](out/report.csv)",
      "[Dot](./report.csv)",
      "[Up](/workspace/../etc/passwd)",
      "[Here](/workspace/./a.csv)",
      "[Url](https://example.com/a.csv)",
      "[Nul](/workspace/a\0b)",
      "Plain: report.csv",
      "[Good](/workspace/good.csv)",
      "```",
    ].join("\n");
    assert.deepEqual(parseSandboxArtifacts(answer), [{ label: "Good", path: "/workspace/good.csv" }]);
    assert.ok(isSandboxPath("/workspace/a..b/c.txt"));
    assert.ok(!isSandboxPath("workspace/a"));
    assert.ok(!isSandboxPath("/a/../b"));
  });

  test("no fence, another language, a fence in a longer one: nothing", () => {
    assert.deepEqual(parseSandboxArtifacts("[Report](/workspace/report.csv)"), []);
    assert.deepEqual(parseSandboxArtifacts("```sandbox_artifacts_v2\n[A](/a)\n```"), []);
    assert.deepEqual(
      parseSandboxArtifacts("````markdown\n```sandbox_artifacts\n[A](/a)\n```\n````\n"),
      [],
      "an example inside a longer fence is not a listing",
    );
  });

  test("a fence still open (a streaming answer) counts up to the end; CRLF lines work", () => {
    assert.deepEqual(parseSandboxArtifacts("Files:\n```sandbox_artifacts\n[A](/w/a.txt)\n[B](/w/b"), [
      { label: "A", path: "/w/a.txt" },
    ]);
    assert.deepEqual(parseSandboxArtifacts("```sandbox_artifacts\r\n[A](/w/a.txt)\r\n```\r\n"), [
      { label: "A", path: "/w/a.txt" },
    ]);
  });
});

/** A body of `chunks` chunks of `size` bytes that records how many were pulled and whether it was cancelled. */
function countingBody(chunks: number, size: number) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (seen.pulled === chunks) {
          controller.close();
          return;
        }
        controller.enqueue(new Uint8Array(size).fill(seen.pulled & 0xff));
        seen.pulled++;
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, seen };
}

describe("readLimitedBody", () => {
  test("reads a body up to the limit whole", async () => {
    const { stream } = countingBody(4, 250);
    const bytes = await readLimitedBody(new Response(stream), 1_000, "/w/a");
    assert.equal(bytes.length, 1_000);
    assert.deepEqual([bytes[0], bytes[250], bytes[999]], [0, 1, 3]);
    assert.equal((await readLimitedBody(new Response(null), 0, "/w/empty")).length, 0);
  });

  test("stops reading once past the limit and cancels the rest", async () => {
    const { stream, seen } = countingBody(1_000, 100);
    await assert.rejects(readLimitedBody(new Response(stream), 1_000, "/w/big"), (error: unknown) => {
      assert.ok(error instanceof TrueForgeFileError);
      assert.equal(error.code, "file_too_large");
      assert.deepEqual([error.file, error.size, error.limit], ["/w/big", 1_100, 1_000]);
      return true;
    });
    assert.ok(seen.pulled <= 12, `pulled ${seen.pulled} chunks of 1000`);
    assert.equal(seen.cancelled, true);
  });

  test("a Content-Length over the limit is refused before the body is read", async () => {
    const { stream, seen } = countingBody(10, 100);
    const response = new Response(stream, { headers: { "content-length": "1000" } });
    await assert.rejects(readLimitedBody(response, 999, "/w/declared"), (error: unknown) => {
      assert.ok(error instanceof TrueForgeFileError);
      assert.deepEqual([error.size, error.limit], [1_000, 999]);
      return true;
    });
    assert.equal(seen.pulled, 0);
    assert.equal(seen.cancelled, true);
  });

  test("a body that breaks off is a connection error; an aborted one an abort", async () => {
    const broken = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(10));
        controller.error(new Error("reset"));
      },
    });
    await assert.rejects(readLimitedBody(new Response(broken), 100, "/w/x"), TrueForgeConnectionError);
    const controller = new AbortController();
    const aborted = new ReadableStream<Uint8Array>({
      pull(stream) {
        controller.abort();
        stream.error(new DOMException("aborted", "AbortError"));
      },
    });
    await assert.rejects(
      readLimitedBody(new Response(aborted), 100, "/w/x", controller.signal),
      TrueForgeAbortError,
    );
  });
});

describe("turns.readSandboxFile", () => {
  function client(respond: (url: string) => Response) {
    const urls: string[] = [];
    const tf = new TrueForge({
      baseUrl: "http://sdk.test",
      maxRetries: 0,
      fetch: async (url) => {
        urls.push(url);
        return respond(url);
      },
    });
    return { tf, urls };
  }

  test("downloads by path or artifact, names the file after the server's Content-Disposition", async () => {
    const { tf, urls } = client(
      () =>
        new Response(new Uint8Array([1, 2, 3]), {
          headers: {
            "content-disposition": 'attachment; filename="r\\"1.csv"; filename*=UTF-8\'\'r%C3%A9.csv',
          },
        }),
    );
    const file = await tf.turns.readSandboxFile("s 1", "t1", { label: "R", path: "/workspace/out/r é.csv" });
    assert.deepEqual(file, {
      path: "/workspace/out/r é.csv",
      name: "ré.csv",
      bytes: new Uint8Array([1, 2, 3]),
    });
    assert.equal(
      urls[0],
      "http://sdk.test/api/v1/sessions/s%201/turns/t1/download-sandbox-file?path=%2Fworkspace%2Fout%2Fr+%C3%A9.csv",
    );
    const plain = client(
      () => new Response("x", { headers: { "content-disposition": 'attachment; filename="a\\"b.txt"' } }),
    );
    assert.equal((await plain.tf.turns.readSandboxFile("s", "t", "/w/x")).name, 'a"b.txt');
    const none = client(() => new Response("x"));
    assert.equal((await none.tf.turns.readSandboxFile("s", "t", "/w/dir/x.bin")).name, "x.bin");
  });

  test("the server's refusals stay API errors; the default limit is 20 MiB", async () => {
    const { tf } = client(
      () =>
        new Response(JSON.stringify({ error: { message: "The sandbox is gone." } }), {
          status: 410,
          headers: { "content-type": "application/json" },
        }),
    );
    await assert.rejects(tf.turns.readSandboxFile("s", "t", "/w/x"), (error: unknown) => {
      assert.ok(error instanceof TrueForgeApiError);
      assert.equal(error.status, 410);
      assert.equal(error.error?.message, "The sandbox is gone.");
      return true;
    });
    const big = client(
      () => new Response(null, { headers: { "content-length": String(20 * 1024 * 1024 + 1) } }),
    );
    await assert.rejects(big.tf.turns.readSandboxFile("s", "t", "/w/x"), (error: unknown) => {
      assert.ok(error instanceof TrueForgeFileError);
      assert.equal(error.limit, 20 * 1024 * 1024);
      return true;
    });
  });
});
