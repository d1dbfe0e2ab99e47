// Where the shell is: the chat of a session (or a new one), the agents library, the agent builder, a
// settings section, the user's API keys. The bundled app keeps it in the address bar (links, back button, refresh); an embedding
// host may keep it in memory so the UI never touches its URL.

import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";

export type SettingsSection = "models" | "mcp" | "skills" | "sandbox";

export type Route =
  | { readonly name: "chat"; readonly sessionId: string | null }
  | { readonly name: "agents" }
  | { readonly name: "agent"; readonly agentId: string | null }
  | { readonly name: "settings"; readonly section: SettingsSection }
  | { readonly name: "apiKeys" };

const SECTIONS: readonly SettingsSection[] = ["models", "mcp", "skills", "sandbox"];

export function parseRoute(pathname: string): Route {
  const parts = pathname.split("/").filter((part) => part.length > 0);
  const [head, second] = parts;
  if (head === "sessions" && second) {
    return { name: "chat", sessionId: decodeURIComponent(second) };
  }
  if (head === "agents") {
    if (second === "new") {
      return { name: "agent", agentId: null };
    }
    return second ? { name: "agent", agentId: decodeURIComponent(second) } : { name: "agents" };
  }
  if (head === "api-keys") {
    return { name: "apiKeys" };
  }
  if (head === "settings") {
    const section = SECTIONS.find((candidate) => candidate === second) ?? "models";
    return { name: "settings", section };
  }
  return { name: "chat", sessionId: null };
}

export function routePath(route: Route): string {
  switch (route.name) {
    case "chat":
      return route.sessionId === null ? "/" : `/sessions/${encodeURIComponent(route.sessionId)}`;
    case "agents":
      return "/agents";
    case "agent":
      return route.agentId === null ? "/agents/new" : `/agents/${encodeURIComponent(route.agentId)}`;
    case "settings":
      return `/settings/${route.section}`;
    case "apiKeys":
      return "/api-keys";
  }
}

export interface Navigation {
  readonly route: Route;
  /** `replace`: no new history entry (a new chat that just got its session id). */
  navigate(route: Route, options?: { replace?: boolean }): void;
}

const RouterContext = createContext<Navigation | null>(null);

export function useNavigation(): Navigation {
  const navigation = useContext(RouterContext);
  if (navigation === null) {
    throw new Error("useNavigation must be used inside <TrueForgeUI/>");
  }
  return navigation;
}

export type Routing = "url" | "memory";

export function RouterProvider({
  routing,
  initial,
  children,
}: {
  readonly routing: Routing;
  readonly initial?: Route;
  readonly children: ReactNode;
}) {
  const [route, setRoute] = useState<Route>(() =>
    routing === "url" ? parseRoute(window.location.pathname) : (initial ?? { name: "chat", sessionId: null }),
  );
  useEffect(() => {
    if (routing !== "url") {
      return;
    }
    const onPop = () => setRoute(parseRoute(window.location.pathname));
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, [routing]);
  const navigate = useCallback(
    (next: Route, options: { replace?: boolean } = {}) => {
      if (routing === "url") {
        const path = routePath(next);
        if (path !== window.location.pathname) {
          if (options.replace) {
            window.history.replaceState(null, "", path);
          } else {
            window.history.pushState(null, "", path);
          }
        }
      }
      setRoute(next);
    },
    [routing],
  );
  const value = useMemo(() => ({ route, navigate }), [route, navigate]);
  return <RouterContext.Provider value={value}>{children}</RouterContext.Provider>;
}
