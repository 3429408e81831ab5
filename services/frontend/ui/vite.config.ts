// Builds the UI into dist/, which the frontend service serves at / and /assets/*.
// `npm run dev` proxies /api to a running Flamewatch (FLAMEWATCH_URL, default http://localhost:8080).
import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [react()],
  base: "/",
  build: {
    outDir: "dist",
    assetsDir: "assets",
    chunkSizeWarningLimit: 2048,
  },
  server: {
    proxy: { "/api": process.env.FLAMEWATCH_URL ?? "http://localhost:8080" },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
