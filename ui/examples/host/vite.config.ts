// Builds the example host app against the package's library build (`npm run build:lib` first), as a host
// would against the installed package: `@trueforge/ui` is `lib/index.js`, its stylesheet `lib/style.css`.
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const lib = fileURLToPath(new URL("../../lib/", import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  plugins: [react()],
  resolve: {
    alias: [
      { find: "@trueforge/ui/style.css", replacement: `${lib}style.css` },
      { find: /^@trueforge\/ui$/, replacement: `${lib}index.js` },
    ],
  },
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
  server: { proxy: { "/api": "http://127.0.0.1:8790" } },
});
