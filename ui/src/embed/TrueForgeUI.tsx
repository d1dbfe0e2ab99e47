// `<TrueForgeUI/>`: the whole chat app as one component. The bundled app is this component with the
// server at the page's own origin and the route in the address bar; a host app embeds it with its own server
// (or a port of its own), layout, mode, theme tokens and slot components.

import * as Tooltip from "@radix-ui/react-tooltip";
import { useEffect, useMemo, useState } from "react";
import { Toaster } from "sonner";
import { type Route, RouterProvider, type Routing } from "../app/router.js";
import type { AgentUIServer } from "../server/port.js";
import { createTrueForgeServer, type TrueForgeServerOptions } from "../server/trueforge.js";
import { type ThemePreference, ThemeProvider, type ThemeTokens } from "../theme/theme.js";
import { AuthGate, type LoginBehaviour } from "./AuthGate.js";
import {
  type ChatMode,
  PortalContext,
  ServerContext,
  ShellContext,
  type ShellOptions,
  SlotsContext,
} from "./context.js";
import { type Layout, Shell } from "./Shell.js";
import { defaultSlots, type SlotOverrides } from "./slots.js";
// The UI's tokens and component styles travel with the component (after its parts' own, as the app always had
// them), so `@trueforge/ui/style.css` carries them too.
import "../theme/app.css";

export interface TrueForgeUIProps {
  /** Our server (its URL and credentials) or a port of the host's own. */
  readonly server: TrueForgeServerOptions | AgentUIServer;
  /** `sidebar` (default; a drawer at phone width), `drawer`, `dock`, `widget`, or a component of the host's. */
  readonly layout?: Layout;
  /** Free chat with any model (default), one saved agent, or the library of saved agents. */
  readonly mode?: ChatMode;
  /** `url`: the route lives in the address bar (the bundled app); `memory` (default): it never touches it. */
  readonly routing?: Routing;
  readonly initialRoute?: Route;
  readonly theme?: ThemePreference;
  /** CSS variables over the theme's, e.g. `{"--tf-accent": "#0a7"}`. */
  readonly tokens?: ThemeTokens;
  readonly slots?: SlotOverrides;
  readonly brand?: string;
  /**
   * Offer the agent builder (default true) and the settings screens (default true, when the server has them;
   * only to admins where the server has login).
   */
  readonly builder?: boolean;
  readonly settings?: boolean;
  /**
   * When the server has login and nobody is signed in as the UI starts: `redirect` sends the browser to the
   * server's login at once (the bundled app), `prompt` (default) shows a Sign in button. A login refused
   * later (any 401) always shows the button.
   */
  readonly login?: LoginBehaviour;
  readonly className?: string;
}

function isPort(server: TrueForgeServerOptions | AgentUIServer): server is AgentUIServer {
  return "chat" in server;
}

function useNarrow(): boolean {
  const [narrow, setNarrow] = useState(
    () => typeof matchMedia === "function" && matchMedia("(max-width: 767px)").matches,
  );
  useEffect(() => {
    if (typeof matchMedia !== "function") {
      return;
    }
    const query = matchMedia("(max-width: 767px)");
    const onChange = () => setNarrow(query.matches);
    query.addEventListener("change", onChange);
    return () => query.removeEventListener("change", onChange);
  }, []);
  return narrow;
}

export function TrueForgeUI(props: TrueForgeUIProps) {
  const { server: serverProp } = props;
  const server = useMemo(
    () => (isPort(serverProp) ? serverProp : createTrueForgeServer(serverProp)),
    [serverProp],
  );
  const slots = useMemo(() => ({ ...defaultSlots, ...props.slots }), [props.slots]);
  const shell: ShellOptions = useMemo(
    () => ({
      mode: props.mode ?? { type: "free" },
      brand: props.brand ?? "TrueForge",
      builder: props.builder ?? true,
      settings: props.settings ?? true,
    }),
    [props.mode, props.brand, props.builder, props.settings],
  );
  const narrow = useNarrow();
  const layout = props.layout ?? "sidebar";
  const effectiveLayout = layout === "sidebar" && narrow ? "drawer" : layout;
  const [rootElement, setRootElement] = useState<HTMLDivElement | null>(null);
  return (
    <ThemeProvider initial={props.theme}>
      {(isDark) => (
        <div
          className={`tf-root${props.className ? ` ${props.className}` : ""}`}
          data-theme={isDark ? "dark" : "light"}
          style={props.tokens as React.CSSProperties | undefined}
          ref={setRootElement}
        >
          <PortalContext.Provider value={rootElement}>
            <ServerContext.Provider value={server}>
              <SlotsContext.Provider value={slots}>
                <ShellContext.Provider value={shell}>
                  <Tooltip.Provider delayDuration={400}>
                    <RouterProvider
                      routing={props.routing ?? "memory"}
                      {...(props.initialRoute ? { initial: props.initialRoute } : {})}
                    >
                      <AuthGate server={server} login={props.login ?? "prompt"}>
                        <Shell layout={effectiveLayout} />
                      </AuthGate>
                    </RouterProvider>
                  </Tooltip.Provider>
                  <Toaster theme={isDark ? "dark" : "light"} richColors closeButton position="bottom-right" />
                </ShellContext.Provider>
              </SlotsContext.Provider>
            </ServerContext.Provider>
          </PortalContext.Provider>
        </div>
      )}
    </ThemeProvider>
  );
}
