// Login in a real browser: the server in hosted mode with login, and the real OpenID provider (`oidc-provider`
// from npm, see the SDK's test/support/login.ts), whose development form takes any password. A user opening
// the app is sent to the provider, logs in, comes back as themselves, chats, makes an API key (shown once)
// that works as a Bearer token until revoked, and logs out; a user who is not an admin sees no settings; a
// login the server stops accepting leads back to the login, and a login that does not take does not loop.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { type LoginHarness, send, startLoginHarness, waitForTurnEnd } from "../support/harness.js";

let harness: LoginHarness;

before(async () => {
  harness = await startLoginHarness();
});

after(async () => {
  await harness?.stop();
});

function onProvider(page: Page): boolean {
  return new URL(page.url()).origin === harness.server.issuer;
}

/** On the provider's login form: logs in as `account` (any password) and waits to be back in the app. */
async function logInAtProvider(page: Page, account: string): Promise<void> {
  await page.waitForURL((url) => url.origin === harness.server.issuer);
  await page.locator('input[name="login"]').fill(account);
  await page.locator('input[name="password"]').fill("any password");
  await page.locator('button[type="submit"]').click();
  await page.waitForURL((url) => url.origin === harness.server.baseUrl);
}

/** Calls the API from the test (not the page) with `key` as `Authorization: Bearer`. */
async function meWithBearer(key: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${harness.server.baseUrl}/api/v1/auth/me`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function openUserMenu(page: Page) {
  await page.getByTestId("user-menu").click();
  return page.getByRole("menu");
}

describe("login", () => {
  test("a user logs in through the provider, chats, makes and revokes an API key, and logs out", async () => {
    const { context, page } = await harness.page();
    await page.goto("/");
    // Nobody is logged in: the app goes to the provider's login at once.
    await logInAtProvider(page, "alice");
    assert.equal(new URL(page.url()).pathname, "/", "back where the login started");

    // Who is logged in, at the foot of the navigation; an admin has the settings.
    await page.getByTestId("user-menu").waitFor();
    assert.equal(await page.getByTestId("user-name").innerText(), "alice");
    assert.equal(await page.getByTestId("user-role").innerText(), "Admin");
    await page.getByRole("button", { name: "Settings" }).waitFor();
    const cookies = await context.cookies(harness.server.baseUrl);
    const idToken = cookies.find((cookie) => cookie.name === "id_token");
    assert.ok(idToken?.httpOnly, "the login is an HttpOnly cookie, out of the page's reach");
    assert.equal(await page.evaluate(() => document.cookie.includes("id_token")), false);

    // A chat with the fake model, as in chat.test.ts.
    await page.getByRole("combobox", { name: "Model" }).waitFor();
    await send(page, "Hello from alice. #echo");
    await waitForTurnEnd(page);
    assert.match(await page.locator(".tf-message-assistant").last().innerText(), /Hello from alice\./);
    assert.match(new URL(page.url()).pathname, /^\/sessions\/[^/]+$/);

    // An API key: made from the account menu, shown once.
    await (await openUserMenu(page)).getByRole("menuitem", { name: "API keys" }).click();
    await page.waitForURL((url) => url.pathname === "/api-keys");
    await page.getByTestId("api-keys-empty").waitFor();
    await page.getByTestId("api-key-new").click();
    await page.getByTestId("api-key-name").fill("laptop script");
    await page.getByRole("button", { name: "Create key" }).click();
    const shown = page.getByTestId("new-api-key-value");
    await shown.waitFor();
    const key = await shown.inputValue();
    assert.match(key, /^tfk_[A-Za-z0-9_-]{43}$/);
    await page.getByText("it is shown only this once").waitFor();
    const row = page.getByTestId("api-key-row").filter({ hasText: "laptop script" });
    await row.waitFor();
    assert.match(await row.innerText(), new RegExp(`${key.slice(0, 12)}…`));
    assert.match(await row.innerText(), /Admin/);
    const storage = await page.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }));
    assert.ok(!storage.includes(key), "the key is in no storage");
    assert.ok(!page.url().includes(key), "nor in the address");

    // The key works as a Bearer token, as alice.
    const withKey = await meWithBearer(key);
    assert.equal(withKey.status, 200, JSON.stringify(withKey.body));
    assert.deepEqual(withKey.body, { type: "oidc-connected", email: "alice", role: "admin" });

    // Done: the key is gone from the page; after a reload the list shows its prefix only.
    await page.getByRole("button", { name: "Done" }).click();
    await shown.waitFor({ state: "detached" });
    await page.reload();
    await row.waitFor();
    assert.ok(!(await page.content()).includes(key.slice(12)), "the secret is not shown again");

    // Revoked after a confirmation: refused from then on.
    await row.getByRole("button", { name: "Revoke laptop script" }).click();
    const dialog = page.getByTestId("confirm-dialog");
    await dialog.getByText("Revoke laptop script?").waitFor();
    await dialog.getByRole("button", { name: "Revoke", exact: true }).click();
    await row.waitFor({ state: "detached" });
    await page.getByTestId("api-keys-empty").waitFor();
    const revoked = await meWithBearer(key);
    assert.equal(revoked.status, 401, JSON.stringify(revoked.body));

    // Logging out clears the cookie and leaves the signed-out screen, whose button goes to the login.
    await (await openUserMenu(page)).getByRole("menuitem", { name: "Log out" }).click();
    const signedOut = page.getByTestId("sign-in");
    await signedOut.getByText("You are signed out.").waitFor();
    assert.equal(
      (await context.cookies(harness.server.baseUrl)).some((cookie) => cookie.name === "id_token"),
      false,
    );
    const signIn = signedOut.getByRole("link", { name: "Sign in" });
    const href = new URL((await signIn.getAttribute("href")) ?? "", harness.server.baseUrl);
    assert.equal(href.pathname, "/api/v1/auth/login");
    assert.equal(href.searchParams.get("return_to"), "/api-keys");
    const loginRequest = page.waitForRequest((request) => request.url().includes("/api/v1/auth/login"));
    await signIn.click();
    await loginRequest;
  });

  test("a user who is not an admin sees no settings, and the settings address says why", async () => {
    const { page } = await harness.page();
    const settingsCalls: string[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname.startsWith("/api/v1/settings")) {
        settingsCalls.push(request.url());
      }
    });
    await page.goto("/agents");
    await logInAtProvider(page, "bob");
    assert.equal(new URL(page.url()).pathname, "/agents");
    await page.getByTestId("user-menu").waitFor();
    assert.equal(await page.getByTestId("user-name").innerText(), "bob");
    assert.equal(await page.getByTestId("user-role").innerText(), "User");
    assert.equal(await page.getByRole("button", { name: "Settings" }).count(), 0, "no way to the settings");

    await page.goto("/settings/models");
    const notice = page.getByTestId("settings-admins-only");
    await notice.getByText("The settings are for admins only").waitFor();
    assert.equal(await page.getByTestId("settings").count(), 0, "the settings screen itself is not shown");
    assert.deepEqual(settingsCalls, [], "nothing asked the server for settings");

    // A user may still chat, and make keys of their own (with the user role).
    await page.goto("/api-keys");
    await page.getByTestId("api-key-new").click();
    await page.getByTestId("api-key-name").fill("bob's key");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByTestId("new-api-key-value").waitFor();
    assert.match(await page.getByTestId("api-key-row").innerText(), /User/);
  });

  test("a login the server stops accepting leads back to the login", async () => {
    const { context, page } = await harness.page();
    await page.goto("/");
    await logInAtProvider(page, "alice");
    await page.getByTestId("user-menu").waitFor();

    // The cookie is gone (expired, cleared): the next call is refused, and the app says so.
    await context.clearCookies({ name: "id_token" });
    await page.getByRole("button", { name: "Agents" }).click();
    const expired = page.getByTestId("sign-in");
    await expired.getByText("Your sign-in has expired.").waitFor();
    // Its button is the login, which (the provider still knowing the browser) brings the user back at once.
    await expired.getByRole("link", { name: "Sign in again" }).click();
    await page.waitForURL((url) => url.origin === harness.server.baseUrl && url.pathname === "/agents");
    await page.getByTestId("user-menu").waitFor();

    // Opening the app without the cookie goes to the login by itself.
    await context.clearCookies({ name: "id_token" });
    const loginRequest = page.waitForRequest((request) => request.url().includes("/api/v1/auth/login"));
    await page.goto("/");
    await loginRequest;
    await page.waitForURL((url) => url.origin === harness.server.baseUrl && url.pathname === "/");
    await page.getByTestId("user-menu").waitFor();
  });

  test("a login that does not take shows an error instead of going round again", async () => {
    const { page } = await harness.page();
    // However the login goes, the server keeps saying 401 (a misconfigured deployment, a cookie refused).
    await page.route("**/api/v1/auth/me", (route) =>
      route.fulfill({
        status: 401,
        contentType: "application/json",
        body: '{"error":{"message":"Authentication required"}}',
      }),
    );
    let logins = 0;
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === "/api/v1/auth/login") {
        logins += 1;
      }
    });
    await page.goto("/agents");
    await logInAtProvider(page, "alice");
    const alert = page.getByRole("alert");
    await alert.getByText("Signing in did not work").waitFor();
    assert.equal(logins, 1, "the app went to the login once");
    assert.ok(!onProvider(page));
    const again = alert.getByRole("link", { name: "Sign in again" });
    assert.equal(
      new URL((await again.getAttribute("href")) ?? "", harness.server.baseUrl).searchParams.get("return_to"),
      "/agents",
    );
  });
});
