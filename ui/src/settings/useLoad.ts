// One read from the server for a screen: loading, the data or the error (also toasted), and a reload.

import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { toast } from "sonner";
import { describeError } from "../state/errors.js";

export interface Loaded<T> {
  readonly data: T | undefined;
  /** The failure, described for people; `null` while loading or after a success. */
  readonly error: string | null;
  readonly loading: boolean;
  reload(): void;
  /** Changes the loaded data in place (after a save or a delete), without asking the server again. */
  update(change: (current: T) => T): void;
}

/**
 * Runs `load` (memoise it with `useCallback`; a new function loads again) and reports failures as a toast
 * saying `Could not load <what>`. `load === null` loads nothing (the port lacks the method).
 */
export function useLoad<T>(load: (() => Promise<T>) | null, what: string): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(load !== null);
  const [attempt, setAttempt] = useState(0);
  const generation = useRef(0);
  const whatRef = useRef(what);
  whatRef.current = what;

  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` re-runs the load on Retry.
  useEffect(() => {
    const mine = ++generation.current;
    if (load === null) {
      setLoading(false);
      return;
    }
    setLoading(true);
    setError(null);
    load().then(
      (value) => {
        if (mine === generation.current) {
          setData(value);
          setLoading(false);
        }
      },
      (failure: unknown) => {
        if (mine === generation.current) {
          const message = describeError(failure);
          setError(message);
          setLoading(false);
          toast.error(`Could not load ${whatRef.current}: ${message}`);
        }
      },
    );
    return () => {
      // A newer load, or the screen is gone: this answer is dropped.
      generation.current++;
    };
  }, [load, attempt]);

  const reload = useCallback(() => setAttempt((n) => n + 1), []);
  const update = useCallback((change: (current: T) => T) => {
    setData((current) => (current === undefined ? current : change(current)));
  }, []);
  return { data, error, loading, reload, update };
}

/**
 * {@link useLoad} of `read(port)`, loaded again when the port changes; nothing is loaded without a port.
 * `read` is taken as it is when it runs, so an inline function does not start a load on every render.
 */
export function useLoadFrom<P, T>(
  port: P | undefined,
  read: (port: P) => Promise<T>,
  what: string,
): Loaded<T> {
  const readRef = useRef(read);
  readRef.current = read;
  const load = useMemo(() => (port ? () => readRef.current(port) : null), [port]);
  return useLoad(load, what);
}

/**
 * `list` after `saved` was saved: in place of the entry of the same name, or added at the end when it is new
 * (the server answers a save with the whole entry, so the list is not asked for again).
 */
export function withSaved<T extends { readonly name: string }>(list: readonly T[], saved: T): T[] {
  return list.some((entry) => entry.name === saved.name)
    ? list.map((entry) => (entry.name === saved.name ? saved : entry))
    : [...list, saved];
}
