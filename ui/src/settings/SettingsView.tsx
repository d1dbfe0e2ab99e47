// The settings: model providers, MCP servers, skills and the sandbox provider, one section at a time
// behind tabs that change the route (so each section has its address).

import type { ComponentType } from "react";
import { routePath, type SettingsSection, useNavigation } from "../app/router.js";
import { useServer } from "../embed/context.js";
import { McpServersSection } from "./McpServers.js";
import { ModelProvidersSection } from "./ModelProviders.js";
import { SandboxSection } from "./Sandbox.js";
import { SkillsSection } from "./Skills.js";
import { EmptyState } from "./states.js";
import "./screens.css";

const SECTIONS: readonly {
  readonly id: SettingsSection;
  readonly label: string;
  readonly Content: ComponentType;
}[] = [
  { id: "models", label: "Model providers", Content: ModelProvidersSection },
  { id: "mcp", label: "MCP servers", Content: McpServersSection },
  { id: "skills", label: "Skills", Content: SkillsSection },
  { id: "sandbox", label: "Sandbox", Content: SandboxSection },
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
  const Content = SECTIONS.find((entry) => entry.id === section)?.Content;
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
        {Content ? <Content /> : null}
      </div>
    </div>
  );
}
