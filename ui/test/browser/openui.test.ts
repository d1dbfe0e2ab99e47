// Generative UI in a real browser against the real server: the fake model echoes a message holding an
// ```openui block, and the answer renders as components (a card, tabs, a bound input, a chart, a modal, a
// form) that respond to clicks and typing, while it streams and after, with no error in the console.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { type Harness, send, startHarness, waitForTurnEnd } from "../support/harness.js";

let harness: Harness;

before(async () => {
  harness = await startHarness();
});

after(async () => {
  await harness?.stop();
});

const BLOCK = [
  "```openui",
  "root = Stack([card, tabs, nameInput, greeting, chart, mystery, accordion, actions, modal, form])",
  'card = Card([CardHeader("Quarterly report", "All teams"), TextContent("Revenue grew in every quarter.")])',
  'tabs = Tabs([TabItem("a", "Overview", [TextContent("Overview pane")]), TabItem("b", "Details", [TextContent("Details pane")])])',
  '$name = "world"',
  'nameInput = Input("name", "Your name", "text", null, $name)',
  'greeting = TextContent("Hello " + $name + "!")',
  'chart = BarChart(["Q1", "Q2", "Q3"], [Series("2024", [10, 20, 30])], "grouped", "Quarter", "Revenue")',
  'mystery = Sparkle("shiny")',
  'accordion = Accordion([AccordionItem("why", "Why it grew", [TextContent("New customers.")])])',
  "$open = false",
  'actions = Buttons([Button("Open details", Action([@Set($open, true)])), Button("Pick blue")])',
  'modal = Modal("Details", $open, [TextContent("Inside the modal")])',
  'form = Form("contact", Buttons([Button("Send", null, "primary")]), [email])',
  'email = FormControl("Email", Input("email", "name@example.com", "email", {required: true, email: true}))',
  "```",
].join("\n");

/** Opens the app with console errors recorded (the harness already fails on uncaught page errors). */
async function openApp(): Promise<{ page: Page; errors: string[] }> {
  const { page } = await harness.page();
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") {
      errors.push(message.text());
    }
  });
  await page.goto("/");
  await page.getByRole("combobox", { name: "Model" }).waitFor();
  return { page, errors };
}

function block(page: Page) {
  return page.locator('.tf-message-assistant .tf-openui[data-openui="rendered"]').last();
}

describe("generative UI", () => {
  test("a streamed block renders as it arrives and ends whole, without errors", async () => {
    const { page, errors } = await openApp();
    await send(page, `Here is the panel. #echo #chunks=30 #delay=50\n\n${BLOCK}\n\nThat is all.`);
    // Part-way: the block is on screen while its text still grows.
    await page.locator(".tf-message-assistant .tf-openui[data-streaming]").waitFor();
    await waitForTurnEnd(page);
    const ui = block(page);
    await ui.waitFor();
    assert.equal(await ui.getAttribute("data-streaming"), null);
    assert.equal(await ui.locator(".tf-openui-card .tf-openui-title").innerText(), "Quarterly report");
    assert.equal(await ui.locator(".tf-openui-pending").count(), 0, "no placeholder is left");
    assert.match(await page.locator(".tf-message-assistant").last().innerText(), /That is all\./);
    assert.deepEqual(errors, []);
  });

  test("the components respond: tabs, a bound input, accordion, modal, validation; unknown ones are labelled", async () => {
    const { page, errors } = await openApp();
    await send(page, `Here is the panel. #echo\n\n${BLOCK}`);
    await waitForTurnEnd(page);
    const ui = block(page);
    await ui.waitFor();

    // A card with its title and text.
    const card = ui.locator(".tf-openui-card");
    assert.equal(await card.locator(".tf-openui-title").innerText(), "Quarterly report");
    assert.match(await card.innerText(), /Revenue grew in every quarter\./);

    // Tabs switch on click.
    const overview = ui.getByRole("tab", { name: "Overview" });
    const details = ui.getByRole("tab", { name: "Details" });
    assert.equal(await overview.getAttribute("aria-selected"), "true");
    assert.ok(await ui.getByText("Overview pane").isVisible());
    assert.ok(await ui.getByText("Details pane").isHidden());
    await details.click();
    assert.equal(await details.getAttribute("aria-selected"), "true");
    await ui.getByText("Details pane").waitFor({ state: "visible" });
    assert.ok(await ui.getByText("Overview pane").isHidden());

    // An input bound to $name changes the text that reads it.
    await ui.getByText("Hello world!").waitFor();
    await ui.getByRole("textbox", { name: "Your name" }).fill("Ada");
    await ui.getByText("Hello Ada!").waitFor();

    // The chart is an SVG with one bar per value.
    const chart = ui.locator('.tf-openui-chart[data-chart="bar"]');
    assert.equal(await chart.locator("svg[role=img]").count(), 1);
    assert.equal(await chart.locator("rect.tf-openui-bar").count(), 3);
    assert.match(await chart.innerText(), /Q1[\s\S]*Q2[\s\S]*Q3/);

    // A component the language does not have is a labelled box with its name.
    const unknown = ui.locator('[data-openui-unknown="Sparkle"]');
    assert.match(await unknown.innerText(), /Unknown component\s+Sparkle/);

    // The accordion opens its section.
    assert.ok(await ui.getByText("New customers.").isHidden());
    await ui.getByRole("button", { name: "Why it grew" }).click();
    await ui.getByText("New customers.").waitFor({ state: "visible" });

    // A button's action sets $open, which shows the modal; closing it resets the variable.
    await ui.getByRole("button", { name: "Open details" }).click();
    const dialog = page.getByRole("dialog", { name: "Details" });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /Inside the modal/);
    await dialog.getByRole("button", { name: "Close" }).click();
    await dialog.waitFor({ state: "detached" });

    // A primary button checks its form's rules first: nothing is sent while the email is wrong.
    const email = ui.getByRole("textbox", { name: "Email" });
    await email.fill("not an email");
    await ui.getByRole("button", { name: "Send", exact: true }).click();
    await ui.getByText("Enter an email address").waitFor();
    assert.equal(await email.getAttribute("aria-invalid"), "true");
    assert.equal(await page.locator(".tf-message-user").count(), 1);
    assert.deepEqual(errors, []);
  });

  test("a button without an action sends its label, with its form's values, as the next message", async () => {
    const { page, errors } = await openApp();
    await send(page, `Pick one. #echo\n\n${BLOCK}`);
    await waitForTurnEnd(page);
    const ui = block(page);
    await ui.getByRole("button", { name: "Pick blue" }).click();
    await waitForTurnEnd(page, 2);
    assert.equal(await page.locator(".tf-message-user .tf-user-text").last().innerText(), "Pick blue");

    await page.locator(".tf-message-assistant .tf-openui").first().waitFor();
    const first = page.locator('.tf-message-assistant .tf-openui[data-openui="rendered"]').first();
    await first.getByRole("textbox", { name: "Email" }).fill("ada@example.com");
    await first.getByRole("button", { name: "Send", exact: true }).click();
    await waitForTurnEnd(page, 3);
    assert.match(
      await page.locator(".tf-message-user .tf-user-text").last().innerText(),
      /Send\s+Form "contact":\s+- email: ada@example\.com/,
    );
    assert.deepEqual(errors, []);
  });
});
