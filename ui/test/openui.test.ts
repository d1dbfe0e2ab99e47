// The OpenUI parser and evaluator (src/openui/) without a browser: the guide's examples, streaming prefixes
// that must never throw, expressions, functions, state, actions and form rules.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  checkRules,
  composeMessage,
  evaluateProgram,
  Pending,
  stateDefaults,
  toText,
  UiAction,
  UiElement,
  undefinedNames,
  type Value,
} from "../src/openui/evaluate.js";
import { parseExpression, parseProgram } from "../src/openui/parse.js";

/** Evaluates a block with its declared defaults (and `changes` on top). */
function run(source: string, changes: Record<string, Value> = {}, streaming = false) {
  const program = parseProgram(source, streaming);
  const defaults = stateDefaults(program);
  const read = (name: string): Value =>
    name in changes ? (changes[name] ?? null) : (defaults[name] ?? null);
  return { program, ...evaluateProgram(program, read), read };
}

function element(value: Value | undefined, type: string): UiElement {
  assert.ok(value instanceof UiElement, `expected ${type}, got ${JSON.stringify(value)}`);
  assert.equal(value.type, type);
  return value;
}

/** The value of `expression` in a block that defines `data`. */
function calc(expression: string, data = "[]"): Value {
  const { root } = run(`root = Stack([x])\nx = ${expression}\ndata = ${data}`);
  return (element(root, "Stack").args[0] as Value[])[0] ?? null;
}

const TABLE = `root = Stack([title, table])
title = TextContent("Open incidents", "large-heavy")
table = Table([Col("Service", data.service), Col("Opened", data.opened), Col("Severity", severity)])
severity = @Each(data, "i", Tag(i.severity, null, "sm", i.severity == "high" ? "danger" : "warning"))
data = [{service: "api", opened: "2024-05-02", severity: "high"}, {service: "web", opened: "2024-05-03", severity: "low"}]`;

const CHART = `root = Stack([card])
card = Card([header, chart])
header = CardHeader("Revenue by quarter", "Thousands of euros")
chart = BarChart(["Q1", "Q2", "Q3", "Q4"], [Series("2023", [120, 135, 150, 170]), Series("2024", [140, 160, 155, 190])], "grouped", "Quarter", "Revenue")`;

const FORM = `root = Stack([intro, form])
intro = TextContent("Tell me where to send the report.")
form = Form("report", buttons, [email, format, notes])
email = FormControl("Email", Input("email", "name@example.com", "email", {required: true, email: true}))
format = FormControl("Format", Select("format", [SelectItem("pdf", "PDF"), SelectItem("csv", "CSV")], "Choose a format", {required: true}))
notes = FormControl("Notes", TextArea("notes", "Anything else?", 3), "Optional")
buttons = Buttons([Button("Send report", null, "primary"), Button("Cancel", Action([@ToAssistant("Never mind the report.")]), "secondary")])`;

describe("openui parser", () => {
  test("the guide's table example: columns pluck fields, @Each builds tags per row", () => {
    const { root, problems, program } = run(TABLE);
    assert.deepEqual(problems, []);
    assert.deepEqual(program.issues, []);
    const stack = element(root, "Stack");
    const [title, table] = stack.args[0] as Value[];
    assert.equal(element(title, "TextContent").args[0], "Open incidents");
    const columns = element(table, "Table").args[0] as Value[];
    const [service, opened, severity] = columns.map((column) => element(column, "Col"));
    assert.deepEqual(service?.args[1], ["api", "web"]);
    assert.deepEqual(opened?.args[1], ["2024-05-02", "2024-05-03"]);
    const tags = severity?.args[1] as Value[];
    assert.deepEqual(
      tags.map((tag) => element(tag, "Tag").args),
      [
        ["high", null, "sm", "danger"],
        ["low", null, "sm", "warning"],
      ],
    );
  });

  test("the guide's chart example: a card with a header and a bar chart of two series", () => {
    const { root } = run(CHART);
    const card = element((element(root, "Stack").args[0] as Value[])[0], "Card");
    const [header, chart] = card.args[0] as Value[];
    assert.deepEqual(element(header, "CardHeader").args, ["Revenue by quarter", "Thousands of euros"]);
    const bar = element(chart, "BarChart");
    assert.deepEqual(bar.args[0], ["Q1", "Q2", "Q3", "Q4"]);
    assert.deepEqual(
      (bar.args[1] as Value[]).map((series) => element(series, "Series").args),
      [
        ["2023", [120, 135, 150, 170]],
        ["2024", [140, 160, 155, 190]],
      ],
    );
    assert.deepEqual(bar.args.slice(2), ["grouped", "Quarter", "Revenue"]);
  });

  test("the guide's form example: buttons before fields, rules objects, an action", () => {
    const { root, problems } = run(FORM);
    assert.deepEqual(problems, []);
    const form = element((element(root, "Stack").args[0] as Value[])[1], "Form");
    assert.equal(form.args[0], "report");
    const buttons = element(form.args[1], "Buttons").args[0] as Value[];
    const cancel = element(buttons[1], "Button");
    assert.ok(cancel.args[1] instanceof UiAction);
    assert.deepEqual(cancel.args[1].steps, [{ type: "assistant", message: "Never mind the report." }]);
    const email = element(element((form.args[2] as Value[])[0], "FormControl").args[1], "Input");
    assert.deepEqual(email.args[3], { required: true, email: true });
  });

  test("every prefix of a block parses and evaluates without throwing", () => {
    for (const source of [TABLE, CHART, FORM]) {
      for (let end = 0; end <= source.length; end++) {
        const { root } = run(source.slice(0, end), {}, true);
        assert.ok(root === null || root instanceof UiElement || root instanceof Pending, `prefix ${end}`);
      }
    }
  });

  test("a streaming block renders what has arrived: closed strings grow, missing names are pending", () => {
    const { root, program } = run('root = Stack([title, table])\ntitle = TextContent("Open inc', {}, true);
    assert.ok(program.incomplete);
    assert.equal(program.statements.get("title")?.partial, true);
    const [title, table] = element(root, "Stack").args[0] as Value[];
    assert.equal(element(title, "TextContent").args[0], "Open inc");
    assert.ok(table instanceof Pending);
    assert.equal(table.name, "table");
  });

  test("a statement may continue over lines while its brackets are open", () => {
    const { root } = run('root = Stack([\n  TextContent("a"),\n  TextContent("b")\n])');
    assert.deepEqual(
      (element(root, "Stack").args[0] as Value[]).map((item) => element(item, "TextContent").args[0]),
      ["a", "b"],
    );
  });

  test("without root, the first component statement is the entry; junk lines are reported, not fatal", () => {
    const { root, program } = run('Here is your UI:\nmain = Card([TextContent("hi")])\n= broken');
    assert.equal(program.root, "main");
    assert.equal(element(root, "Card").type, "Card");
    assert.equal(program.issues.length, 2);
  });

  test("unknown components and names are reported; a cycle does not hang", () => {
    const { root, problems, program } = run(
      "root = Stack([Sparkle(1), a, missing])\na = Card([b])\nb = Stack([a])",
    );
    assert.equal(element((element(root, "Stack").args[0] as Value[])[0], "Sparkle").args[0], 1);
    assert.ok(problems.some((problem) => problem.message.includes("Sparkle")));
    assert.ok(problems.some((problem) => problem.message.includes("refers to itself")));
    assert.deepEqual(undefinedNames(program), ["missing"]);
  });

  test("strings keep escapes; a stray quote ends with its line", () => {
    assert.deepEqual(parseExpression('"a\\"b\\n\\u00e9"'), { k: "str", v: 'a"b\né' });
    const { root } = run('root = Stack([a, b])\na = TextContent("unterminated)\nb = TextContent("ok")');
    const [, b] = element(root, "Stack").args[0] as Value[];
    assert.equal(element(b, "TextContent").args[0], "ok");
  });

  test("deep nesting is cut instead of overflowing the stack", () => {
    const deep = `root = Stack(${"[".repeat(5_000)}${"]".repeat(5_000)})`;
    assert.doesNotThrow(() => run(deep));
  });
});

describe("openui expressions and functions", () => {
  const rows =
    '[{name: "b", price: 3, tag: "x"}, {name: "a", price: 10, tag: "yx"}, {name: "c", price: 5, tag: "z"}]';

  test("arithmetic, comparison, logic, ternaries and string concatenation", () => {
    assert.equal(calc("1 + 2 * 3 - 4 / 2"), 5);
    assert.equal(calc("(1 + 2) * 3 % 4"), 1);
    assert.equal(calc('"n=" + 2 + 3'), "n=23");
    assert.equal(calc("-2 * -3"), 6);
    assert.equal(calc("1 < 2 && 2 >= 2 || false"), true);
    assert.equal(calc('!true ? "a" : 1 == 1 ? "b" : "c"'), "b");
    assert.equal(calc('"3" == 3'), true);
    assert.equal(calc("1 / 0"), null);
  });

  test("fields, plucks, indexes and lengths", () => {
    assert.deepEqual(calc("data.price", rows), [3, 10, 5]);
    assert.equal(calc("data[1].name", rows), "a");
    assert.equal(calc("data[-1].name", rows), "c");
    assert.equal(calc("data.length", rows), 3);
    assert.deepEqual(calc("data.constructor", rows), [null, null, null]);
    assert.equal(calc("data[0].toString", rows), null);
    assert.equal(calc('{a: 1}["__proto__"]'), null);
  });

  test("the list and number functions", () => {
    assert.equal(calc("@Count(data)", rows), 3);
    assert.equal(calc("@Sum(data.price)", rows), 18);
    assert.equal(calc("@Avg(data.price)", rows), 6);
    assert.equal(calc("@Min(data.price)", rows), 3);
    assert.equal(calc("@Max(data.price)", rows), 10);
    assert.equal(calc("@First(data).name", rows), "b");
    assert.equal(calc("@Last(data).name", rows), "c");
    assert.deepEqual(calc('@Sort(data, "price", "desc").name', rows), ["a", "c", "b"]);
    assert.deepEqual(calc('@Sort(data, "name").name', rows), ["a", "b", "c"]);
    assert.deepEqual(calc('@Filter(data, "price", ">", 4).name', rows), ["a", "c"]);
    assert.deepEqual(calc('@Filter(data, "tag", "contains", "x").name', rows), ["b", "a"]);
    assert.equal(calc("@Round(3.14159, 2)"), 3.14);
    assert.equal(calc("@Abs(-2) + @Floor(2.7) + @Ceil(2.1)"), 7);
    assert.deepEqual(calc('@Each(data, "r", r.price * 2)', rows), [6, 20, 10]);
    assert.equal(calc("Count(data)", rows), 3, "a function written without @ still runs");
  });

  test("$variables read their declared defaults, then the changes", () => {
    const source = 'root = Stack([greeting])\n$name = "world"\ngreeting = TextContent("Hello " + $name)';
    const text = (changes: Record<string, Value>) =>
      element((element(run(source, changes).root, "Stack").args[0] as Value[])[0], "TextContent").args[0];
    assert.equal(text({}), "Hello world");
    assert.equal(text({ $name: "Ada" }), "Hello Ada");
  });

  test("inputs remember which argument is bound to which variable", () => {
    const { root } = run('root = Stack([Input("name", "Your name", "text", null, $name)])\n$name = ""');
    const input = element((element(root, "Stack").args[0] as Value[])[0], "Input");
    assert.equal(input.bindings[4], "$name");
    assert.equal(input.bindings[0], null);
  });

  test("@Set computes its value when it runs, from the state of that moment; @Reset names variables", () => {
    const { root } = run(
      'root = Stack([Button("+1", Action([@Set($count, $count + 1), @Reset($other), @OpenUrl("https://example.com")]))])\n$count = 0',
    );
    const action = element((element(root, "Stack").args[0] as Value[])[0], "Button").args[1];
    assert.ok(action instanceof UiAction);
    const [set, reset, url] = action.steps;
    assert.equal(set?.type, "set");
    if (set?.type === "set") {
      assert.equal(set.name, "$count");
      assert.equal(
        set.value((name) => (name === "$count" ? 41 : null)),
        42,
      );
    }
    assert.deepEqual(reset, { type: "reset", names: ["$other"] });
    assert.deepEqual(url, { type: "url", url: "https://example.com" });
  });

  test("toText formats what a text component shows", () => {
    assert.equal(toText(0.1 + 0.2), "0.3");
    assert.equal(toText([1, "a", null]), "1, a, ");
    assert.equal(toText(null), "");
  });
});

describe("openui forms", () => {
  test("rules", () => {
    assert.equal(checkRules("", { required: true }), "Required");
    assert.equal(checkRules("", { email: true }), null);
    assert.equal(checkRules("nope", { email: true }), "Enter an email address");
    assert.equal(checkRules("a@b.co", { required: true, email: true }), null);
    assert.equal(checkRules("x", { url: true }), "Enter a URL");
    assert.equal(checkRules("https://a.b", { url: true }), null);
    assert.equal(checkRules("abc", { numeric: true }), "Enter a number");
    assert.equal(checkRules("0", { min: 1 }), "At least 1");
    assert.equal(checkRules("11", { max: 10 }), "At most 10");
    assert.equal(checkRules("a", { minLength: 2 }), "At least 2 characters");
    assert.equal(checkRules("abc", { maxLength: 2 }), "At most 2 characters");
    assert.equal(checkRules("abc", { pattern: "^[A-Z]+$" }), "Not in the expected format");
    assert.equal(checkRules("ABC", { pattern: "^[A-Z]+$" }), null);
    assert.equal(checkRules("x", { pattern: "(" }), null, "an unreadable pattern checks nothing");
  });

  test("a button's message carries its form's values", () => {
    assert.equal(composeMessage("Go", null), "Go");
    assert.equal(
      composeMessage("Send report", {
        name: "report",
        values: [
          ["email", "a@b.co"],
          ["notes", ""],
        ],
      }),
      'Send report\n\nForm "report":\n- email: a@b.co\n- notes: (empty)',
    );
  });
});
