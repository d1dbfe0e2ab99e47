// The resume cursor: after a page refresh, a running turn is followed from the last event the page had
// folded rather than replayed whole. The cursor is the sequence number of the last event that the stored
// history also holds; the deltas of the answer being written when the page went away come again (the
// stored history cannot hold them yet), everything before them does not.

const PREFIX = "trueforge.resume.";

export interface ResumeCursor {
  readonly turnId: string;
  readonly seq: number;
}

function storage(): Storage | null {
  try {
    return globalThis.sessionStorage ?? null;
  } catch {
    // Storage refused (a sandboxed iframe, privacy settings): resuming falls back to a replay.
    return null;
  }
}

export function readCursor(sessionId: string): ResumeCursor | null {
  const raw = storage()?.getItem(PREFIX + sessionId);
  if (!raw) {
    return null;
  }
  try {
    const value = JSON.parse(raw) as Partial<ResumeCursor>;
    if (typeof value.turnId === "string" && typeof value.seq === "number" && value.seq >= 0) {
      return { turnId: value.turnId, seq: value.seq };
    }
  } catch {
    // A damaged entry is ignored.
  }
  return null;
}

export function writeCursor(sessionId: string, cursor: ResumeCursor | null): void {
  const store = storage();
  if (store === null) {
    return;
  }
  if (cursor === null) {
    store.removeItem(PREFIX + sessionId);
  } else {
    store.setItem(PREFIX + sessionId, JSON.stringify(cursor));
  }
}
