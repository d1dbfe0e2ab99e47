// The rows of the settings' and the agents' lists, and what acts on one row: its buttons, Edit and a
// confirmed Delete, a chip, a catalog entry's logo.

import * as Dialog from "@radix-ui/react-dialog";
import { type ReactNode, useCallback, useRef, useState } from "react";
import { toast } from "sonner";
import { describeError } from "../state/errors.js";
import "./screens.css";

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
 * A button of a list row. Its accessible name (`label`) says which row it acts on ("Add github"), its text
 * only what it does ("Add"): a list of "Add" buttons is told apart by screen readers.
 */
export function RowButton({
  label,
  primary,
  disabled,
  busy,
  expanded,
  onClick,
  children,
}: {
  readonly label: string;
  readonly primary?: boolean;
  readonly disabled?: boolean;
  readonly busy?: boolean;
  /** For a button that opens something under the row (Edit). */
  readonly expanded?: boolean;
  readonly onClick: () => void;
  readonly children: ReactNode;
}) {
  return (
    <button
      type="button"
      className={primary ? "tf-button tf-button-primary" : "tf-button"}
      aria-label={label}
      aria-expanded={expanded}
      aria-busy={busy}
      disabled={disabled}
      onClick={onClick}
    >
      {children}
    </button>
  );
}

/**
 * One action at a time among a list's rows (Add, Connect, Revoke): `busy` is the key of the row whose action
 * runs, and every row's buttons wait for it. A failure is toasted as `<failure>: <why>`.
 */
export function useRowAction() {
  const [busy, setBusy] = useState<string | null>(null);
  const run = useCallback(async (key: string, failure: string, action: () => Promise<void>) => {
    setBusy(key);
    try {
      await action();
    } catch (error) {
      toast.error(`${failure}: ${describeError(error)}`);
    } finally {
      setBusy(null);
    }
  }, []);
  return { busy, run };
}

/** The words of a confirmed action: its button ("Delete"), the button while it runs, and its toast ("Deleted"). */
export interface ConfirmVerb {
  readonly label: string;
  readonly busy: string;
  readonly done: string;
}

const DELETE: ConfirmVerb = { label: "Delete", busy: "Deleting…", done: "Deleted" };

/**
 * A delete button that asks first, in a dialog. "Delete" runs `remove`, the dialog stays open (busy) until
 * it settles; on success `onDeleted` runs, a toast says so and the dialog closes. A failure is toasted and
 * the dialog stays for another try or Cancel. `verb` words it as another action that cannot be undone
 * (Revoke).
 */
export function ConfirmDelete({
  what,
  description,
  remove,
  onDeleted,
  testId,
  disabled,
  verb = DELETE,
}: {
  /** What is deleted, for the accessible name, the question ("Delete <what>?") and the toasts. */
  readonly what: string;
  readonly description?: ReactNode;
  readonly remove: () => Promise<unknown>;
  /** Takes the deleted thing off the screen. */
  readonly onDeleted: () => void;
  readonly testId?: string;
  readonly disabled?: boolean;
  readonly verb?: ConfirmVerb;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const trigger = useRef<HTMLButtonElement>(null);
  // The dialog is put inside the app's root so it gets the theme's variables.
  const container = open ? (trigger.current?.closest<HTMLElement>(".tf-root") ?? undefined) : undefined;
  const confirm = async () => {
    setBusy(true);
    try {
      await remove();
      onDeleted();
      toast.success(`${verb.done} ${what}.`);
      setOpen(false);
    } catch (error) {
      toast.error(`Could not ${verb.label.toLowerCase()} ${what}: ${describeError(error)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog.Root open={open} onOpenChange={(next) => !busy && setOpen(next)}>
      <Dialog.Trigger asChild>
        <button
          ref={trigger}
          type="button"
          className="tf-button tf-button-quiet tf-danger-text"
          aria-label={`${verb.label} ${what}`}
          data-testid={testId}
          disabled={disabled}
        >
          {verb.label}
        </button>
      </Dialog.Trigger>
      <Dialog.Portal container={container}>
        <Dialog.Overlay className="tf-overlay" />
        <Dialog.Content className="tf-dialog" data-testid="confirm-dialog" aria-describedby={undefined}>
          <Dialog.Title className="tf-dialog-title">
            {verb.label} {what}?
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
              onClick={() => void confirm()}
            >
              {busy ? verb.busy : verb.label}
            </button>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

/**
 * A configured thing's Edit (opens or closes its form under the row) and, when the server can delete it,
 * Delete.
 */
export function EditAndDelete({
  what,
  editing,
  onToggleEdit,
  remove,
  onDeleted,
  description,
}: {
  readonly what: string;
  readonly editing: boolean;
  readonly onToggleEdit: () => void;
  /** `undefined`: the server offers no delete. */
  readonly remove: (() => Promise<unknown>) | undefined;
  readonly onDeleted: () => void;
  /** What deleting it does to the agents that use it. */
  readonly description?: ReactNode;
}) {
  return (
    <>
      <RowButton label={`Edit ${what}`} expanded={editing} onClick={onToggleEdit}>
        Edit
      </RowButton>
      {remove ? (
        <ConfirmDelete what={what} description={description} remove={remove} onDeleted={onDeleted} />
      ) : null}
    </>
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

/** A catalog row's title: the logo, then the name. */
export function CatalogTitle({
  logo,
  name,
}: {
  readonly logo: string | null | undefined;
  readonly name: string;
}) {
  return (
    <span className="tf-row">
      <CatalogLogo src={logo} name={name} />
      {name}
    </span>
  );
}
