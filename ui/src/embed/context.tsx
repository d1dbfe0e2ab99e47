// The contexts every container reads: the server port, the slot components, the shell's options, who is
// signed in.

import type { Me } from "@trueforge/sdk";
import { createContext, useContext } from "react";
import type { AgentUIServer } from "../server/port.js";
import type { Slots } from "./slots.js";

export const ServerContext = createContext<AgentUIServer | null>(null);

/** The server port of the enclosing `<TrueForgeUI/>` (or `ServerContext.Provider`). */
export function useServer(): AgentUIServer {
  const server = useContext(ServerContext);
  if (server === null) {
    throw new Error("useServer must be used inside <TrueForgeUI/> or a ServerContext.Provider");
  }
  return server;
}

/**
 * Where menus, dialogs and drawers are portalled: inside the UI's root element, so they keep its theme
 * variables (a portal to `document.body` would leave them unstyled inside a host page).
 */
export const PortalContext = createContext<HTMLElement | null>(null);

export function usePortalContainer(): HTMLElement | undefined {
  return useContext(PortalContext) ?? undefined;
}

export const SlotsContext = createContext<Slots | null>(null);

export function useSlots(): Slots {
  const slots = useContext(SlotsContext);
  if (slots === null) {
    throw new Error("useSlots must be used inside <TrueForgeUI/>");
  }
  return slots;
}

/** How the shell offers agents: any model (free chat), one fixed agent, or a library of saved agents. */
export type ChatMode =
  | { readonly type: "free" }
  | { readonly type: "agent"; readonly agentName: string }
  | { readonly type: "library" };

export interface ShellOptions {
  readonly mode: ChatMode;
  readonly brand: string;
  /** The agent builder and the settings screens are offered. */
  readonly builder: boolean;
  readonly settings: boolean;
}

export const ShellContext = createContext<ShellOptions>({
  mode: { type: "free" },
  brand: "TrueForge",
  builder: true,
  settings: true,
});

export function useShell(): ShellOptions {
  return useContext(ShellContext);
}

/** Who uses the UI, as the server said when it started, and how they leave. */
export interface Account {
  /** `null` for a port without login (everyone may use all it offers); `type: "default"` for a server without login. */
  readonly me: Me | null;
  /** Logs out (the server clears its cookie) and shows the signed-out screen. */
  logOut(): Promise<void>;
}

export const AccountContext = createContext<Account>({ me: null, logOut: async () => {} });

export function useAccount(): Account {
  return useContext(AccountContext);
}

/** Whether the caller may see the settings: an admin, or anyone where there is no login to tell. */
export function useIsAdmin(): boolean {
  const { me } = useAccount();
  return me === null || me.role === "admin";
}

/** Whether someone is logged in with the server's login (not the local user of a server without one). */
export function isLoggedIn(me: Me | null): me is Me {
  return me !== null && me.type !== "default";
}
