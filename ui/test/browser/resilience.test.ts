// Bad input and bad conditions in the browser: a server that is down, a sign-in refused as the app starts, an attachment
// larger than the server takes, and an event type the UI does not know (a newer server). Failures are
// injected on the page's network (Playwright routes); everything else is the real server.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type Harness, send, startHarness, waitForTurnEnd } from "../support/harness.js";

/** A 1×1 PNG. */
const DOT_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);

/** The request-body limit this server is started with: small, so a test file goes over it. */
const LIMIT = 256 * 1024;

let harness: Harness;

before(async () => {
  harness = await startHarness({ MAX_REQUEST_BODY_BYTES: String(LIMIT) });
});

after(async () => {
  await harness?.stop();
});

test("a server that cannot be reached gets a clear state and a retry that recovers", async () => {
  const { page } = await harness.page();
  await page.route("**/api/**", (route) => route.abort("connectionrefused"));
  await page.goto("/");
  const alert = page.getByRole("alert");
  await alert.getByText("The server cannot be reached").waitFor();
  await page.unroute("**/api/**");
  await alert.getByRole("button", { name: "Retry" }).click();
  await page.getByLabel("Message", { exact: true }).waitFor();
});

test("a 401 as the app starts goes to the login once, then offers it rather than going round again", async () => {
  const { page } = await harness.page();
  await page.route("**/api/v1/auth/me", (route) =>
    route.fulfill({ status: 401, contentType: "application/json", body: '{"error":{"message":"expired"}}' }),
  );
  // The login itself is a stand-in page here (this server has no login; login.test.ts has the real one).
  await page.route(
    (url) => url.pathname === "/api/v1/auth/login",
    (route) => route.fulfill({ status: 200, contentType: "text/html", body: "<p>The login</p>" }),
  );
  await page.goto("/agents");
  await page.waitForURL((url) => url.pathname === "/api/v1/auth/login");
  assert.equal(new URL(page.url()).searchParams.get("return_to"), "/agents");
  // Back from the login and still refused: the login did not take, so the app says so and waits.
  await page.goto("/agents");
  const alert = page.getByRole("alert");
  await alert.getByText("Signing in did not work").waitFor();
  const again = alert.getByRole("link", { name: "Sign in again" });
  const href = new URL((await again.getAttribute("href")) ?? "", harness.server.baseUrl);
  assert.equal(href.pathname, "/api/v1/auth/login");
  assert.equal(href.searchParams.get("return_to"), "/agents");
  assert.equal(new URL(page.url()).pathname, "/agents");
  assert.equal(await page.getByLabel("Message", { exact: true }).count(), 0);
});

test("an attachment over the server's limit is refused before anything is sent", async () => {
  const sessionId = await harness.toolSession();
  const { page } = await harness.page();
  let turnPosts = 0;
  page.on("request", (request) => {
    if (request.method() === "POST" && request.url().endsWith("/turns")) {
      turnPosts += 1;
    }
  });
  await page.goto(`/sessions/${sessionId}`);
  await page.getByLabel("Message", { exact: true }).fill("Here is the file.");
  await page
    .getByTestId("file-input")
    .setInputFiles({ name: "big.png", mimeType: "image/png", buffer: Buffer.alloc(LIMIT) });
  await page
    .getByRole("alert")
    .getByText(/Too large to send/)
    .waitFor();
  assert.ok(await page.getByRole("button", { name: "Send", exact: true }).isDisabled());
  await page.getByRole("button", { name: "Remove big.png" }).click();
  // An image: this chat's agent has no sandbox, so only images and PDFs go (to the model, as they are).
  await page
    .getByTestId("file-input")
    .setInputFiles({ name: "dot.png", mimeType: "image/png", buffer: DOT_PNG });
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await waitForTurnEnd(page);
  assert.equal(turnPosts, 1, "only the message under the limit was sent");
  assert.match(await page.locator(".tf-message-user").innerText(), /dot\.png/);
});

test("an event of a type the UI does not know is skipped and logged, never a blank page", async () => {
  const sessionId = await harness.toolSession();
  const { page } = await harness.page();
  const warnings: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "warning") {
      warnings.push(message.text());
    }
  });
  // The real turn's stream with one event of a newer server's type inserted before `turn.done`, the
  // frames after it renumbered so the stream stays dense.
  await page.route("**/turns", async (route) => {
    if (route.request().method() !== "POST") {
      return route.continue();
    }
    const response = await route.fetch();
    const frames = (await response.text()).split("\n\n").filter((frame) => frame.trim() !== "");
    const done = frames.findIndex((frame) => frame.includes('"turn.done"'));
    const out: string[] = [];
    let shift = 0;
    frames.forEach((frame, index) => {
      if (index === done) {
        const id = Number(/^id: (\d+)$/m.exec(frame)?.[1]);
        out.push(`id: ${id}\ndata: ${JSON.stringify({ type: "agent.mood", id: "x1", mood: "cheerful" })}`);
        shift = 1;
      }
      out.push(frame.replace(/^id: (\d+)$/m, (_, n: string) => `id: ${Number(n) + shift}`));
    });
    await route.fulfill({ response, body: `${out.join("\n\n")}\n\n` });
  });
  await page.goto(`/sessions/${sessionId}`);
  await send(page, "Tell me something new. #echo");
  await waitForTurnEnd(page);
  assert.match(await page.locator(".tf-message-assistant").innerText(), /Tell me something new/);
  assert.ok(
    warnings.some((text) => text.includes('unknown type "agent.mood"')),
    `warned: ${JSON.stringify(warnings)}`,
  );
});
