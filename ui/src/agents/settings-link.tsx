// The builder's ways to the settings, for what an agent needs but nobody configured yet. Shown only where the
// app has settings to open (an embedding may switch them off; a server may offer none) and the user may open
// them (an admin).

import type { ReactNode } from "react";
import { type SettingsSection, useNavigation } from "../app/router.js";
import { useIsAdmin, useServer, useShell } from "../embed/context.js";
import { Loadable } from "../settings/states.js";
import type { Loaded } from "../settings/useLoad.js";

/** Opens a settings section; `null` where there are no settings to open. */
export function useOpenSettings(): ((section: SettingsSection) => void) | null {
  const server = useServer();
  const shell = useShell();
  const isAdmin = useIsAdmin();
  const { navigate } = useNavigation();
  return shell.settings && server.settings && isAdmin
    ? (section) => navigate({ name: "settings", section })
    : null;
}

/** A link to a settings section, or nothing where there are no settings. */
export function SettingsLink({
  section,
  children,
}: {
  readonly section: SettingsSection;
  readonly children: ReactNode;
}) {
  const openSettings = useOpenSettings();
  return openSettings ? (
    <button type="button" className="tf-link" onClick={() => openSettings(section)}>
      {children}
    </button>
  ) : null;
}

/**
 * What a picker of configured things (MCP servers, skills) shows above its choices: the load's spinner or
 * failure; once loaded, when there is nothing to choose (`empty`), that no `what` is configured, with the way
 * to add one.
 */
export function PickerState({
  loaded,
  label,
  empty,
  what,
  section,
}: {
  readonly loaded: Loaded<unknown>;
  readonly label: string;
  readonly empty: boolean;
  readonly what: string;
  readonly section: SettingsSection;
}) {
  return (
    <Loadable loaded={loaded} label={label}>
      {loaded.data && empty ? (
        <p className="tf-muted">
          {`No ${what} is configured.`} <SettingsLink section={section}>Add one in the settings</SettingsLink>
        </p>
      ) : null}
    </Loadable>
  );
}
