// File parts without a server: the encoding, the name and media type rules, and the checks against the
// server's limits (the same checks against the real server are in test/client/sandbox.test.ts).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  type Capabilities,
  checkFileParts,
  type FileContentPart,
  filePart,
  isPlainFileName,
  isSandboxFile,
  TrueForge,
  TrueForgeFileError,
  type UserMessageContentItem,
} from "../../src/index.js";

const LIMITS = { max_request_body_bytes: 10_000, max_sandbox_file_bytes: 1_000 };
const CAPS: Capabilities = {
  sandbox: { enabled: true },
  skill: { enabled: true },
  settings: { enabled: true },
  limits: LIMITS,
};
const OFF: Capabilities = {
  ...CAPS,
  sandbox: { enabled: false, reason: "No sandbox provider is configured." },
};

function fileError(code: TrueForgeFileError["code"], check: (error: TrueForgeFileError) => void = () => {}) {
  return (error: unknown) => {
    assert.ok(error instanceof TrueForgeFileError, String(error));
    assert.equal(error.code, code, error.message);
    check(error);
    return true;
  };
}

function part(name: string, data: string): FileContentPart {
  return { type: "file", name, data };
}

describe("filePart", () => {
  test("encodes any bytes as standard base64, as Buffer does (views, chunk boundaries)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 600 }), fc.nat(8), async (bytes, offset) => {
        // A view into a larger buffer: only the view's bytes are encoded.
        const backing = new Uint8Array(offset + bytes.length + 3);
        backing.set(bytes, offset);
        const view = backing.subarray(offset, offset + bytes.length);
        const built = await filePart(view, "x.bin");
        assert.equal(
          built.data,
          `data:application/octet-stream;base64,${Buffer.from(bytes).toString("base64")}`,
        );
      }),
    );
    for (const size of [0, 1, 2, 3, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 100_003]) {
      const bytes = new Uint8Array(size).map((_, index) => (index * 7 + 3) & 0xff);
      const built = await filePart(bytes, "x.bin");
      assert.equal(built.data.split(",")[1], Buffer.from(bytes).toString("base64"), `size ${size}`);
    }
  });

  test("takes an ArrayBuffer, another view or a Blob (its type by default)", async () => {
    const bytes = new TextEncoder().encode("a,b\n1,2\n");
    const expected = Buffer.from(bytes).toString("base64");
    assert.equal(
      (await filePart(bytes.buffer, "a.csv", { mediaType: "text/csv" })).data.split(",")[1],
      expected,
    );
    assert.equal((await filePart(new DataView(bytes.buffer), "a.csv")).data.split(",")[1], expected);
    const blob = new Blob([bytes], { type: "text/csv" });
    assert.deepEqual(await filePart(blob, "a.csv"), {
      type: "file",
      name: "a.csv",
      data: `data:text/csv;base64,${expected}`,
    });
    // An explicit type wins over the Blob's; a Blob without one is octet-stream.
    assert.ok(
      (await filePart(blob, "a.txt", { mediaType: "text/plain" })).data.startsWith("data:text/plain;"),
    );
    assert.ok((await filePart(new Blob([bytes]), "a")).data.startsWith("data:application/octet-stream;"));
  });

  test("media types: lower-cased, parameters kept, anything else refused", async () => {
    const bytes = new Uint8Array([1]);
    const header = async (mediaType: string) =>
      (await filePart(bytes, "f", { mediaType })).data.split(",")[0] ?? "";
    assert.equal(await header("Text/CSV"), "data:text/csv;base64");
    assert.equal(await header(" text/csv; Charset=utf-8 "), "data:text/csv;charset=utf-8;base64");
    assert.equal(await header("application/vnd.ms-excel"), "data:application/vnd.ms-excel;base64");
    assert.equal(await header(""), "data:application/octet-stream;base64");
    for (const bad of [
      "text",
      "text/",
      "/csv",
      "text/csv,x",
      "text/csv;charset",
      'text/csv;a="b"',
      "a b/c",
    ]) {
      await assert.rejects(filePart(bytes, "f", { mediaType: bad }), fileError("invalid_media_type"), bad);
    }
  });

  test("names: a plain file name or a typed refusal, never a changed name", async () => {
    const good = [
      "report.csv",
      "my report (1).csv",
      ".hidden",
      "...",
      "naïve.txt",
      "数据.csv",
      "a".repeat(255),
    ];
    for (const name of good) {
      assert.ok(isPlainFileName(name), name);
      assert.equal((await filePart(new Uint8Array([1]), name)).name, name);
    }
    const bad = [
      "",
      ".",
      "..",
      "a/b",
      "/a",
      "a\\b",
      "..\\x",
      "a\nb",
      "a\0b",
      "a\u007fb",
      "a\u0085b",
      "a\ud800b",
      "a".repeat(256),
      "é".repeat(128),
    ];
    for (const name of bad) {
      assert.ok(!isPlainFileName(name), JSON.stringify(name));
      await assert.rejects(
        filePart(new Uint8Array([1]), name),
        fileError("invalid_name", (error) => {
          assert.equal(error.file, name);
          assert.match(error.message, /not a plain file name/);
        }),
        JSON.stringify(name),
      );
    }
  });

  test("with the capabilities: a sandbox file over max_sandbox_file_bytes is refused before it is read", async () => {
    let read = false;
    const blob = new Blob([new Uint8Array(1_001)], { type: "text/plain" });
    const spy = Object.assign(blob, {
      arrayBuffer: () => {
        read = true;
        return Blob.prototype.arrayBuffer.call(blob);
      },
    });
    await assert.rejects(
      filePart(spy, "big.txt", { server: CAPS }),
      fileError("file_too_large", (error) => {
        assert.deepEqual([error.file, error.size, error.limit], ["big.txt", 1_001, 1_000]);
        assert.match(error.message, /1001 bytes.*1000 bytes/);
      }),
    );
    assert.equal(read, false, "the file was not read");
    // At the limit, and an image over it (images are not sandbox files): accepted.
    await filePart(new Uint8Array(1_000), "edge.txt", { server: CAPS, mediaType: "text/plain" });
    await filePart(new Uint8Array(1_001), "a.png", { server: CAPS, mediaType: "image/png" });
    await filePart(new Uint8Array(1_001), "a.pdf", { server: LIMITS, mediaType: "application/pdf" });
    // The limits object alone works the same; without limits nothing is measured.
    await assert.rejects(
      filePart(new Uint8Array(1_001), "big.txt", { server: LIMITS }),
      fileError("file_too_large"),
    );
    const { limits: _none, ...withoutLimits } = CAPS;
    await filePart(new Uint8Array(1_001), "big.txt", { server: withoutLimits });
    await filePart(new Uint8Array(1_001), "big.txt");
  });

  test("with the capabilities: a part alone over max_request_body_bytes is refused", async () => {
    await assert.rejects(
      filePart(new Uint8Array(7_500), "photo.png", { server: CAPS, mediaType: "image/png" }),
      fileError("request_too_large", (error) => {
        assert.equal(error.file, "photo.png");
        assert.equal(error.limit, 10_000);
        assert.ok((error.size ?? 0) > 10_000);
      }),
    );
    // The estimate made before encoding equals checkFileParts' on the encoded part.
    const built = await filePart(new Uint8Array(7_000), "photo.png", {
      server: CAPS,
      mediaType: "image/png",
    });
    const bytes = checkFileParts([built], { server: CAPS });
    const tooSmall = { ...LIMITS, max_request_body_bytes: bytes - 1 };
    await assert.rejects(
      filePart(new Uint8Array(7_000), "photo.png", { server: tooSmall, mediaType: "image/png" }),
      fileError("request_too_large", (error) => assert.equal(error.size, bytes)),
    );
    await filePart(new Uint8Array(7_000), "photo.png", {
      server: { ...LIMITS, max_request_body_bytes: bytes },
      mediaType: "image/png",
    });
  });

  test("a sandbox file for an agent or a server without a sandbox is refused; images and PDFs are not", async () => {
    const csv = new TextEncoder().encode("a\n");
    await assert.rejects(
      filePart(csv, "a.csv", { mediaType: "text/csv", sandbox: false }),
      fileError("sandbox_required", (error) => assert.match(error.message, /the agent has no sandbox/)),
    );
    await assert.rejects(
      filePart(csv, "a.csv", { mediaType: "text/csv", server: OFF, sandbox: true }),
      fileError("sandbox_required", (error) =>
        assert.match(error.message, /No sandbox provider is configured/),
      ),
    );
    await filePart(csv, "a.png", { mediaType: "image/png", server: OFF, sandbox: false });
    await filePart(csv, "a.pdf", { mediaType: "application/pdf", server: OFF, sandbox: false });
    await filePart(csv, "a.csv", { mediaType: "text/csv", server: CAPS, sandbox: true });
  });
});

describe("isSandboxFile", () => {
  test("everything but images and PDFs, whatever the case and parameters", () => {
    const table: [string, boolean][] = [
      ["text/csv", true],
      ["application/octet-stream", true],
      ["application/json; charset=utf-8", true],
      ["application/pdfx", true],
      ["application/x-pdf", true],
      ["", true],
      ["image/png", false],
      ["image/svg+xml", false],
      ["IMAGE/JPEG", false],
      ["application/pdf", false],
      ["Application/PDF;version=1.7", false],
    ];
    for (const [mediaType, expected] of table) {
      assert.equal(isSandboxFile(mediaType), expected, mediaType);
    }
  });
});

describe("checkFileParts", () => {
  const csv = (bytes: number) =>
    part("a.csv", `data:text/csv;base64,${Buffer.alloc(bytes, 1).toString("base64")}`);

  test("reads the decoded size of hand-built parts exactly (padding included)", () => {
    for (const size of [998, 999, 1_000]) {
      checkFileParts([csv(size)], { server: CAPS });
    }
    for (const size of [1_001, 1_002, 1_003]) {
      assert.throws(
        () => checkFileParts([csv(size)], { server: CAPS }),
        fileError("file_too_large", (error) => assert.equal(error.size, size)),
      );
    }
  });

  test("refuses data that is not a base64 data URI, as the server does", () => {
    for (const data of [
      "hello",
      "data:text/plain,hello",
      "data:text/plain;base64",
      "data:text/plain;base64,abc",
      "data:text/plain;base64,ab!d",
      "data:text/plain;base64,a===",
    ]) {
      assert.throws(() => checkFileParts([part("a.txt", data)]), fileError("invalid_data"), data);
    }
    checkFileParts([part("a.txt", "data:text/plain;charset=utf-8;base64,aGk=")]);
    checkFileParts([part("empty.txt", "data:text/plain;base64,")]);
  });

  test("the server's media type rule applies to the type as written", () => {
    // The server reads `image/` case-sensitively: an upper-case type goes to the sandbox.
    const upper = part("a.png", `data:IMAGE/PNG;base64,${Buffer.alloc(1_001).toString("base64")}`);
    assert.throws(() => checkFileParts([upper], { server: CAPS }), fileError("file_too_large"));
    assert.throws(() => checkFileParts([upper], { sandbox: false }), fileError("sandbox_required"));
    const lower = part("a.png", `data:image/png;base64,${Buffer.alloc(1_001).toString("base64")}`);
    checkFileParts([lower], { server: CAPS, sandbox: false });
  });

  test("the names of hand-built parts are checked too", () => {
    assert.throws(
      () => checkFileParts([part("../x.csv", "data:text/csv;base64,")]),
      fileError("invalid_name"),
    );
    assert.throws(
      () => checkFileParts([part("x.png", "data:image/png;base64,"), part("", "data:image/png;base64,")]),
      fileError("invalid_name"),
    );
  });

  test("text parts count toward the request, files and text together over the limit are refused", () => {
    const text: UserMessageContentItem = { type: "text", text: "é".repeat(2_500) };
    const size = checkFileParts([text, csv(900)], { server: CAPS });
    assert.ok(size > 5_000 + 1_200, String(size));
    assert.throws(
      () => checkFileParts([text, text, csv(900)], { server: CAPS }),
      fileError("request_too_large", (error) => {
        assert.equal(error.file, undefined);
        assert.equal(error.limit, 10_000);
        assert.ok((error.size ?? 0) > 10_000);
      }),
    );
  });

  test("the estimate is an upper bound of the body tf.turns sends, and close to it", async () => {
    const bodies: string[] = [];
    const tf = new TrueForge({
      baseUrl: "http://sdk.test",
      fetch: async (_url, init) => {
        bodies.push(String(init.body));
        return new Response(JSON.stringify({ error: { message: "no" } }), {
          status: 422,
          headers: { "content-type": "application/json" },
        });
      },
    });
    const content: UserMessageContentItem[] = [
      { type: "text", text: 'quotes " and \\ and\nlines, ünïcödé, 🙂' },
      await filePart(new TextEncoder().encode("a,b\n"), "data.csv", { mediaType: "text/csv" }),
      await filePart(new Uint8Array(300), "dot.png", { mediaType: "image/png" }),
    ];
    const estimate = checkFileParts(content);
    for (const previous of [undefined, "01m91hsmxwkjdvbbp5g29ja5ce.local"]) {
      await tf.turns
        .create(
          "s1",
          previous === undefined
            ? { input: [{ type: "user.message", content }] }
            : { input: [{ type: "user.message", content }], previous_turn_id: previous },
        )
        .catch(() => undefined);
    }
    assert.equal(bodies.length, 2);
    for (const body of bodies) {
      const sent = new TextEncoder().encode(body).length;
      assert.ok(estimate >= sent, `estimate ${estimate} < sent ${sent}`);
      assert.ok(estimate - sent < 160, `estimate ${estimate} far above sent ${sent}`);
    }
  });
});
