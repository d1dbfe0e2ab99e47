// A section of a screen (a settings tab, the builder's always-allowed tools), headed the same way everywhere.

import type { ReactNode } from "react";
import "./screens.css";

/** Its heading, with the section's own button beside it when it has one, a line on what it is for, then `children`. */
export function Section({
  titleId,
  title,
  testId,
  action,
  intro,
  children,
}: {
  /** The heading's id, which names the section. */
  readonly titleId: string;
  readonly title: string;
  readonly testId: string;
  readonly action?: ReactNode;
  readonly intro: ReactNode;
  readonly children: ReactNode;
}) {
  const heading = <h2 id={titleId}>{title}</h2>;
  return (
    <section className="tf-section" aria-labelledby={titleId} data-testid={testId}>
      {action ? (
        <div className="tf-page-head">
          {heading}
          {action}
        </div>
      ) : (
        heading
      )}
      <p className="tf-field-hint">{intro}</p>
      {children}
    </section>
  );
}
