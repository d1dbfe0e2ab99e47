// The library build of `@trueforge/ui` (not the app the server embeds): ES modules with the dependencies
// left as imports for the host's bundler, and one stylesheet (`@trueforge/ui/style.css`). Types come from
// `tsc -p tsconfig.lib.json`. Output in `lib/` (not committed).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const manifest = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};
const external = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)];

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "lib",
    emptyOutDir: true,
    sourcemap: false,
    target: "es2022",
    copyPublicDir: false,
    lib: {
      entry: fileURLToPath(new URL("./src/index.ts", import.meta.url)),
      formats: ["es"],
      fileName: "index",
      cssFileName: "style",
    },
    rolldownOptions: {
      // A dependency and its subpaths (`react/jsx-runtime`, `highlight.js/lib/core`) stay imports.
      external: (id: string) => external.some((name) => id === name || id.startsWith(`${name}/`)),
    },
  },
});
