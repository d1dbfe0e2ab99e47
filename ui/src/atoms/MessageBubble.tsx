import type { ReactNode } from "react";

export interface MessageBubbleProps {
  readonly author: "user" | "assistant";
  /** The thread the message belongs to: `main`, or a sub-agent's thread. */
  readonly threadId: string;
  readonly children: ReactNode;
  /** Actions under the message (copy, edit, retry). */
  readonly actions?: ReactNode;
}

export function MessageBubble({ author, children, actions }: MessageBubbleProps) {
  return (
    <div className={`tf-message tf-message-${author}`} data-role={author}>
      <div className="tf-bubble">{children}</div>
      {actions && <div className="tf-message-actions">{actions}</div>}
    </div>
  );
}
