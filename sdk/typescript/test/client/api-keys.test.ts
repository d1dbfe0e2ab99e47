// API keys and login against real servers: one in local mode (no login: keys are refused, every caller is the
// local admin) and one in hosted mode with a real OpenID provider (see ../support/login.ts), where a user logs
// in, makes a key, uses it as the client's token, and revokes it; and where a 401 and a 403 are told apart by
// their error classes.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  TrueForge,
  TrueForgeApiError,
  TrueForgeAuthenticationError,
  TrueForgePermissionError,
} from "../../src/index.js";
import { type LoginServer, startServerWithLogin } from "../support/login.js";
import { FAKE_MODEL, type Harness, harness } from "./helpers.js";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => assert.fail("expected the call to be refused"),
    (error: unknown) => error,
  );
}

describe("without login (local mode)", () => {
  let h: Harness;
  before(async () => {
    h = await harness();
  });
  after(() => h.stop());

  test("the caller is the local admin, has no keys, and cannot make one", async () => {
    const me = await h.tf.auth.me();
    assert.equal(me.type, "default");
    assert.equal(me.role, "admin");
    assert.deepEqual(await h.tf.apiKeys.list(), []);
    const refused = await rejection(h.tf.apiKeys.create("ci"));
    assert.ok(refused instanceof TrueForgeApiError, String(refused));
    assert.equal(refused.status, 409);
    assert.match(refused.error?.message ?? "", /API keys need login/);
    assert.ok(!(refused instanceof TrueForgeAuthenticationError));
    const missing = await rejection(h.tf.apiKeys.revoke("key_0000000000000000"));
    assert.ok(missing instanceof TrueForgeApiError && missing.status === 404, String(missing));
  });
});

describe("with login (hosted mode and an OpenID provider)", () => {
  let server: LoginServer;
  before(async () => {
    server = await startServerWithLogin();
  });
  after(() => server?.stop());

  const client = (token?: string) => new TrueForge({ baseUrl: server.baseUrl, token, maxRetries: 0 });

  test("without credentials every call is a TrueForgeAuthenticationError (401)", async () => {
    const anonymous = client();
    // One call at a time: a rejection not yet awaited would be reported as unhandled.
    for (const call of [
      () => anonymous.auth.me(),
      () => anonymous.apiKeys.list(),
      () => anonymous.sessions.list(),
    ]) {
      const error = await rejection(call());
      assert.ok(error instanceof TrueForgeAuthenticationError, String(error));
      assert.ok(error instanceof TrueForgeApiError, "still a TrueForgeApiError");
      assert.equal(error.status, 401);
      assert.equal(error.name, "TrueForgeAuthenticationError");
      assert.match(error.error?.message ?? "", /Authentication required/);
    }
    // A turn stream reports it the same way.
    const stream = anonymous.turns.stream("sess_missing", {
      input: [{ type: "user.message", content: "hi" }],
    });
    const streamed = await rejection(
      (async () => {
        for await (const _ of stream) {
          // nothing arrives
        }
      })(),
    );
    assert.ok(streamed instanceof TrueForgeAuthenticationError, String(streamed));
  });

  test("a login through the provider gives the token the client sends", async () => {
    const anonymous = client();
    const { idToken, landed } = await server.logIn(anonymous.auth.loginUrl("/sessions/x"), "alice");
    assert.equal(landed, `${server.baseUrl}/sessions/x`, "back where the login started");
    const alice = client(idToken);
    assert.deepEqual(await alice.auth.me(), { type: "oidc-connected", email: "alice", role: "admin" });
    const session = await alice.sessions.create({ agent: { spec: { model: { name: FAKE_MODEL } } } });
    assert.equal((await alice.sessions.get(session.id)).id, session.id);
  });

  test("a key is shown once, acts as its owner, and is refused once revoked", async () => {
    const alice = client(await server.tokenFor("alice"));
    const created = await alice.apiKeys.create("  nightly report  ");
    assert.match(created.key, /^tfk_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.name, "nightly report");
    assert.equal(created.role, "admin");
    assert.equal(created.prefix, created.key.slice(0, created.prefix.length));
    assert.ok(!Number.isNaN(Date.parse(created.created_at)), created.created_at);

    const listed = await alice.apiKeys.list();
    assert.deepEqual(
      listed.map((key) => key.id),
      [created.id],
    );
    assert.ok(!("key" in (listed[0] ?? {})), "a listed key has no secret");
    assert.ok(!JSON.stringify(listed).includes(created.key.slice(created.prefix.length)));

    // The key as the client's token: alice, admin, her sessions.
    const withKey = client(created.key);
    assert.deepEqual(await withKey.auth.me(), { type: "oidc-connected", email: "alice", role: "admin" });
    assert.ok(Array.isArray(await withKey.settings.modelProviders.list()), "an admin's key reads settings");
    // A key cannot make keys: a 403, told apart from a 401.
    const forbidden = await rejection(withKey.apiKeys.create("child"));
    assert.ok(forbidden instanceof TrueForgePermissionError, String(forbidden));
    assert.equal(forbidden.status, 403);

    await alice.apiKeys.revoke(created.id);
    const revoked = await rejection(withKey.auth.me());
    assert.ok(revoked instanceof TrueForgeAuthenticationError, String(revoked));
    assert.match(revoked.error?.message ?? "", /revoked/);
    assert.deepEqual(await alice.apiKeys.list(), []);
    const again = await rejection(alice.apiKeys.revoke(created.id));
    assert.ok(again instanceof TrueForgeApiError && again.status === 404, String(again));
  });

  test("a user's key is a user's; nobody else lists or revokes it; bad names are refused", async () => {
    const bob = client(await server.tokenFor("bob"));
    const alice = client(await server.tokenFor("alice"));
    const settings = await rejection(bob.settings.modelProviders.list());
    assert.ok(settings instanceof TrueForgePermissionError, String(settings));
    assert.equal(settings.error?.message, "Admin access required");

    const key = await bob.apiKeys.create("ci");
    assert.equal(key.role, "user");
    assert.deepEqual(await client(key.key).auth.me(), { type: "oidc-connected", email: "bob", role: "user" });
    assert.deepEqual(await alice.apiKeys.list(), []);
    const notHers = await rejection(alice.apiKeys.revoke(key.id));
    assert.ok(notHers instanceof TrueForgeApiError && notHers.status === 404, String(notHers));

    for (const name of ["", "   ", "x".repeat(101), "line\nbreak"]) {
      const bad = await rejection(bob.apiKeys.create(name));
      assert.ok(bad instanceof TrueForgeApiError && bad.status === 400, `${JSON.stringify(name)}: ${bad}`);
    }
    await bob.apiKeys.revoke(key.id);
  });
});
