// The state of a settings tab whose things have names and come from a catalog (MCP servers, skills).

import { useServer } from "../embed/context.js";
import type { SettingsPort } from "../server/port.js";
import { type Loaded, useLoadFrom, withSaved } from "./useLoad.js";

export interface NamedSettings<T, E> {
  readonly catalog: Loaded<E[]>;
  readonly configured: Loaded<T[]>;
  /** What is configured; empty until loaded. */
  readonly list: readonly T[];
  /** The catalog's entries not configured yet (a name is configured once). */
  readonly available: readonly E[];
  /** Shows a saved thing in the list (in place of the old one, or added). */
  put(saved: T): void;
  /** Takes a deleted thing off the list. */
  drop(name: string): void;
}

/** The catalog and the configured things, read once; a save or a delete changes the list without reading it again. */
export function useNamedSettings<T extends { readonly name: string }, E extends { readonly name: string }>(
  readCatalog: (settings: SettingsPort) => Promise<E[]>,
  readConfigured: (settings: SettingsPort) => Promise<T[]>,
  what: { readonly catalog: string; readonly configured: string },
): NamedSettings<T, E> {
  const settings = useServer().settings;
  const catalog = useLoadFrom(settings, readCatalog, what.catalog);
  const configured = useLoadFrom(settings, readConfigured, what.configured);
  const list = configured.data ?? [];
  const names = new Set(list.map((entry) => entry.name));
  return {
    catalog,
    configured,
    list,
    available: (catalog.data ?? []).filter((entry) => !names.has(entry.name)),
    put: (saved) => configured.update((current) => withSaved(current, saved)),
    drop: (name) => configured.update((current) => current.filter((entry) => entry.name !== name)),
  };
}
