// One ```openui block: parsed and evaluated on every change of its text (it grows while it streams), its
// `$variables` kept here, drawn from `root`. Under it, the problems found once it is complete and a switch to
// its source. Whatever fails, the block falls back to its source: it never blanks the page.

import { Component, type ReactNode, useCallback, useMemo, useState } from "react";
import { CodeBlock } from "../atoms/CodeBlock.js";
import { renderValue } from "./components.js";
import { evaluateProgram, stateDefaults, undefinedNames, type Value } from "./evaluate.js";
import { parseProgram } from "./parse.js";
import { type Runtime, RuntimeContext } from "./runtime.js";

class Guard extends Component<
  { readonly source: string; readonly children: ReactNode },
  { readonly failed: boolean }
> {
  override state = { failed: false };

  static getDerivedStateFromError(): { failed: boolean } {
    return { failed: true };
  }

  override componentDidUpdate(previous: { readonly source: string }): void {
    if (this.state.failed && previous.source !== this.props.source) {
      this.setState({ failed: false });
    }
  }

  override render() {
    if (this.state.failed) {
      return (
        <div className="tf-openui" data-openui="source">
          <p className="tf-openui-note">This generated UI could not be shown; here is its source.</p>
          <CodeBlock code={this.props.source} language="openui" streaming={false} />
        </div>
      );
    }
    return this.props.children;
  }
}

function Block({ source, streaming }: { readonly source: string; readonly streaming: boolean }) {
  const program = useMemo(() => parseProgram(source, streaming), [source, streaming]);
  const defaults = useMemo(() => stateDefaults(program), [program]);
  const [changes, setChanges] = useState<Readonly<Record<string, Value>>>({});
  const [showSource, setShowSource] = useState(false);
  const read = useCallback(
    (name: string): Value =>
      Object.hasOwn(changes, name) ? (changes[name] ?? null) : (defaults[name] ?? null),
    [changes, defaults],
  );
  const evaluation = useMemo(() => evaluateProgram(program, read), [program, read]);
  const runtime = useMemo<Runtime>(
    () => ({
      streaming,
      read,
      set: (name, value) => setChanges((current) => ({ ...current, [name]: value })),
      reset: (names) =>
        setChanges((current) =>
          Object.fromEntries(Object.entries(current).filter(([name]) => !names.includes(name))),
        ),
      defaultOf: (name) => defaults[name] ?? null,
    }),
    [streaming, read, defaults],
  );
  const problems = useMemo(
    () =>
      streaming
        ? []
        : [
            ...program.issues.map((issue) => `line ${issue.line}: ${issue.message}`),
            ...evaluation.problems.map((problem) => problem.message),
            ...undefinedNames(program).map((name) => `${name} is used but not defined`),
          ],
    [streaming, program, evaluation],
  );
  const empty = program.root === null;
  if (empty && !streaming) {
    return (
      <div className="tf-openui" data-openui="source">
        <p className="tf-openui-note">This generated UI has no components to show; here is its source.</p>
        <CodeBlock code={source} language="openui" streaming={false} />
      </div>
    );
  }
  return (
    <div className="tf-openui" data-openui="rendered" data-streaming={streaming || undefined}>
      <RuntimeContext.Provider value={runtime}>
        {empty ? (
          <div className="tf-openui-building" role="status">
            Building the interface…
          </div>
        ) : (
          <div className="tf-openui-root">{renderValue(evaluation.root)}</div>
        )}
      </RuntimeContext.Provider>
      <div className="tf-openui-footer">
        {problems.length > 0 && (
          <details className="tf-openui-problems">
            <summary>
              {problems.length} {problems.length === 1 ? "problem" : "problems"} in this block
            </summary>
            <ul>
              {problems.map((problem) => (
                <li key={problem}>{problem}</li>
              ))}
            </ul>
          </details>
        )}
        <button
          type="button"
          className="tf-openui-link"
          aria-expanded={showSource}
          onClick={() => setShowSource((shown) => !shown)}
        >
          {showSource ? "Hide source" : "Show source"}
        </button>
      </div>
      {showSource && <CodeBlock code={source} language="openui" streaming={streaming} />}
    </div>
  );
}

/** Renders an ```openui block; `streaming`: its text may still grow. */
export function OpenUi({ source, streaming }: { readonly source: string; readonly streaming: boolean }) {
  return (
    <Guard source={source}>
      <Block source={source} streaming={streaming} />
    </Guard>
  );
}
