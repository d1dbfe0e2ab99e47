// What a screen shows in place of data it does not have: loading, a failed load with Retry, an empty list.

import type { ReactNode } from "react";
import type { Loaded } from "./useLoad.js";
import "./screens.css";

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

interface NotLoadedProps {
  readonly loaded: Loaded<unknown>;
  /** What the spinner says: "Loading the skills…". */
  readonly label?: string;
  readonly errorTestId?: string;
}

/** A load that has no answer yet: its failure with Retry, or the spinner while it runs. */
export function NotLoaded({ loaded, label, errorTestId }: NotLoadedProps) {
  return loaded.error ? (
    <ErrorState message={loaded.error} onRetry={loaded.reload} testId={errorTestId} />
  ) : (
    <LoadingState label={label} />
  );
}

/**
 * `children` once `loaded` has data; until then the spinner or the failure. A reload keeps showing the data
 * it replaces (no flash of a spinner after a save).
 */
export function Loadable({ loaded, label, errorTestId, children }: NotLoadedProps & { children: ReactNode }) {
  const waiting = loaded.data === undefined && (loaded.loading || loaded.error !== null);
  return waiting ? <NotLoaded loaded={loaded} label={label} errorTestId={errorTestId} /> : children;
}

/**
 * A list of a screen, once loaded (see {@link Loadable}): under its heading, `empty` when there is nothing to
 * list, else the list of `children` rows.
 */
export function LoadedList({
  heading,
  loaded,
  loadingLabel,
  empty,
  testId,
  label,
  children,
}: {
  /** A sub-heading of the section, when the section has more than this list. */
  readonly heading?: string;
  readonly loaded: Loaded<unknown>;
  readonly loadingLabel?: string;
  /** What stands instead of an empty list; `null` when there are rows. */
  readonly empty: ReactNode;
  readonly testId?: string;
  /** The list's accessible name. */
  readonly label: string;
  readonly children: ReactNode;
}) {
  return (
    <>
      {heading ? <h3 className="tf-subhead">{heading}</h3> : null}
      <Loadable loaded={loaded} label={loadingLabel}>
        {empty ?? (
          <ul className="tf-list" data-testid={testId} aria-label={label}>
            {children}
          </ul>
        )}
      </Loadable>
    </>
  );
}
