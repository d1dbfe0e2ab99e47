// The app the server embeds. The output must be byte-identical for the same sources on any machine
// (CI rebuilds it and compares with the committed `dist/`): no source maps (they carry paths), no build
// dates, a fixed inline limit, content hashes in file names.
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  plugins: [react()],
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    assetsInlineLimit: 4096,
    target: "es2022",
    reportCompressedSize: false,
  },
  server: {
    // `npm run dev` proxies the API to a server started with `cargo run -- serve` on the default port.
    proxy: { "/api": "http://127.0.0.1:8790", "/healthz": "http://127.0.0.1:8790" },
  },
});
