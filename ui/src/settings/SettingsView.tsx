// The settings: model providers, MCP servers, skills and the sandbox provider, one section at a time
// behind tabs that change the route (so each section has its address).

import type { ReactNode } from "react";
import { routePath, type SettingsSection, useNavigation } from "../app/router.js";
import { useServer } from "../embed/context.js";
import { EmptyState } from "./fields.js";
import { McpServersSection } from "./McpServers.js";
import { ModelProvidersSection } from "./ModelProviders.js";
import { SandboxSection } from "./Sandbox.js";
import { SkillsSection } from "./Skills.js";
import "./screens.css";

const SECTIONS: readonly { readonly id: SettingsSection; readonly label: string }[] = [
  { id: "models", label: "Model providers" },
  { id: "mcp", label: "MCP servers" },
  { id: "skills", label: "Skills" },
  { id: "sandbox", label: "Sandbox" },
];

export default function SettingsView({ section }: { readonly section: SettingsSection }) {
  const server = useServer();
  const { navigate } = useNavigation();
  if (!server.settings) {
    return (
      <div className="tf-page" data-testid="settings">
        <h1>Settings</h1>
        <EmptyState>This server offers no settings.</EmptyState>
      </div>
    );
  }
  let content: ReactNode;
  switch (section) {
    case "models":
      content = <ModelProvidersSection />;
      break;
    case "mcp":
      content = <McpServersSection />;
      break;
    case "skills":
      content = <SkillsSection />;
      break;
    case "sandbox":
      content = <SandboxSection />;
      break;
  }
  return (
    <div className="tf-page" data-testid="settings">
      <h1>Settings</h1>
      <nav className="tf-tabs" aria-label="Settings sections">
        <ul>
          {SECTIONS.map((entry) => (
            <li key={entry.id}>
              <a
                href={routePath({ name: "settings", section: entry.id })}
                className={`tf-tab${entry.id === section ? " tf-tab-active" : ""}`}
                aria-current={entry.id === section ? "page" : undefined}
                data-testid={`settings-tab-${entry.id}`}
                onClick={(event) => {
                  if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) {
                    return;
                  }
                  event.preventDefault();
                  navigate({ name: "settings", section: entry.id });
                }}
              >
                {entry.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {/* A new key per section: each opens fresh, and its loads start over. */}
      <div key={section} className="tf-tab-panel">
        {content}
      </div>
    </div>
  );
}
