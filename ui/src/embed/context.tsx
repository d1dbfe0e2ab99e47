// The contexts every container reads: the server port, the slot components, the shell's options.

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
