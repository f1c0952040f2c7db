/**
 * The web terminal (docs/web.md) served at `/`: web/dist/index.html, never cached (it names the
 * current build's assets), and web/dist/assets/*, whose names carry a hash of their content and
 * are cached for a year as immutable, each sent precompressed (brotli or gzip, written by
 * scripts/build-web.mjs) when the browser accepts it. The page loads nothing from elsewhere, and
 * its Content-Security-Policy says so. Without a build (web/dist missing), `/` answers 503 saying
 * how to build it; the API is unaffected either way.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/**
 * Scripts, styles, fonts and connections from this origin only; inline style attributes are
 * allowed because the chart libraries position their canvases with them. No frames, no plugins.
 */
export const TERMINAL_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; " +
  "object-src 'none'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

/** The repository's web/ folder: found upward from this module (src/gateway/ under tsx, dist/ when built). */
function webFolder(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, 'web', 'vite.config.ts'))) return join(dir, 'web');
    dir = dirname(dir);
  }
  return null;
}

export async function registerTerminal(app: FastifyInstance): Promise<void> {
  const web = webFolder();
  const dist = web === null ? null : join(web, 'dist');
  const built = dist !== null && existsSync(join(dist, 'index.html'));
  if (built) {
    await app.register(fastifyStatic, {
      root: join(dist, 'assets'),
      prefix: '/assets/',
      wildcard: true,
      index: false,
      preCompressed: true,
      immutable: true,
      maxAge: '365d',
      decorateReply: false,
      schemaHide: true,
    });
  }
  app.get('/', { schema: { hide: true } }, async (_req, reply) => {
    const index = built ? readIndex(dist) : null;
    if (index === null) {
      return reply.status(503).send({ error: 'UNAVAILABLE', message: 'the web terminal is not built: run `npm run build` (the API is served as usual; see /docs)' });
    }
    return reply
      .header('Cache-Control', 'no-cache')
      .header('Content-Security-Policy', TERMINAL_CSP)
      .header('X-Content-Type-Options', 'nosniff')
      .header('Referrer-Policy', 'same-origin')
      .type('text/html; charset=utf-8')
      .send(index);
  });
}

/** Read per request (a few hundred bytes): a rebuild while the service runs is served at once. */
function readIndex(dist: string): string | null {
  try {
    return readFileSync(join(dist, 'index.html'), 'utf8');
  } catch {
    return null;
  }
}
