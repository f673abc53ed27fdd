// Builds the dashboard (/) and the API reference (/docs) into dashboard/dist, the orchestrator's
// Workers static assets (wrangler.toml [assets]). Preact via JSX; everything is bundled, nothing is
// fetched from a CDN at run time.
import path from "node:path";
import { defineConfig } from "vite";

const root = import.meta.dirname;

export default defineConfig({
  root,
  base: "/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: path.join(root, "dist"),
    emptyOutDir: true,
    target: "es2022",
    assetsInlineLimit: 0,
    rollupOptions: { input: { index: path.join(root, "index.html"), docs: path.join(root, "docs.html") } },
  },
  logLevel: "warn",
});
