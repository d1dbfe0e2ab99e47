// The fields of the settings' and the agent builder's forms: labelled, with their hint and error wired for
// screen readers; a text field, a select, a checkbox (or radio), a group under a legend.

import { type ReactNode, useId } from "react";
import "./screens.css";

function describedBy(...ids: (string | false | null | undefined)[]): string | undefined {
  const list = ids.filter((id): id is string => typeof id === "string" && id !== "");
  return list.length > 0 ? list.join(" ") : undefined;
}

interface FieldProps {
  readonly label: ReactNode;
  readonly hint?: ReactNode;
  /** Shown under the field and announced; the field is marked invalid. */
  readonly error?: string | null | undefined;
  readonly required?: boolean;
  readonly disabled?: boolean;
  readonly testId?: string;
}

function FieldNotes({
  hintId,
  errorId,
  hint,
  error,
}: {
  readonly hintId: string;
  readonly errorId: string;
  readonly hint: ReactNode;
  readonly error: string | null | undefined;
}) {
  return (
    <>
      {hint ? (
        <p id={hintId} className="tf-field-hint">
          {hint}
        </p>
      ) : null}
      {error ? (
        <p id={errorId} className="tf-field-error">
          {error}
        </p>
      ) : null}
    </>
  );
}

function Label({ htmlFor, label, required }: { htmlFor: string; label: ReactNode; required?: boolean }) {
  return (
    <label htmlFor={htmlFor} className="tf-field-label">
      {label}
      {required ? (
        <span className="tf-required" aria-hidden="true">
          {" "}
          *
        </span>
      ) : null}
    </label>
  );
}

export interface TextFieldProps extends FieldProps {
  readonly value: string;
  readonly onChange: (value: string) => void;
  readonly type?: "text" | "password" | "url" | "number" | "search";
  readonly placeholder?: string;
  readonly autoComplete?: string;
  readonly autoFocus?: boolean;
  readonly readOnly?: boolean;
  /** A textarea of that many rows instead of a one-line input. */
  readonly rows?: number;
  readonly monospace?: boolean;
  readonly min?: number;
  /** A number input's step; `any` for prices and other fractions (the browser's default is 1). */
  readonly step?: number | "any";
  readonly name?: string;
  /** The id of a `<datalist>` of suggestions (a one-line input only). */
  readonly list?: string;
}

export function TextField(props: TextFieldProps) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const common = {
    id,
    name: props.name,
    value: props.value,
    placeholder: props.placeholder,
    required: props.required,
    disabled: props.disabled,
    readOnly: props.readOnly,
    autoFocus: props.autoFocus,
    "aria-invalid": props.error ? true : undefined,
    "aria-describedby": describedBy(props.hint ? hintId : null, props.error ? errorId : null),
    "data-testid": props.testId,
    className: props.monospace ? "tf-mono" : undefined,
    spellCheck: props.monospace || props.type === "password" ? false : undefined,
  };
  return (
    <div className="tf-field">
      <Label htmlFor={id} label={props.label} {...(props.required ? { required: true } : {})} />
      {props.rows ? (
        <textarea {...common} rows={props.rows} onChange={(event) => props.onChange(event.target.value)} />
      ) : (
        <input
          {...common}
          type={props.type ?? "text"}
          autoComplete={props.autoComplete ?? (props.type === "password" ? "new-password" : "off")}
          min={props.min}
          step={props.step}
          list={props.list}
          onChange={(event) => props.onChange(event.target.value)}
        />
      )}
      <FieldNotes hintId={hintId} errorId={errorId} hint={props.hint} error={props.error} />
    </div>
  );
}

export interface SelectOption {
  readonly value: string;
  readonly label: string;
  readonly disabled?: boolean;
}

export interface SelectFieldProps extends FieldProps {
  readonly value: string;
  readonly onChange: (value: string) => void;
  readonly options: readonly SelectOption[];
  /** A first, empty choice (for "none chosen yet" or "the default"). */
  readonly placeholder?: string;
}

export function SelectField(props: SelectFieldProps) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  return (
    <div className="tf-field">
      <Label htmlFor={id} label={props.label} {...(props.required ? { required: true } : {})} />
      <select
        id={id}
        value={props.value}
        required={props.required}
        disabled={props.disabled}
        aria-invalid={props.error ? true : undefined}
        aria-describedby={describedBy(props.hint ? hintId : null, props.error ? errorId : null)}
        data-testid={props.testId}
        onChange={(event) => props.onChange(event.target.value)}
      >
        {props.placeholder !== undefined && <option value="">{props.placeholder}</option>}
        {props.options.map((option) => (
          <option key={option.value} value={option.value} disabled={option.disabled}>
            {option.label}
          </option>
        ))}
      </select>
      <FieldNotes hintId={hintId} errorId={errorId} hint={props.hint} error={props.error} />
    </div>
  );
}

export interface CheckboxFieldProps {
  readonly label: ReactNode;
  readonly checked: boolean;
  readonly onChange: (checked: boolean) => void;
  readonly hint?: ReactNode;
  readonly disabled?: boolean;
  readonly testId?: string;
  /** `radio` for one choice of a group named `name`. */
  readonly type?: "checkbox" | "radio";
  readonly name?: string;
}

export function CheckboxField(props: CheckboxFieldProps) {
  const id = useId();
  const hintId = `${id}-hint`;
  return (
    <div className={`tf-check${props.disabled ? " tf-check-disabled" : ""}`}>
      <input
        id={id}
        type={props.type ?? "checkbox"}
        name={props.name}
        checked={props.checked}
        disabled={props.disabled}
        aria-describedby={props.hint ? hintId : undefined}
        data-testid={props.testId}
        onChange={(event) => props.onChange(event.target.checked)}
      />
      <div className="tf-check-text">
        <label htmlFor={id}>{props.label}</label>
        {props.hint ? (
          <p id={hintId} className="tf-field-hint">
            {props.hint}
          </p>
        ) : null}
      </div>
    </div>
  );
}

/** A group of fields under a legend. */
export function Fieldset({
  legend,
  hint,
  children,
  testId,
  plain,
}: {
  readonly legend: ReactNode;
  readonly hint?: ReactNode;
  readonly children: ReactNode;
  readonly testId?: string;
  /** Without a frame, for a group inside a form's part (the choices of one setting). */
  readonly plain?: boolean;
}) {
  return (
    <fieldset className={plain ? "tf-fieldset tf-fieldset-plain" : "tf-fieldset"} data-testid={testId}>
      <legend>{legend}</legend>
      {hint ? <p className="tf-field-hint tf-fieldset-hint">{hint}</p> : null}
      {children}
    </fieldset>
  );
}

/**
 * The name a new resource is saved under. Unlike other fields, its rules are shown as soon as something is
 * typed (not only after a first Save): a name is easy to get wrong and cannot be changed later.
 */
export function NameField({
  value,
  onChange,
  error,
  submitted,
  hint,
  testId,
  autoFocus,
}: {
  readonly value: string;
  readonly onChange: (value: string) => void;
  readonly error: string | null;
  /** A save was tried: the error stands even for an empty field. */
  readonly submitted: boolean;
  readonly hint: string;
  readonly testId: string;
  readonly autoFocus?: boolean;
}) {
  return (
    <TextField
      label="Name"
      value={value}
      onChange={onChange}
      required
      autoFocus={autoFocus}
      monospace
      testId={testId}
      hint={hint}
      error={submitted || value !== "" ? error : null}
    />
  );
}

/**
 * One choice of a few, as radios in a row under `legend`; each radio's test id is `<testIdPrefix>-<value>`.
 * `children` follow the radios (what the choice means, its own fields).
 */
export function RadioChoices<T extends string>({
  legend,
  options,
  value,
  onChange,
  testIdPrefix,
  children,
}: {
  readonly legend: string;
  readonly options: readonly { readonly value: T; readonly label: string }[];
  readonly value: T;
  readonly onChange: (value: T) => void;
  readonly testIdPrefix: string;
  readonly children?: ReactNode;
}) {
  const group = useId();
  return (
    <Fieldset legend={legend} plain>
      <div className="tf-check-row">
        {options.map((option) => (
          <CheckboxField
            key={option.value}
            type="radio"
            name={group}
            label={option.label}
            checked={value === option.value}
            onChange={() => onChange(option.value)}
            testId={`${testIdPrefix}-${option.value}`}
          />
        ))}
      </div>
      {children}
    </Fieldset>
  );
}

/** What a described resource (an MCP server, a skill) is for, in words the agents' models read. */
export function DescriptionField({
  value,
  onChange,
  error,
  hint,
  testId,
}: {
  readonly value: string;
  readonly onChange: (value: string) => void;
  readonly error: string | null;
  readonly hint: string;
  readonly testId: string;
}) {
  return (
    <TextField
      label="Description"
      value={value}
      onChange={onChange}
      required
      rows={2}
      testId={testId}
      hint={hint}
      error={error}
    />
  );
}
