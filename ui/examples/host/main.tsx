// A host app that embeds the TrueForge chat with its own layout (its header, the chat history in a narrow
// column, the chat beside it), its own theme tokens and its own tool card. It talks to a TrueForge server at
// the same origin (serve this page behind the same host, or proxy `/api` to the server).

import { type LayoutParts, type ToolCardProps, TrueForgeUI } from "@trueforge/ui";
import "@trueforge/ui/style.css";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

/** The host's tool card: one line per call, in its own style. */
function AcmeToolCard({ view }: ToolCardProps) {
  const state = view.response ? "finished" : view.waitingFor ? `waiting for ${view.waitingFor}` : "running";
  return (
    <div
      data-testid="custom-tool-card"
      style={{ border: "1px dashed #0a7", borderRadius: 6, padding: "4px 8px" }}
    >
      Acme tool · <strong>{view.call.function.name}</strong> · {state}
    </div>
  );
}

/** The host's layout: a header of its own, the history on the left, the chat on the right. */
function AcmeLayout({ navigation, screen }: LayoutParts) {
  return (
    <div style={{ display: "grid", gridTemplateRows: "48px 1fr", height: "100vh" }}>
      <header
        data-testid="host-header"
        style={{ background: "#0a7", color: "white", padding: "12px 16px", fontWeight: 600 }}
      >
        Acme support
      </header>
      <div style={{ display: "grid", gridTemplateColumns: "240px 1fr", minHeight: 0 }}>
        <aside style={{ borderRight: "1px solid #ddd", minHeight: 0, display: "flex" }}>{navigation}</aside>
        <main style={{ minHeight: 0, display: "flex", flexDirection: "column" }}>{screen}</main>
      </div>
    </div>
  );
}

const host = document.getElementById("host");
if (host) {
  createRoot(host).render(
    <StrictMode>
      <TrueForgeUI
        server={{ baseUrl: "" }}
        layout={AcmeLayout}
        brand="Acme assistant"
        tokens={{ "--tf-accent": "#00a077" }}
        slots={{ ToolCard: AcmeToolCard }}
        settings={false}
      />
    </StrictMode>,
  );
}
