// The pieces every form and list of the settings and the agent builder repeat: labelled fields with their
// hint and error, a select, a checkbox, a list row with actions, a confirmed delete, the loading, error and
// empty states.

import * as Dialog from "@radix-ui/react-dialog";
import { type ReactNode, type RefObject, useEffect, useId, useRef, useState } from "react";
import "./screens.css";

/**
 * For a form that opens in place (an "Add" or "Edit" panel): scrolls it into view and focuses its first
 * field when it opens; when it closes, gives the focus back to what had it (the button that opened it).
 */
export function useReveal(ref: RefObject<HTMLElement | null>) {
  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const element = ref.current;
    if (element) {
      element.scrollIntoView?.({ block: "nearest" });
      element
        .querySelector<HTMLElement>("input:not([disabled]), textarea:not([disabled]), select:not([disabled])")
        ?.focus();
    }
    return () => {
      const lost = document.activeElement === null || document.activeElement === document.body;
      if (opener?.isConnected && (lost || element?.contains(document.activeElement))) {
        opener.focus();
      }
    };
  }, [ref]);
}

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
  readonly name?: string;
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
}: {
  readonly legend: ReactNode;
  readonly hint?: ReactNode;
  readonly children: ReactNode;
  readonly testId?: string;
}) {
  return (
    <fieldset className="tf-fieldset" data-testid={testId}>
      <legend>{legend}</legend>
      {hint ? <p className="tf-field-hint tf-fieldset-hint">{hint}</p> : null}
      {children}
    </fieldset>
  );
}

/** One row of a list: a title, a line under it, chips, and the row's actions. */
export function ListRow({
  title,
  subtitle,
  badges,
  actions,
  children,
  testId,
  name,
}: {
  readonly title: ReactNode;
  readonly subtitle?: ReactNode;
  readonly badges?: ReactNode;
  readonly actions?: ReactNode;
  readonly children?: ReactNode;
  readonly testId?: string;
  /** The row's resource name, for tests (`data-name`). */
  readonly name?: string;
}) {
  return (
    <li className="tf-list-row" data-testid={testId} data-name={name}>
      <div className="tf-list-row-main">
        <div className="tf-list-row-text">
          <div className="tf-list-row-title">{title}</div>
          {subtitle ? <div className="tf-list-row-subtitle">{subtitle}</div> : null}
          {badges ? <div className="tf-list-row-badges">{badges}</div> : null}
        </div>
        {actions ? <div className="tf-list-row-actions">{actions}</div> : null}
      </div>
      {children}
    </li>
  );
}

/**
 * A delete button that asks first, in a dialog: `onConfirm` runs on "Delete", the dialog stays open (busy)
 * until it settles and closes on success; a failure is the caller's to report (a toast).
 */
export function ConfirmDelete({
  what,
  description,
  onConfirm,
  label = "Delete",
  confirmLabel = "Delete",
  testId,
  disabled,
}: {
  /** What is deleted, for the accessible name and the question: "Delete <what>?". */
  readonly what: string;
  readonly description?: ReactNode;
  readonly onConfirm: () => Promise<unknown>;
  readonly label?: string;
  readonly confirmLabel?: string;
  readonly testId?: string;
  readonly disabled?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const trigger = useRef<HTMLButtonElement>(null);
  // The dialog is put inside the app's root so it gets the theme's variables.
  const container = open ? (trigger.current?.closest<HTMLElement>(".tf-root") ?? undefined) : undefined;
  return (
    <Dialog.Root open={open} onOpenChange={(next) => !busy && setOpen(next)}>
      <Dialog.Trigger asChild>
        <button
          ref={trigger}
          type="button"
          className="tf-button tf-button-quiet tf-danger-text"
          aria-label={`${label} ${what}`}
          data-testid={testId}
          disabled={disabled}
        >
          {label}
        </button>
      </Dialog.Trigger>
      <Dialog.Portal container={container}>
        <Dialog.Overlay className="tf-overlay" />
        <Dialog.Content className="tf-dialog" data-testid="confirm-dialog" aria-describedby={undefined}>
          <Dialog.Title className="tf-dialog-title">
            {label} {what}?
          </Dialog.Title>
          {description ? <div className="tf-dialog-body">{description}</div> : null}
          <div className="tf-dialog-actions">
            <Dialog.Close asChild>
              <button type="button" className="tf-button" disabled={busy}>
                Cancel
              </button>
            </Dialog.Close>
            <button
              type="button"
              className="tf-button tf-button-danger"
              disabled={busy}
              aria-busy={busy}
              onClick={async () => {
                setBusy(true);
                try {
                  await onConfirm();
                  setOpen(false);
                } catch {
                  // Reported by `onConfirm`'s caller; the dialog stays for another try or Cancel.
                } finally {
                  setBusy(false);
                }
              }}
            >
              {busy ? "Deleting…" : confirmLabel}
            </button>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/** A failed save, next to the button that saves. */
export function FormError({
  message,
  testId,
}: {
  readonly message: string | null;
  readonly testId?: string;
}) {
  return (
    <p className="tf-form-error" role="alert" data-testid={testId} hidden={!message}>
      {message}
    </p>
  );
}

export function LoadingState({ label = "Loading…" }: { readonly label?: string }) {
  return (
    <div className="tf-state" role="status">
      <span className="tf-spinner" aria-hidden="true" /> {label}
    </div>
  );
}

export function ErrorState({
  message,
  onRetry,
  testId,
}: {
  readonly message: string;
  readonly onRetry?: () => void;
  readonly testId?: string;
}) {
  return (
    <div className="tf-state" role="alert" data-testid={testId}>
      <p className="tf-error-text">{message}</p>
      {onRetry ? (
        <button type="button" className="tf-button" onClick={onRetry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}

export function EmptyState({ children, testId }: { readonly children: ReactNode; readonly testId?: string }) {
  return (
    <div className="tf-empty" data-testid={testId}>
      {children}
    </div>
  );
}

/** A chip with a status colour. */
export function StatusChip({
  tone,
  children,
  title,
}: {
  readonly tone: "ok" | "warn" | "danger" | "muted";
  readonly children: ReactNode;
  readonly title?: string;
}) {
  return (
    <span className={`tf-chip tf-chip-${tone}`} title={title}>
      {children}
    </span>
  );
}

/**
 * A catalog entry's logo. The page's CSP loads images from its own origin only (no request to a third party
 * while the user browses the catalog), so a remote logo is replaced by the name's initial.
 */
export function CatalogLogo({
  src,
  name,
}: {
  readonly src: string | null | undefined;
  readonly name: string;
}) {
  if (src && (src.startsWith("/") || src.startsWith("data:"))) {
    return <img className="tf-logo" src={src} alt="" loading="lazy" />;
  }
  return (
    <span className="tf-logo tf-logo-initial" aria-hidden="true">
      {name.trim().charAt(0).toUpperCase() || "?"}
    </span>
  );
}
