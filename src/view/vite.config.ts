import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The viewer's web app (docs/decisions/0022-viewer.md): Preact components in TSX, compiled by
 * Vite's own transform (no framework plugin needed), written to build/viewer/ with relative asset
 * paths so the server can serve it from any origin. The plot library loads as a separate chunk.
 */
export default defineConfig({
  root: fileURLToPath(new URL('./web/', import.meta.url)),
  base: './',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../../build/viewer/', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
    target: 'es2022',
  },
});
