// One conversation on screen: its folded state (the SDK's fold is the only reducer), the live stream of its
// running turn, and the calls that change it. Plain TypeScript with a subscribe/snapshot pair, so React reads
// it through `useSyncExternalStore` and tests can drive it without a DOM.

import {
  type ActionBatch,
  type ConversationState,
  emptyConversation,
  foldAll,
  foldHistoryPages,
  lastTurn,
  type SequencedEvent,
  type StoredEventItem,
  type TurnInputItem,
  UNKNOWN_EVENT,
} from "@trueforge/sdk";
import type { AgentUIServer, TurnEventStream } from "../server/port.js";
import { describeError, isAbort } from "./errors.js";
import { readCursor, writeCursor } from "./resume.js";

/** Events per history page: the most the API serves in one (older pages load as the reader scrolls up). */
const HISTORY_PAGE = 100;

export interface ConversationSnapshot {
  readonly state: ConversationState;
  /** The first history page is being read. */
  readonly loading: boolean;
  /** Reading the history failed: the message (the view offers a retry). */
  readonly loadError: string | null;
  /** A turn's stream is open. */
  readonly streaming: boolean;
  /** The user's words of a turn being started, shown until its `turn.created` arrives. */
  readonly pendingInput: readonly TurnInputItem[] | null;
  /** Older history exists on the server. */
  readonly hasOlder: boolean;
  readonly loadingOlder: boolean;
}

export interface ConversationOptions {
  /** Reports a failed call (a toast in the app). */
  readonly onError: (message: string, error: unknown) => void;
}

export class ConversationController {
  readonly #server: AgentUIServer;
  readonly #options: ConversationOptions;
  #sessionId: string | null;
  #snapshot: ConversationSnapshot = {
    state: emptyConversation(),
    loading: false,
    loadError: null,
    streaming: false,
    pendingInput: null,
    hasOlder: false,
    loadingOlder: false,
  };
  readonly #listeners = new Set<() => void>();
  #pages: StoredEventItem[][] = [];
  #olderToken: string | undefined;
  #stream: TurnEventStream | null = null;
  #queue: SequencedEvent[] = [];
  #flushScheduled = false;
  #disposed = false;
  readonly #warnedTypes = new Set<string>();
  /** Bumped by every load and stream start, so a stale async result is dropped. */
  #generation = 0;

  constructor(server: AgentUIServer, sessionId: string | null, options: ConversationOptions) {
    this.#server = server;
    this.#sessionId = sessionId;
    this.#options = options;
  }

  get sessionId(): string | null {
    return this.#sessionId;
  }

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  getSnapshot = (): ConversationSnapshot => this.#snapshot;

  #set(patch: Partial<ConversationSnapshot>): void {
    if (this.#disposed) {
      return;
    }
    this.#snapshot = { ...this.#snapshot, ...patch };
    for (const listener of this.#listeners) {
      listener();
    }
  }

  /** Reads the latest history page and follows the last turn if it is still running. */
  async load(): Promise<void> {
    const sessionId = this.#sessionId;
    if (sessionId === null) {
      return;
    }
    const generation = ++this.#generation;
    this.#set({ loading: true, loadError: null });
    try {
      const page = await this.#server.chat.listEvents(sessionId, { limit: HISTORY_PAGE });
      if (generation !== this.#generation) {
        return;
      }
      this.#pages = [page.data];
      this.#olderToken = page.pagination.next_page_token ?? undefined;
      const state = foldHistoryPages(this.#pages);
      this.#set({ state, loading: false, hasOlder: this.#olderToken !== undefined });
      this.#warnUnknown(state);
      const last = lastTurn(state);
      if (last !== null && last.status === "running") {
        const cursor = readCursor(sessionId);
        this.#follow(sessionId, last.id, cursor?.turnId === last.id ? cursor.seq : 0);
      } else {
        writeCursor(sessionId, null);
      }
    } catch (error) {
      if (generation === this.#generation) {
        this.#set({ loading: false, loadError: describeError(error) });
      }
    }
  }

  /** Reads the next older history page (not while a turn streams: the refold would drop its live text). */
  async loadOlder(): Promise<void> {
    const sessionId = this.#sessionId;
    const token = this.#olderToken;
    if (sessionId === null || token === undefined || this.#snapshot.loadingOlder || this.#stream !== null) {
      return;
    }
    this.#set({ loadingOlder: true });
    try {
      const page = await this.#server.chat.listEvents(sessionId, { limit: HISTORY_PAGE, pageToken: token });
      this.#pages.push(page.data);
      this.#olderToken = page.pagination.next_page_token ?? undefined;
      this.#set({
        state: foldHistoryPages(this.#pages),
        hasOlder: this.#olderToken !== undefined,
        loadingOlder: false,
      });
    } catch (error) {
      this.#set({ loadingOlder: false });
      this.#options.onError(describeError(error), error);
    }
  }

  /**
   * Starts a turn with `input`. Without a session yet, `createSession` makes one first and its id is
   * reported through `onSessionCreated` (the app then shows the session's address).
   */
  async send(
    input: TurnInputItem[],
    options: {
      readonly previousTurnId?: string;
      readonly createSession?: () => Promise<string>;
      readonly onSessionCreated?: (sessionId: string) => void;
    } = {},
  ): Promise<void> {
    let sessionId = this.#sessionId;
    this.#set({ pendingInput: input.some((item) => item.type === "user.message") ? input : null });
    try {
      if (sessionId === null) {
        if (options.createSession === undefined) {
          throw new Error("There is no session to send to.");
        }
        sessionId = await options.createSession();
        this.#sessionId = sessionId;
        options.onSessionCreated?.(sessionId);
      }
      const previousTurnId = options.previousTurnId ?? lastTurn(this.#snapshot.state)?.id ?? "none";
      this.#start(sessionId, input, previousTurnId);
    } catch (error) {
      this.#set({ pendingInput: null });
      this.#options.onError(describeError(error), error);
    }
  }

  /** Sends the answers of a complete batch of required actions as the next turn. */
  respond(batch: ActionBatch): Promise<void> {
    return this.send(batch.toInput(), batch.turnId ? { previousTurnId: batch.turnId } : {});
  }

  /** Continues a turn that paused for MCP authorization (a turn with no input). */
  continueAfterAuthorization(): Promise<void> {
    return this.send([]);
  }

  /**
   * Edit-and-retry: a new turn with `input` that continues `previousTurnId` (`"none"` for the first turn),
   * a branch beside the turns that followed it. The view switches to the branch: its history is reread up to
   * `previousTurnId`, then the new turn streams.
   */
  async branch(previousTurnId: string, input: TurnInputItem[]): Promise<void> {
    const sessionId = this.#sessionId;
    if (sessionId === null) {
      return;
    }
    const generation = ++this.#generation;
    this.#closeStream();
    try {
      let state = emptyConversation();
      this.#pages = [];
      this.#olderToken = undefined;
      if (previousTurnId !== "none") {
        const page = await this.#server.chat.listEvents(sessionId, {
          limit: HISTORY_PAGE,
          lastTurnId: previousTurnId,
        });
        this.#pages = [page.data];
        this.#olderToken = page.pagination.next_page_token ?? undefined;
        state = foldHistoryPages(this.#pages);
      }
      if (generation !== this.#generation) {
        return;
      }
      this.#set({ state, hasOlder: this.#olderToken !== undefined });
      await this.send(input, { previousTurnId });
    } catch (error) {
      this.#options.onError(describeError(error), error);
    }
  }

  async cancel(): Promise<void> {
    const sessionId = this.#sessionId;
    if (sessionId === null) {
      return;
    }
    try {
      await this.#server.chat.cancel(sessionId);
    } catch (error) {
      this.#options.onError(describeError(error), error);
    }
  }

  /**
   * Stops the stream and ignores late results. React may mount a component twice in development (Strict
   * Mode), disposing in between: `revive` undoes a dispose, and the second mount loads again.
   */
  dispose(): void {
    this.#generation += 1;
    this.#closeStream();
    this.#disposed = true;
  }

  revive(): void {
    this.#disposed = false;
  }

  #start(sessionId: string, input: TurnInputItem[], previousTurnId: string): void {
    this.#closeStream();
    const stream = this.#server.chat.createTurn(sessionId, { input, previousTurnId });
    void this.#pump(sessionId, stream, ++this.#generation);
  }

  #follow(sessionId: string, turnId: string, after: number): void {
    const subscribe = this.#server.chat.subscribeTurn;
    if (subscribe === undefined) {
      void this.#poll(sessionId, turnId, this.#generation);
      return;
    }
    this.#closeStream();
    const stream = subscribe.call(this.#server.chat, sessionId, turnId, after);
    void this.#pump(sessionId, stream, ++this.#generation);
  }

  /** Without a subscription (a custom server may lack one): reread the history until the turn ends. */
  async #poll(sessionId: string, turnId: string, generation: number): Promise<void> {
    this.#set({ streaming: true });
    while (generation === this.#generation && !this.#disposed) {
      await new Promise((done) => setTimeout(done, 1_000));
      try {
        const turn = await this.#server.chat.getTurn(sessionId, turnId);
        if (turn.state.status !== "running") {
          break;
        }
      } catch (error) {
        this.#options.onError(describeError(error), error);
        break;
      }
    }
    this.#set({ streaming: false });
    if (generation === this.#generation) {
      await this.load();
    }
  }

  async #pump(sessionId: string, stream: TurnEventStream, generation: number): Promise<void> {
    this.#stream = stream;
    this.#set({ streaming: true });
    try {
      for await (const event of stream) {
        if (generation !== this.#generation) {
          return;
        }
        this.#queue.push(event);
        this.#scheduleFlush(sessionId);
      }
    } catch (error) {
      if (!isAbort(error) && generation === this.#generation) {
        this.#options.onError(describeError(error), error);
      }
    } finally {
      if (generation === this.#generation) {
        this.#flush(sessionId);
        this.#stream = null;
        this.#set({ streaming: false, pendingInput: null });
      }
    }
  }

  #scheduleFlush(sessionId: string): void {
    if (this.#flushScheduled) {
      return;
    }
    this.#flushScheduled = true;
    // One render per frame however fast the events come; a hidden tab gets no frames, hence the timer.
    const run = () => {
      this.#flushScheduled = false;
      this.#flush(sessionId);
    };
    if (typeof document !== "undefined" && document.visibilityState === "visible") {
      requestAnimationFrame(run);
    } else {
      setTimeout(run, 50);
    }
  }

  #flush(sessionId: string): void {
    if (this.#queue.length === 0) {
      return;
    }
    const events = this.#queue;
    this.#queue = [];
    const state = foldAll(events, this.#snapshot.state);
    const turn = lastTurn(state);
    let seq: number | null = null;
    let ended = false;
    for (const { seq: eventSeq, event } of events) {
      // Deltas and a live answer's placeholder are not in the stored history until the answer is whole:
      // the cursor stays before them so a refresh streams them again.
      if (event.type !== "model.message.delta" && event.type !== "model.message") {
        seq = eventSeq;
      }
      ended ||= event.type === "turn.done";
    }
    if (ended) {
      writeCursor(sessionId, null);
    } else if (seq !== null && turn !== null) {
      writeCursor(sessionId, { turnId: turn.id, seq });
    }
    // The optimistic copy of the user's words goes once the server's `turn.created` carries them.
    const created = events.some(({ event }) => event.type === "turn.created");
    this.#set({ state, pendingInput: created ? null : this.#snapshot.pendingInput });
    this.#warnUnknown(state);
  }

  #warnUnknown(state: ConversationState): void {
    for (const entry of state.unknown) {
      if (entry.event.type === UNKNOWN_EVENT && !this.#warnedTypes.has(entry.event.receivedType)) {
        this.#warnedTypes.add(entry.event.receivedType);
        console.warn(`TrueForge UI: ignoring events of unknown type "${entry.event.receivedType}"`);
      }
    }
  }

  #closeStream(): void {
    this.#stream?.close();
    this.#stream = null;
    this.#queue = [];
  }
}
