// What the components of one OpenUI block share: its `$variables` and whether it is still streaming (the
// runtime), the form a field sits in, and the label a form control gives its input; plus readers for the
// positional arguments of a component call.

import { createContext, useContext } from "react";
import { isList, type StateReader, toNumber, toText, type UiElement, type Value } from "./evaluate.js";

export interface Runtime {
  /** The block is still streaming: names not defined yet are placeholders, sending is off. */
  readonly streaming: boolean;
  readonly read: StateReader;
  set(name: string, value: Value): void;
  /** Restores variables to their declared defaults. */
  reset(names: readonly string[]): void;
  /** A variable's declared default. */
  defaultOf(name: string): Value;
}

export const RuntimeContext = createContext<Runtime>({
  streaming: false,
  read: () => null,
  set: () => {},
  reset: () => {},
  defaultOf: () => null,
});

export function useRuntime(): Runtime {
  return useContext(RuntimeContext);
}

export interface FieldInfo {
  readonly name: string;
  readonly label: string;
  readonly rules: Value;
  /** The `$variable` the field's value is bound to. */
  readonly binding: string | null;
  readonly initial: string;
}

export interface FormState {
  readonly name: string;
  readonly fields: readonly FieldInfo[];
  /** Values of the fields not bound to a variable. */
  readonly values: Readonly<Record<string, string>>;
  readonly errors: Readonly<Record<string, string>>;
  setValue(field: string, value: string): void;
  clearError(field: string): void;
  /** Checks every field's rules, shows the errors, and says whether all passed. */
  validate(): boolean;
  /** The fields' current values, in order. */
  current(): (readonly [string, string])[];
}

export const FormContext = createContext<FormState | null>(null);

export function useForm(): FormState | null {
  return useContext(FormContext);
}

/** Given by a FormControl to the input it wraps: the id its label points at, and the hint's id. */
export const FieldContext = createContext<{
  readonly id: string;
  readonly describedBy: string | undefined;
} | null>(null);

export function str(el: UiElement, index: number, fallback = ""): string {
  const value = el.arg(index);
  return value === null ? fallback : toText(value);
}

export function num(el: UiElement, index: number, fallback = 0): number {
  const value = el.arg(index);
  return value === null ? fallback : toNumber(value);
}

export function list(el: UiElement, index: number): readonly Value[] {
  const value = el.arg(index);
  if (value === null) {
    return [];
  }
  return isList(value) ? value : [value];
}

/** One of `options`, else `fallback`. */
export function oneOf<T extends string>(el: UiElement, index: number, options: readonly T[], fallback: T): T {
  const value = el.arg(index);
  return typeof value === "string" && (options as readonly string[]).includes(value)
    ? (value as T)
    : fallback;
}
