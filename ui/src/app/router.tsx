// Where the shell is: the chat of a session (or a new one), the agents library, the agent builder, a
// settings section, the user's API keys, the user's schedules (the routes themselves are in routes.ts). The
// bundled app keeps it in the address bar (links, back button, refresh); an embedding host may keep it in
// memory so the UI never touches its URL.

import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { parseRoute, type Route, routePath } from "./routes.js";

export { parseRoute, type Route, routePath, type SettingsSection } from "./routes.js";

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
