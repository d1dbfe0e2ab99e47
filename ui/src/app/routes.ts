// The shell's addresses: a route read from a path, and the path of a route (both ways, so links, the back
// button and a refresh land on the same screen). Without React, so the tests run them in Node.

export type SettingsSection = "models" | "mcp" | "skills" | "sandbox";

export type Route =
  | { readonly name: "chat"; readonly sessionId: string | null }
  | { readonly name: "agents" }
  | { readonly name: "agent"; readonly agentId: string | null }
  | { readonly name: "settings"; readonly section: SettingsSection }
  | { readonly name: "apiKeys" }
  | { readonly name: "schedules" };

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
  if (head === "schedules") {
    return { name: "schedules" };
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
    case "schedules":
      return "/schedules";
  }
}
