/**
 * Vite's build of the web terminal (docs/web.md): web/index.html and web/src -> web/dist, hashed
 * assets under web/dist/assets (the gateway serves them immutable), everything bundled so that
 * the page loads nothing from outside the service. Preact's JSX through Vite's own transform.
 */
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    chunkSizeWarningLimit: 800,
  },
});
