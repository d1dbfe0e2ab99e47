// The OpenUI language (the guide the agent gets: `OPENUI_GUIDE` in crates/agent/src/capabilities/openui.rs),
// parsed tolerantly: a block that is still streaming, or is malformed, yields every statement that can be
// read, and parsing never throws. One statement per line (`name = Expression`); a line whose brackets are
// still open continues on the next one. An unfinished last statement is closed (its string and brackets)
// and kept, marked partial, so text fills in as it streams.

export type Expr =
  | { readonly k: "str"; readonly v: string }
  | { readonly k: "num"; readonly v: number }
  | { readonly k: "bool"; readonly v: boolean }
  | { readonly k: "null" }
  | { readonly k: "arr"; readonly items: readonly Expr[] }
  | { readonly k: "obj"; readonly entries: readonly (readonly [string, Expr])[] }
  /** A reference to a statement, or to an `@Each` loop variable. */
  | { readonly k: "ref"; readonly name: string }
  /** A `$variable` (the name keeps its `$`). */
  | { readonly k: "state"; readonly name: string }
  /** `Name(args)`, or `@Name(args)` (`at`). */
  | { readonly k: "call"; readonly name: string; readonly at: boolean; readonly args: readonly Expr[] }
  | { readonly k: "member"; readonly obj: Expr; readonly field: string }
  | { readonly k: "index"; readonly obj: Expr; readonly index: Expr }
  | { readonly k: "unary"; readonly op: "!" | "-"; readonly operand: Expr }
  | { readonly k: "binary"; readonly op: BinaryOp; readonly left: Expr; readonly right: Expr }
  | { readonly k: "cond"; readonly test: Expr; readonly then: Expr; readonly else: Expr };

export type BinaryOp = "||" | "&&" | "==" | "!=" | "<" | ">" | "<=" | ">=" | "+" | "-" | "*" | "/" | "%";

export interface Statement {
  /** The name, `$`-prefixed for a state variable. */
  readonly name: string;
  readonly expr: Expr;
  /** 1-based line where the statement starts. */
  readonly line: number;
  /** The statement was cut off (the block is still streaming, or ended early) and was closed to be read. */
  readonly partial: boolean;
}

export interface ParseIssue {
  readonly line: number;
  readonly message: string;
}

export interface Program {
  /** By name; a name defined twice keeps its last definition. State variables are keyed `$name`. */
  readonly statements: ReadonlyMap<string, Statement>;
  /** The entry point: `root`, else the first statement that calls a component; null when there is none. */
  readonly root: string | null;
  readonly issues: readonly ParseIssue[];
  /** The source ended inside a statement. */
  readonly incomplete: boolean;
}

const NULL: Expr = { k: "null" };
/** Deeper nesting is cut (a hostile or broken block must not overflow the stack). */
const MAX_DEPTH = 200;

type Token =
  | { readonly t: "str"; readonly v: string }
  | { readonly t: "num"; readonly v: number }
  | { readonly t: "name"; readonly v: string }
  | { readonly t: "state"; readonly v: string }
  | { readonly t: "at"; readonly v: string }
  | { readonly t: "op"; readonly v: string }
  | { readonly t: "end" };

const END: Token = { t: "end" };
const TWO_CHAR_OPS = new Set(["==", "!=", "<=", ">=", "&&", "||"]);
const ONE_CHAR_OPS = new Set([..."()[]{},:.?!<>+-*/%="]);
const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", "/": "/" };

function isNameStart(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z_]/.test(c);
}

function isNameChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_]/.test(c);
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

/** Reads a string literal from `start` (its opening quote); an unclosed string runs to the end. */
function readString(src: string, start: number): { value: string; end: number } {
  const quote = src[start];
  let value = "";
  let i = start + 1;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === quote) {
      return { value, end: i + 1 };
    }
    if (c === "\n") {
      return { value, end: i }; // an unclosed string ends with its line
    }
    if (c === "\\" && i + 1 < src.length) {
      const e = src[i + 1] as string;
      if (e === "u" && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 2, i + 6))) {
        value += String.fromCharCode(Number.parseInt(src.slice(i + 2, i + 6), 16));
        i += 6;
        continue;
      }
      value += ESCAPES[e] ?? e;
      i += 2;
      continue;
    }
    if (c !== "\\") {
      value += c;
    }
    i++;
  }
  return { value, end: src.length };
}

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === " " || c === "\t" || c === "\r" || c === "\n") {
      i++;
    } else if (c === '"' || c === "'") {
      const { value, end } = readString(src, i);
      tokens.push({ t: "str", v: value });
      i = end;
    } else if (isDigit(c) || (c === "." && isDigit(src[i + 1]))) {
      const match = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i)) as RegExpExecArray;
      tokens.push({ t: "num", v: Number(match[0]) });
      i += match[0].length;
    } else if ((c === "$" || c === "@") && isNameStart(src[i + 1])) {
      let j = i + 1;
      while (isNameChar(src[j])) {
        j++;
      }
      tokens.push(c === "$" ? { t: "state", v: src.slice(i, j) } : { t: "at", v: src.slice(i + 1, j) });
      i = j;
    } else if (isNameStart(c)) {
      let j = i;
      while (isNameChar(src[j])) {
        j++;
      }
      tokens.push({ t: "name", v: src.slice(i, j) });
      i = j;
    } else if (TWO_CHAR_OPS.has(src.slice(i, i + 2))) {
      tokens.push({ t: "op", v: src.slice(i, i + 2) });
      i += 2;
    } else if (ONE_CHAR_OPS.has(c)) {
      tokens.push({ t: "op", v: c });
      i++;
    } else {
      i++; // anything else (#, emoji, a stray backtick) is skipped
    }
  }
  return tokens;
}

const PRECEDENCE: Record<string, number> = {
  "||": 2,
  "&&": 3,
  "==": 4,
  "!=": 4,
  "<": 5,
  ">": 5,
  "<=": 5,
  ">=": 5,
  "+": 6,
  "-": 6,
  "*": 7,
  "/": 7,
  "%": 7,
};

/** A Pratt parser over one statement's tokens. Anything it cannot read becomes null; it never throws. */
class ExprParser {
  #pos = 0;
  #depth = 0;

  constructor(private readonly tokens: readonly Token[]) {}

  get done(): boolean {
    return this.#pos >= this.tokens.length;
  }

  #peek(offset = 0): Token {
    return this.tokens[this.#pos + offset] ?? END;
  }

  #isOp(value: string, offset = 0): boolean {
    const token = this.#peek(offset);
    return token.t === "op" && token.v === value;
  }

  #eat(value: string): boolean {
    if (this.#isOp(value)) {
      this.#pos++;
      return true;
    }
    return false;
  }

  expression(minPrecedence = 0): Expr {
    if (this.#depth > MAX_DEPTH) {
      this.#pos = this.tokens.length;
      return NULL;
    }
    this.#depth++;
    try {
      let left = this.#postfix(this.#prefix());
      for (;;) {
        const token = this.#peek();
        if (token.t !== "op") {
          return left;
        }
        if (token.v === "?") {
          if (minPrecedence >= 1) {
            return left;
          }
          this.#pos++;
          const then = this.expression(0);
          this.#eat(":");
          left = { k: "cond", test: left, then, else: this.expression(0) };
          continue;
        }
        const precedence = PRECEDENCE[token.v];
        if (precedence === undefined || precedence <= minPrecedence) {
          return left;
        }
        this.#pos++;
        left = { k: "binary", op: token.v as BinaryOp, left, right: this.expression(precedence) };
      }
    } finally {
      this.#depth--;
    }
  }

  #prefix(): Expr {
    const token = this.#peek();
    this.#pos++;
    switch (token.t) {
      case "str":
        return { k: "str", v: token.v };
      case "num":
        return { k: "num", v: token.v };
      case "state":
        return { k: "state", name: token.v };
      case "at":
        return this.#isOp("(") ? this.#call(token.v, true) : { k: "ref", name: token.v };
      case "name":
        if (token.v === "true" || token.v === "false") {
          return { k: "bool", v: token.v === "true" };
        }
        if (token.v === "null") {
          return NULL;
        }
        return this.#isOp("(") ? this.#call(token.v, false) : { k: "ref", name: token.v };
      case "op":
        switch (token.v) {
          case "[":
            return { k: "arr", items: this.#list("]") };
          case "{":
            return this.#object();
          case "(": {
            const inner = this.expression(0);
            this.#eat(")");
            return inner;
          }
          case "!":
          case "-":
            return { k: "unary", op: token.v, operand: this.#postfix(this.#prefix()) };
          default:
            return NULL;
        }
      default:
        return NULL;
    }
  }

  #postfix(expr: Expr): Expr {
    let result = expr;
    for (;;) {
      if (this.#isOp(".")) {
        this.#pos++;
        const field = this.#peek();
        if (field.t === "name" || field.t === "num" || field.t === "str") {
          this.#pos++;
          result = { k: "member", obj: result, field: String(field.v) };
        } else if (field.t === "state") {
          this.#pos++;
          result = { k: "member", obj: result, field: field.v.slice(1) };
        }
      } else if (this.#isOp("[")) {
        this.#pos++;
        const index = this.expression(0);
        this.#eat("]");
        result = { k: "index", obj: result, index };
      } else {
        return result;
      }
    }
  }

  #call(name: string, at: boolean): Expr {
    this.#pos++; // (
    return { k: "call", name, at, args: this.#list(")") };
  }

  /** Comma-separated expressions up to `close` (or the end of the tokens). */
  #list(close: string): Expr[] {
    const items: Expr[] = [];
    while (!this.done && !this.#eat(close)) {
      if (this.#eat(",")) {
        continue;
      }
      const before = this.#pos;
      items.push(this.expression(0));
      if (this.#pos === before) {
        this.#pos++; // a token no expression starts with: skip it
      }
    }
    return items;
  }

  #object(): Expr {
    const entries: (readonly [string, Expr])[] = [];
    while (!this.done && !this.#eat("}")) {
      if (this.#eat(",")) {
        continue;
      }
      const key = this.#peek();
      this.#pos++;
      if (key.t === "end" || key.t === "op") {
        continue;
      }
      const name = key.t === "state" ? key.v.slice(1) : String(key.v);
      if (!this.#eat(":")) {
        entries.push([name, NULL]);
        continue;
      }
      entries.push([name, this.expression(0)]);
    }
    return { k: "obj", entries };
  }
}

/** Closes an unfinished string and the brackets left open at the end of `text`. */
function closeOpen(text: string): string {
  const open: string[] = [];
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === "\\") {
        i++;
      } else if (c === quote || c === "\n") {
        quote = null;
      }
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === "(" || c === "[" || c === "{") {
      open.push(c);
    } else if ((c === ")" || c === "]" || c === "}") && open.length > 0) {
      open.pop();
    }
  }
  let closed = text;
  if (quote !== null) {
    closed += text.endsWith("\\") ? `\\${quote}` : quote;
  }
  for (const bracket of open.reverse()) {
    closed += bracket === "(" ? ")" : bracket === "[" ? "]" : "}";
  }
  return closed;
}

const STATEMENT_HEAD = /^[ \t]*(\$?[A-Za-z_][A-Za-z0-9_]*)[ \t]*=(?!=)/;

interface RawStatement {
  readonly text: string;
  readonly line: number;
  /** The text ended before the statement did (open brackets or string, or no newline while streaming). */
  readonly cut: boolean;
}

/** Splits the source at newlines outside brackets and strings. */
function splitStatements(src: string, streaming: boolean): RawStatement[] {
  const statements: RawStatement[] = [];
  let depth = 0;
  let quote: string | null = null;
  let start = 0;
  let line = 1;
  let startLine = 1;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === "\n") {
      line++;
    }
    if (quote !== null) {
      if (c === "\\") {
        i++;
        if (src[i] === "\n") {
          line++;
        }
      } else if (c === quote) {
        quote = null;
      } else if (c === "\n") {
        quote = null; // strings do not span lines: a stray quote must not swallow the rest
      }
      if (quote !== null || c !== "\n") {
        continue;
      }
    }
    if (c === '"' || c === "'") {
      quote = c;
    } else if (c === "(" || c === "[" || c === "{") {
      depth++;
    } else if ((c === ")" || c === "]" || c === "}") && depth > 0) {
      depth--;
    } else if (c === "\n" && (depth === 0 || STATEMENT_HEAD.test(src.slice(i + 1, i + 200)))) {
      // A line that starts `name =` starts a statement even after a line left brackets open: a broken line
      // does not swallow the next ones (an assignment cannot continue an expression).
      statements.push({ text: src.slice(start, i), line: startLine, cut: depth > 0 });
      depth = 0;
      start = i + 1;
      startLine = line;
    }
  }
  const tail = src.slice(start);
  if (tail.trim() !== "") {
    statements.push({ text: tail, line: startLine, cut: depth > 0 || quote !== null || streaming });
  }
  return statements;
}

/** Parses one expression (all of `text`), closing what is left open. */
export function parseExpression(text: string): Expr {
  try {
    return new ExprParser(tokenize(closeOpen(text))).expression(0);
  } catch {
    return NULL;
  }
}

function isComponentCall(expr: Expr): boolean {
  return expr.k === "call" && !expr.at && /^[A-Z]/.test(expr.name) && expr.name !== "Action";
}

/**
 * Parses a block. `streaming`: more text may follow, so the last line, even with its brackets closed, may be
 * unfinished (`x = 12` on its way to `x = 120`); it is kept, marked partial.
 */
export function parseProgram(source: string, streaming = false): Program {
  const statements = new Map<string, Statement>();
  const issues: ParseIssue[] = [];
  let incomplete = false;
  for (const raw of splitStatements(source, streaming)) {
    const trimmed = raw.text.trim();
    if (trimmed === "" || trimmed.startsWith("//") || trimmed.startsWith("#") || trimmed.startsWith("```")) {
      continue;
    }
    const head = STATEMENT_HEAD.exec(raw.text);
    if (head === null) {
      if (!raw.cut) {
        issues.push({ line: raw.line, message: `not a statement (name = Expression): ${clip(trimmed)}` });
      }
      incomplete ||= raw.cut;
      continue;
    }
    const body = raw.text.slice(head[0].length);
    incomplete ||= raw.cut;
    if (body.trim() === "") {
      if (!raw.cut) {
        issues.push({ line: raw.line, message: `${head[1]} has no value` });
      }
      continue;
    }
    try {
      const parser = new ExprParser(tokenize(raw.cut ? closeOpen(body) : body));
      const expr = parser.expression(0);
      if (!parser.done && !raw.cut) {
        issues.push({ line: raw.line, message: `${head[1]}: unexpected text after the value` });
      }
      const name = head[1] as string;
      statements.delete(name); // a redefinition moves to the end
      statements.set(name, { name, expr, line: raw.line, partial: raw.cut });
    } catch {
      issues.push({ line: raw.line, message: `${head[1]} could not be read` });
    }
  }
  let root: string | null = statements.has("root") ? "root" : null;
  if (root === null) {
    for (const statement of statements.values()) {
      if (!statement.name.startsWith("$") && isComponentCall(statement.expr)) {
        root = statement.name;
        break;
      }
    }
  }
  return { statements, root, issues, incomplete };
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}
