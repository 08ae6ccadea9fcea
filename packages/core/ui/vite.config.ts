import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The dashboard (docs/dashboard.md): Preact, built into `packages/core/dist/dashboard`, which the core serves at
 * `/dashboard/` below the mount. Relative URLs (`base: './'`), so any mount prefix works; no inline script or style
 * (the page runs under `default-src 'self'`).
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
