// The retry policy on its own: which requests may be repeated, which answers are worth another attempt,
// how long to wait.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fillPath, queryString, randomId } from "../../src/http.js";
import { isRepeatable, isRetryableStatus, parseRetryAfter, retryDelay } from "../../src/index.js";

describe("retry policy", () => {
  test("GET, HEAD, PUT, DELETE are repeatable; POST only with an Idempotency-Key; PATCH never", () => {
    const none = new Headers();
    for (const method of ["GET", "get", "HEAD", "PUT", "DELETE"]) {
      assert.equal(isRepeatable(method, none), true, method);
    }
    assert.equal(isRepeatable("POST", none), false);
    assert.equal(
      isRepeatable("POST", new Headers({ "Idempotency-Key": "" })),
      false,
      "an empty key is no key",
    );
    assert.equal(isRepeatable("POST", new Headers({ "idempotency-key": "k1" })), true);
    assert.equal(isRepeatable("PATCH", new Headers({ "Idempotency-Key": "k1" })), false);
  });

  test("only 408, 429, 502, 503, 504 are retried", () => {
    const retried = [];
    for (let status = 100; status < 600; status++) {
      if (isRetryableStatus(status)) {
        retried.push(status);
      }
    }
    assert.deepEqual(retried, [408, 429, 502, 503, 504]);
  });

  test("Retry-After in seconds or as an HTTP date", () => {
    assert.equal(parseRetryAfter(null), undefined);
    assert.equal(parseRetryAfter("3"), 3000);
    assert.equal(parseRetryAfter(" 0.5 "), 500);
    assert.equal(parseRetryAfter("soon"), undefined);
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:10 GMT", now), 10_000);
    assert.equal(parseRetryAfter("Wed, 31 Dec 2025 00:00:00 GMT", now), 0, "a past date: at once");
  });

  test("backoff doubles up to the cap, with jitter between half and all of it", () => {
    const options = { baseDelayMs: 100, maxDelayMs: 1000 };
    assert.equal(
      retryDelay(0, undefined, options, () => 0),
      50,
    );
    assert.equal(
      retryDelay(0, undefined, options, () => 1),
      100,
    );
    assert.equal(
      retryDelay(2, undefined, options, () => 1),
      400,
    );
    assert.equal(
      retryDelay(10, undefined, options, () => 1),
      1000,
      "capped",
    );
    for (let retry = 0; retry < 6; retry++) {
      const delay = retryDelay(retry, undefined, options) ?? -1;
      const cap = Math.min(1000, 100 * 2 ** retry);
      assert.ok(delay >= cap / 2 && delay <= cap, `${retry}: ${delay}`);
    }
  });

  test("the server's Retry-After wins, and one over the limit means no retry", () => {
    assert.equal(retryDelay(0, 2500, {}), 2500);
    assert.equal(retryDelay(3, 0, {}), 0);
    assert.equal(retryDelay(0, 120_000, {}), undefined);
    assert.equal(retryDelay(0, 120_000, { maxRetryAfterMs: 300_000 }), 120_000);
  });
});

describe("request building", () => {
  test("path parameters are encoded; a missing one throws", () => {
    assert.equal(fillPath("/a/{x}/b/{y}", { x: "1/2", y: "é" }), "/a/1%2F2/b/%C3%A9");
    assert.throws(() => fillPath("/a/{x}", {}), TypeError);
  });

  test("query strings skip absent values and repeat arrays", () => {
    assert.equal(queryString(undefined), "");
    assert.equal(queryString({ a: undefined, b: null }), "");
    assert.equal(
      queryString({ limit: 5, order: "asc", tag: ["x", "y"], ok: true }),
      "?limit=5&order=asc&tag=x&tag=y&ok=true",
    );
  });

  test("random ids are UUID v4", () => {
    const ids = new Set(Array.from({ length: 100 }, () => randomId()));
    assert.equal(ids.size, 100);
    for (const id of ids) {
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });
});
