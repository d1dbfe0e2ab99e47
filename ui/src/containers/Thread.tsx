// The thread: the turns of the conversation, virtualized (only what is on screen is in the DOM, so a
// session of thousands of messages opens and scrolls like a short one), kept at the bottom while the answer
// streams unless the reader scrolled up, with older history read when the top comes into view.

import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useLayoutEffect, useRef } from "react";
import { useChatSession } from "./chat-session.js";
import { TurnBlock, userText } from "./messages.js";

/** Within this many pixels of the bottom, new content keeps the view pinned to it. */
const PIN_SLACK = 80;

export function Thread() {
  const chat = useChatSession();
  const { state, pendingInput, hasOlder, loadingOlder } = chat.snapshot;
  const turns = state.turns;
  const scroller = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  const virtualizer = useVirtualizer({
    count: turns.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 160,
    overscan: 4,
    getItemKey: (index) => turns[index]?.id ?? index,
  });
  const totalSize = virtualizer.getTotalSize();

  // Follow the bottom while pinned: on new turns and on every streamed frame that grows the content.
  useLayoutEffect(() => {
    const element = scroller.current;
    if (element && pinned.current && turns.length > 0) {
      virtualizer.scrollToIndex(turns.length - 1, { align: "end" });
      element.scrollTop = element.scrollHeight;
    }
  });

  useEffect(() => {
    const element = scroller.current;
    if (!element) {
      return;
    }
    const onScroll = () => {
      pinned.current = element.scrollHeight - element.scrollTop - element.clientHeight < PIN_SLACK;
      if (element.scrollTop < 200 && hasOlder && !loadingOlder) {
        void chat.controller.loadOlder();
      }
    };
    element.addEventListener("scroll", onScroll, { passive: true });
    return () => element.removeEventListener("scroll", onScroll);
  }, [chat.controller, hasOlder, loadingOlder]);

  return (
    <div
      className="tf-thread"
      ref={scroller}
      role="log"
      aria-live="polite"
      aria-busy={chat.snapshot.streaming}
      data-total-size={totalSize}
    >
      {hasOlder && (
        <div className="tf-older">
          <button
            type="button"
            className="tf-button tf-button-quiet"
            disabled={loadingOlder}
            onClick={() => void chat.controller.loadOlder()}
          >
            {loadingOlder ? "Loading older messages…" : "Load older messages"}
          </button>
        </div>
      )}
      <div className="tf-thread-inner" style={{ height: totalSize, position: "relative" }}>
        {virtualizer.getVirtualItems().map((item) => {
          const turn = turns[item.index];
          if (!turn) {
            return null;
          }
          return (
            <div
              key={item.key}
              data-index={item.index}
              ref={virtualizer.measureElement}
              className="tf-thread-row"
              style={{
                position: "absolute",
                top: 0,
                left: 0,
                width: "100%",
                transform: `translateY(${item.start}px)`,
              }}
            >
              <TurnBlock turn={turn} isLast={item.index === turns.length - 1} />
            </div>
          );
        })}
      </div>
      {pendingInput && (
        <div className="tf-turn tf-pending">
          <div className="tf-message tf-message-user" data-role="user">
            <div className="tf-bubble">
              <p className="tf-user-text">{userText(pendingInput)}</p>
            </div>
          </div>
        </div>
      )}
    </div>
  );
}
