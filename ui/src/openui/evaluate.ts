// Evaluation of a parsed OpenUI block: statements are resolved from `root` down, `$variables` read the
// current state, `@functions` run, and component calls become `UiElement` values the renderer draws. Like
// the parser it never throws: what cannot be computed is null, and what is not defined (yet) is `Pending`.

import type { Expr, Program } from "./parse.js";

export type Value =
  | null
  | boolean
  | number
  | string
  | readonly Value[]
  | { readonly [key: string]: Value }
  | UiElement
  | UiAction
  | Pending;

/** A component call: its name, its positional arguments, and which arguments were `$variables`. */
export class UiElement {
  constructor(
    readonly type: string,
    readonly args: readonly Value[],
    /** For each argument written as `$name`, that name (for `$bind` arguments). */
    readonly bindings: readonly (string | null)[],
  ) {}

  arg(index: number): Value {
    return this.args[index] ?? null;
  }
}

export type ActionStep =
  | { readonly type: "assistant"; readonly message: string }
  | { readonly type: "url"; readonly url: string }
  | { readonly type: "set"; readonly name: string; readonly value: (state: StateReader) => Value }
  | { readonly type: "reset"; readonly names: readonly string[] };

/** `Action([...])` or a single `@ToAssistant` / `@OpenUrl` / `@Set` / `@Reset` step. */
export class UiAction {
  constructor(readonly steps: readonly ActionStep[]) {}
}

/** A name that is not defined: while a block streams, one that has not arrived yet. */
export class Pending {
  constructor(readonly name: string) {}
}

export type StateReader = (name: string) => Value;

export interface Problem {
  readonly message: string;
}

const MAX_DEPTH = 200;
/** Evaluation steps per pass: a pathological block stops short instead of freezing the page. */
const MAX_STEPS = 200_000;
const MAX_ITEMS = 5_000;

export const COMPONENTS = new Set([
  "Stack",
  "Tabs",
  "TabItem",
  "Accordion",
  "AccordionItem",
  "Steps",
  "StepsItem",
  "Carousel",
  "Separator",
  "Modal",
  "Card",
  "CardHeader",
  "TextContent",
  "MarkDownRenderer",
  "Callout",
  "TextCallout",
  "Image",
  "ImageBlock",
  "ImageGallery",
  "CodeBlock",
  "Table",
  "Col",
  "BarChart",
  "HorizontalBarChart",
  "LineChart",
  "AreaChart",
  "RadarChart",
  "Series",
  "PieChart",
  "RadialChart",
  "SingleStackedBarChart",
  "Slice",
  "ScatterChart",
  "ScatterSeries",
  "Point",
  "TagBlock",
  "Tag",
  "Form",
  "FormControl",
  "Input",
  "TextArea",
  "Select",
  "SelectItem",
  "Buttons",
  "Button",
]);

export function isRecord(value: Value | undefined): value is { readonly [key: string]: Value } {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof UiElement) &&
    !(value instanceof UiAction) &&
    !(value instanceof Pending)
  );
}

export function isList(value: Value | undefined): value is readonly Value[] {
  return Array.isArray(value);
}

export function toNumber(value: Value | undefined): number {
  if (typeof value === "number") {
    return Number.isFinite(value) ? value : 0;
  }
  if (typeof value === "string" && value.trim() !== "") {
    const number = Number(value);
    return Number.isFinite(number) ? number : 0;
  }
  return value === true ? 1 : 0;
}

function isNumeric(value: Value): boolean {
  return (
    typeof value === "number" ||
    (typeof value === "string" && value.trim() !== "" && !Number.isNaN(Number(value)))
  );
}

export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) {
    return "";
  }
  return Number.isInteger(value) ? String(value) : String(Math.round(value * 1e6) / 1e6);
}

/** The text of a value, as a text component shows it. */
export function toText(value: Value | undefined): string {
  if (value === null || value === undefined || value instanceof Pending || value instanceof UiAction) {
    return "";
  }
  if (typeof value === "string") {
    return value;
  }
  if (typeof value === "number") {
    return formatNumber(value);
  }
  if (typeof value === "boolean") {
    return value ? "true" : "false";
  }
  if (value instanceof UiElement) {
    return value.args.map(toText).filter(Boolean).join(" ");
  }
  if (isList(value)) {
    return value.map(toText).join(", ");
  }
  try {
    return JSON.stringify(value);
  } catch {
    return "";
  }
}

export function truthy(value: Value | undefined): boolean {
  if (isList(value)) {
    return value.length > 0;
  }
  if (value instanceof Pending) {
    return false;
  }
  return Boolean(value);
}

function field(value: Value, name: string): Value {
  if (isList(value)) {
    if (name === "length") {
      return value.length;
    }
    return value.map((item) => field(item, name)); // a field of a list is that field of every element
  }
  if (typeof value === "string" && name === "length") {
    return value.length;
  }
  if (isRecord(value) && Object.hasOwn(value, name)) {
    return value[name] ?? null;
  }
  return null;
}

function path(value: Value, name: string): Value {
  let current = value;
  for (const part of name.split(".")) {
    current = isList(current) ? null : field(current, part);
  }
  return current;
}

function loosely(a: Value, b: Value): boolean {
  if (a === b) {
    return true;
  }
  if ((typeof a === "number" || typeof a === "string") && (typeof b === "number" || typeof b === "string")) {
    return isNumeric(a) && isNumeric(b) ? Number(a) === Number(b) : String(a) === String(b);
  }
  return false;
}

function compare(a: Value, b: Value): number {
  if (isNumeric(a) && isNumeric(b)) {
    return toNumber(a) - toNumber(b);
  }
  return toText(a).localeCompare(toText(b));
}

function numbers(value: Value): number[] {
  return isList(value) ? value.map(toNumber) : [];
}

function binary(op: string, a: Value, b: Value): Value {
  switch (op) {
    case "+":
      if (typeof a === "string" || typeof b === "string") {
        return toText(a) + toText(b);
      }
      return toNumber(a) + toNumber(b);
    case "-":
      return toNumber(a) - toNumber(b);
    case "*":
      return toNumber(a) * toNumber(b);
    case "/":
      return toNumber(b) === 0 ? null : toNumber(a) / toNumber(b);
    case "%":
      return toNumber(b) === 0 ? null : toNumber(a) % toNumber(b);
    case "==":
      return loosely(a, b);
    case "!=":
      return !loosely(a, b);
    case "<":
      return compare(a, b) < 0;
    case ">":
      return compare(a, b) > 0;
    case "<=":
      return compare(a, b) <= 0;
    case ">=":
      return compare(a, b) >= 0;
    default:
      return null;
  }
}

function filter(list: Value, fieldName: Value, op: Value, expected: Value): Value {
  if (!isList(list)) {
    return [];
  }
  const name = toText(fieldName);
  return list.filter((item) => {
    const actual = name === "" ? item : path(item, name);
    switch (toText(op) || "==") {
      case "==":
        return loosely(actual, expected);
      case "!=":
        return !loosely(actual, expected);
      case ">":
        return toNumber(actual) > toNumber(expected);
      case "<":
        return toNumber(actual) < toNumber(expected);
      case ">=":
        return toNumber(actual) >= toNumber(expected);
      case "<=":
        return toNumber(actual) <= toNumber(expected);
      case "contains":
        return toText(actual).toLowerCase().includes(toText(expected).toLowerCase());
      default:
        return false;
    }
  });
}

/** The `@functions` whose arguments are plain values. */
const FUNCTIONS: Record<string, (args: readonly Value[]) => Value> = {
  Count: ([list]) => (isList(list) ? list.length : 0),
  First: ([list]) => (isList(list) ? (list[0] ?? null) : null),
  Last: ([list]) => (isList(list) ? (list[list.length - 1] ?? null) : null),
  Sum: ([list]) => numbers(list ?? null).reduce((sum, n) => sum + n, 0),
  Avg: ([list]) => {
    const all = numbers(list ?? null);
    return all.length === 0 ? 0 : all.reduce((sum, n) => sum + n, 0) / all.length;
  },
  Min: ([list]) => {
    const all = numbers(list ?? null);
    return all.length === 0 ? 0 : Math.min(...all);
  },
  Max: ([list]) => {
    const all = numbers(list ?? null);
    return all.length === 0 ? 0 : Math.max(...all);
  },
  Sort: ([list, fieldName, direction]) => {
    if (!isList(list)) {
      return [];
    }
    const name = toText(fieldName ?? null);
    const sign = toText(direction ?? null) === "desc" ? -1 : 1;
    const key = (item: Value) => (name === "" ? item : path(item, name));
    return [...list].sort((a, b) => sign * compare(key(a), key(b)));
  },
  Filter: ([list, fieldName, op, expected]) =>
    filter(list ?? null, fieldName ?? null, op ?? null, expected ?? null),
  Round: ([n, decimals]) => {
    const factor = 10 ** Math.max(0, Math.min(12, Math.trunc(toNumber(decimals ?? 0))));
    return Math.round(toNumber(n ?? 0) * factor) / factor;
  },
  Abs: ([n]) => Math.abs(toNumber(n ?? 0)),
  Floor: ([n]) => Math.floor(toNumber(n ?? 0)),
  Ceil: ([n]) => Math.ceil(toNumber(n ?? 0)),
  ToAssistant: ([message]) => new UiAction([{ type: "assistant", message: toText(message ?? null) }]),
  OpenUrl: ([url]) => new UiAction([{ type: "url", url: toText(url ?? null) }]),
  Action: ([steps]) => {
    const all: ActionStep[] = [];
    for (const step of isList(steps) ? steps : [steps ?? null]) {
      if (step instanceof UiAction) {
        all.push(...step.steps);
      }
    }
    return new UiAction(all);
  },
};

/** Names the evaluator treats as functions, with or without `@`. */
export const FUNCTION_NAMES = new Set([...Object.keys(FUNCTIONS), "Each", "Set", "Reset"]);

class Evaluator {
  readonly problems = new Map<string, Problem>();
  readonly #cache = new Map<string, Value>();
  readonly #visiting = new Set<string>();
  #steps = 0;
  #depth = 0;

  constructor(
    readonly program: Program,
    readonly state: StateReader,
  ) {}

  #problem(key: string, message: string): void {
    if (!this.problems.has(key)) {
      this.problems.set(key, { message });
    }
  }

  statement(name: string): Value {
    const cached = this.#cache.get(name);
    if (cached !== undefined) {
      return cached;
    }
    const statement = this.program.statements.get(name);
    if (statement === undefined) {
      return new Pending(name);
    }
    if (this.#visiting.has(name)) {
      this.#problem(`cycle:${name}`, `${name} refers to itself`);
      return null;
    }
    this.#visiting.add(name);
    const value = this.eval(statement.expr, null);
    this.#visiting.delete(name);
    this.#cache.set(name, value);
    return value;
  }

  eval(expr: Expr, scope: ReadonlyMap<string, Value> | null): Value {
    if (++this.#steps > MAX_STEPS || this.#depth > MAX_DEPTH) {
      this.#problem("limit", "the block is too large or too deeply nested to show whole");
      return null;
    }
    this.#depth++;
    try {
      return this.#eval(expr, scope);
    } finally {
      this.#depth--;
    }
  }

  #eval(expr: Expr, scope: ReadonlyMap<string, Value> | null): Value {
    switch (expr.k) {
      case "str":
      case "num":
      case "bool":
        return expr.v;
      case "null":
        return null;
      case "arr":
        return expr.items.slice(0, MAX_ITEMS).map((item) => this.eval(item, scope));
      case "obj": {
        const record: Record<string, Value> = {};
        for (const [key, value] of expr.entries) {
          if (key !== "__proto__") {
            record[key] = this.eval(value, scope);
          }
        }
        return record;
      }
      case "ref": {
        if (scope?.has(expr.name)) {
          return scope.get(expr.name) ?? null;
        }
        return this.statement(expr.name);
      }
      case "state":
        return this.state(expr.name);
      case "member":
        return field(this.eval(expr.obj, scope), expr.field);
      case "index": {
        const target = this.eval(expr.obj, scope);
        const index = this.eval(expr.index, scope);
        if (isList(target)) {
          const position = Math.trunc(toNumber(index));
          return target[position < 0 ? target.length + position : position] ?? null;
        }
        return field(target, toText(index));
      }
      case "unary": {
        const operand = this.eval(expr.operand, scope);
        return expr.op === "!" ? !truthy(operand) : -toNumber(operand);
      }
      case "binary": {
        const left = this.eval(expr.left, scope);
        if (expr.op === "&&") {
          return truthy(left) ? this.eval(expr.right, scope) : left;
        }
        if (expr.op === "||") {
          return truthy(left) ? left : this.eval(expr.right, scope);
        }
        return binary(expr.op, left, this.eval(expr.right, scope));
      }
      case "cond":
        return truthy(this.eval(expr.test, scope))
          ? this.eval(expr.then, scope)
          : this.eval(expr.else, scope);
      case "call":
        return this.#call(expr, scope);
    }
  }

  #call(expr: Extract<Expr, { k: "call" }>, scope: ReadonlyMap<string, Value> | null): Value {
    const { name, args } = expr;
    const isFunction = expr.at || name === "Action" || (!COMPONENTS.has(name) && FUNCTION_NAMES.has(name));
    if (isFunction) {
      if (name === "Each") {
        return this.#each(args, scope);
      }
      if (name === "Set") {
        const target = args[0];
        const valueExpr = args[1];
        if (target?.k !== "state") {
          this.#problem(`set:${expr.name}`, "@Set needs a $variable first");
          return null;
        }
        const program = this.program;
        return new UiAction([
          {
            type: "set",
            name: target.name,
            value: (state) =>
              valueExpr === undefined ? null : new Evaluator(program, state).eval(valueExpr, scope),
          },
        ]);
      }
      if (name === "Reset") {
        const names = args.flatMap((arg) => (arg.k === "state" ? [arg.name] : []));
        return new UiAction([{ type: "reset", names }]);
      }
      const run = FUNCTIONS[name];
      if (run === undefined) {
        this.#problem(`function:${name}`, `unknown function @${name}`);
        return null;
      }
      return run(args.map((arg) => this.eval(arg, scope)));
    }
    if (!COMPONENTS.has(name)) {
      this.#problem(`component:${name}`, `unknown component ${name}`);
    }
    return new UiElement(
      name,
      args.map((arg) => this.eval(arg, scope)),
      args.map((arg) => (arg.k === "state" ? arg.name : null)),
    );
  }

  #each(args: readonly Expr[], scope: ReadonlyMap<string, Value> | null): Value {
    const [listExpr, nameExpr, template] = args;
    if (listExpr === undefined || template === undefined) {
      return [];
    }
    const list = this.eval(listExpr, scope);
    const variable = nameExpr === undefined ? "" : toText(this.eval(nameExpr, scope));
    if (!isList(list) || variable === "") {
      return [];
    }
    return list.slice(0, MAX_ITEMS).map((item) => {
      const inner = new Map(scope ?? []);
      inner.set(variable, item);
      return this.eval(template, inner);
    });
  }
}

export interface Evaluation {
  /** The root's value (null when the block has no root yet). */
  readonly root: Value;
  readonly problems: readonly Problem[];
}

/** The initial value of every declared `$variable`. */
export function stateDefaults(program: Program): Record<string, Value> {
  const defaults: Record<string, Value> = {};
  const evaluator = new Evaluator(program, (name) => defaults[name] ?? null);
  for (const [name, statement] of program.statements) {
    if (name.startsWith("$")) {
      defaults[name] = evaluator.eval(statement.expr, null);
    }
  }
  return defaults;
}

/** Evaluates the block from its root with `state` (the `$variables`: declared defaults and user changes). */
export function evaluateProgram(program: Program, state: StateReader): Evaluation {
  const evaluator = new Evaluator(program, state);
  let root: Value = null;
  try {
    root = program.root === null ? null : evaluator.statement(program.root);
  } catch {
    root = null;
  }
  return { root, problems: [...evaluator.problems.values()] };
}

/** Names referenced somewhere in the block that no statement defines. */
export function undefinedNames(program: Program): string[] {
  const missing = new Set<string>();
  const visit = (expr: Expr, loopNames: ReadonlySet<string>): void => {
    switch (expr.k) {
      case "ref":
        if (!loopNames.has(expr.name) && !program.statements.has(expr.name)) {
          missing.add(expr.name);
        }
        return;
      case "arr":
        for (const item of expr.items) {
          visit(item, loopNames);
        }
        return;
      case "obj":
        for (const [, value] of expr.entries) {
          visit(value, loopNames);
        }
        return;
      case "member":
        visit(expr.obj, loopNames);
        return;
      case "index":
        visit(expr.obj, loopNames);
        visit(expr.index, loopNames);
        return;
      case "unary":
        visit(expr.operand, loopNames);
        return;
      case "binary":
        visit(expr.left, loopNames);
        visit(expr.right, loopNames);
        return;
      case "cond":
        visit(expr.test, loopNames);
        visit(expr.then, loopNames);
        visit(expr.else, loopNames);
        return;
      case "call": {
        if (expr.name === "Each" && expr.args[1]?.k === "str") {
          const [list, , template] = expr.args;
          if (list !== undefined) {
            visit(list, loopNames);
          }
          if (template !== undefined) {
            visit(template, new Set([...loopNames, expr.args[1].v]));
          }
          return;
        }
        for (const arg of expr.args) {
          visit(arg, loopNames);
        }
        return;
      }
      default:
        return;
    }
  };
  for (const statement of program.statements.values()) {
    visit(statement.expr, new Set());
  }
  return [...missing];
}

/** The first rule `value` breaks (`Rules` in the guide), as a message; null when it keeps them all. */
export function checkRules(value: string, rules: Value): string | null {
  if (!isRecord(rules)) {
    return null;
  }
  const text = value.trim();
  if (text === "") {
    return truthy(rules.required ?? null) ? "Required" : null;
  }
  if (truthy(rules.email ?? null) && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text)) {
    return "Enter an email address";
  }
  if (truthy(rules.url ?? null)) {
    try {
      new URL(text);
    } catch {
      return "Enter a URL";
    }
  }
  const numeric =
    truthy(rules.numeric ?? null) || (rules.min ?? null) !== null || (rules.max ?? null) !== null;
  if (numeric && Number.isNaN(Number(text))) {
    return "Enter a number";
  }
  if ((rules.min ?? null) !== null && Number(text) < toNumber(rules.min ?? null)) {
    return `At least ${toText(rules.min ?? null)}`;
  }
  if ((rules.max ?? null) !== null && Number(text) > toNumber(rules.max ?? null)) {
    return `At most ${toText(rules.max ?? null)}`;
  }
  if ((rules.minLength ?? null) !== null && text.length < toNumber(rules.minLength ?? null)) {
    return `At least ${toText(rules.minLength ?? null)} characters`;
  }
  if ((rules.maxLength ?? null) !== null && text.length > toNumber(rules.maxLength ?? null)) {
    return `At most ${toText(rules.maxLength ?? null)} characters`;
  }
  if (typeof rules.pattern === "string") {
    try {
      if (!new RegExp(rules.pattern).test(text)) {
        return "Not in the expected format";
      }
    } catch {
      return null; // an unreadable pattern checks nothing
    }
  }
  return null;
}

/** The message a button sends: its text, then the form's values, one per line. */
export function composeMessage(
  text: string,
  form: { readonly name: string; readonly values: readonly (readonly [string, string])[] } | null,
): string {
  if (form === null || form.values.length === 0) {
    return text;
  }
  const lines = form.values.map(([name, value]) => `- ${name}: ${value === "" ? "(empty)" : value}`);
  return `${text}\n\n${form.name ? `Form "${form.name}":` : "Form:"}\n${lines.join("\n")}`;
}
