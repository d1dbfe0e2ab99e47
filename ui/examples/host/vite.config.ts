// Builds the example host app against the package's sources (as a host would against the published package).
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const src = fileURLToPath(new URL("../../src/", import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  plugins: [react()],
  resolve: {
    alias: [
      { find: "@trueforge/ui/style.css", replacement: `${src}theme/app.css` },
      { find: "@trueforge/ui", replacement: `${src}index.ts` },
    ],
  },
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
  server: { proxy: { "/api": "http://127.0.0.1:8790" } },
});
