// The app the server embeds and serves at `/`: `<TrueForgeUI/>` on the page's own origin.

import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { TrueForgeUI } from "../embed/TrueForgeUI.js";
import { completeAuthorizationPopup } from "../state/mcp-auth.js";
import "./page.css";

const root = document.getElementById("root");
if (root !== null) {
  if (completeAuthorizationPopup()) {
    root.textContent = "Authorization finished. This window closes by itself.";
  } else {
    createRoot(root).render(
      <StrictMode>
        <TrueForgeUI server={{ baseUrl: "" }} routing="url" layout="sidebar" login="redirect" />
      </StrictMode>,
    );
  }
}
