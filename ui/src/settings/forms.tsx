// What every form of the settings and the agent builder does the same way: it checks its fields itself,
// saves with one button (busy while saving, the server's refusal shown next to it and toasted), and an
// "Add" or "Edit" panel opens in place with Cancel.

import { type ReactNode, type Ref, type RefObject, useEffect, useRef, useState } from "react";
import { toast } from "sonner";
import { describeError } from "../state/errors.js";
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

export interface SaveOptions<T> {
  /** What is saved, for the toast of a failure: `Could not save <what>: <why>`. */
  readonly what: string;
  /** The toast of a success. */
  readonly savedMessage: (saved: T) => string;
  /** After the success toast: closes the form, shows what was saved. */
  readonly onSaved: (saved: T) => void;
}

export interface FormSave<T> {
  /** A save was tried: every field's error is shown from then on. */
  readonly submitted: boolean;
  readonly saving: boolean;
  /** The server's refusal of the last save, described for people. */
  readonly error: string | null;
  /** `error` once a save was tried, `null` before (a fresh form is not covered in red). */
  show(error: string | null): string | null;
  /**
   * Marks the form submitted and, when it is valid (`send` is not `null`), saves with `send`, the form busy
   * meanwhile. A failure is shown on the form and toasted; the answer is what was saved, or `null`.
   */
  submit(send: (() => Promise<T>) | null): Promise<T | null>;
}

export function useFormSave<T>({ what, savedMessage, onSaved }: SaveOptions<T>): FormSave<T> {
  const [submitted, setSubmitted] = useState(false);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (send: (() => Promise<T>) | null): Promise<T | null> => {
    setSubmitted(true);
    if (send === null) {
      return null;
    }
    setSaving(true);
    setError(null);
    try {
      const saved = await send();
      toast.success(savedMessage(saved));
      onSaved(saved);
      return saved;
    } catch (failure) {
      const message = describeError(failure);
      setError(message);
      toast.error(`Could not save ${what}: ${message}`);
      return null;
    } finally {
      setSaving(false);
    }
  };
  const show = (fieldError: string | null) => (submitted ? fieldError : null);
  return { submitted, saving, error, show, submit };
}

/** The props of a form that adds a thing or edits `existing`. */
export interface EditFormProps<T> {
  readonly existing: T | null;
  readonly onSaved: (saved: T) => void;
  readonly onCancel: () => void;
}

/**
 * A form the app checks itself (`noValidate`: no browser bubbles, the errors stand next to the fields);
 * Enter or the submit button runs `onSubmit`. Named by `label` or by the element `labelledBy` names.
 */
export function Form({
  ref,
  className = "tf-form",
  testId,
  label,
  labelledBy,
  onSubmit,
  children,
}: {
  readonly ref?: Ref<HTMLFormElement>;
  readonly className?: string;
  readonly testId: string;
  readonly label?: string;
  readonly labelledBy?: string;
  readonly onSubmit: () => void;
  readonly children: ReactNode;
}) {
  return (
    <form
      ref={ref}
      className={className}
      data-testid={testId}
      aria-label={label}
      aria-labelledby={labelledBy}
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit();
      }}
    >
      {children}
    </form>
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

/** The end of a form: the failed save, then the buttons (`children`). */
export function FormFooter({
  error,
  errorTestId,
  children,
}: {
  readonly error: string | null;
  readonly errorTestId: string;
  readonly children: ReactNode;
}) {
  return (
    <div className="tf-form-actions">
      <FormError message={error} testId={errorTestId} />
      <div className="tf-row tf-wrap">{children}</div>
    </div>
  );
}

/** The button that saves; it says "Saving…" while the save runs. */
export function SubmitButton({
  saving,
  disabled = saving,
  testId,
  children,
}: {
  readonly saving: boolean;
  /** Also while something else keeps the form busy (the agent builder's "Try in chat"). */
  readonly disabled?: boolean;
  readonly testId?: string;
  readonly children: ReactNode;
}) {
  return (
    <button
      type="submit"
      className="tf-button tf-button-primary"
      disabled={disabled}
      aria-busy={saving}
      data-testid={testId}
    >
      {saving ? "Saving…" : children}
    </button>
  );
}

/**
 * An "Add" or "Edit" panel that opens in place (see {@link useReveal}): its title, its fields (`children`)
 * and the footer with the submit button and Cancel.
 */
export function PanelForm({
  label,
  title = label,
  testId,
  errorTestId,
  save,
  submitLabel,
  onSubmit,
  onCancel,
  children,
}: {
  /** The form's accessible name, and its title unless `title` says otherwise. */
  readonly label: string;
  readonly title?: string;
  readonly testId: string;
  readonly errorTestId: string;
  readonly save: FormSave<unknown>;
  readonly submitLabel: string;
  readonly onSubmit: () => void;
  readonly onCancel: () => void;
  readonly children: ReactNode;
}) {
  const ref = useRef<HTMLFormElement>(null);
  useReveal(ref);
  return (
    <Form ref={ref} className="tf-form tf-panel" testId={testId} label={label} onSubmit={onSubmit}>
      <h3 className="tf-panel-title">{title}</h3>
      {children}
      <FormFooter error={save.error} errorTestId={errorTestId}>
        <SubmitButton saving={save.saving}>{submitLabel}</SubmitButton>
        <button type="button" className="tf-button" onClick={onCancel} disabled={save.saving}>
          Cancel
        </button>
      </FormFooter>
    </Form>
  );
}
