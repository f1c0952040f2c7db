// Builds the web terminal (docs/web.md): Vite bundles web/index.html and web/src (with the SDK
// sources it imports) into web/dist, which the gateway serves at `/`. web/dist/build.json records
// every input's size, mtime and SHA-256 (web/, sdk/src, the lock file), so that scripts/start.mjs
// rebuilds only when a source changed, as it does for dist/ (scripts/build.mjs).
//
// Run: node scripts/build-web.mjs   (scripts/build.mjs runs it: `npm install`, `npm ci`, `npm run build`).
import { readdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { changedInput, fingerprint } from './build-inputs.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const WEB_DIST = join(ROOT, 'web', 'dist');
const MANIFEST = join(WEB_DIST, 'build.json');
const INPUT_DIRS = ['web', 'sdk/src'];
const INPUT_FILES = ['package-lock.json', 'scripts/build-web.mjs'];

/** Every file the build reads from this repository (web/dist and anything generated excluded). */
function inputs() {
  const found = [...INPUT_FILES];
  const walk = (dir) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (path !== 'web/dist' && entry.name !== 'node_modules') walk(path);
      } else found.push(path);
    }
  };
  for (const dir of INPUT_DIRS) walk(dir);
  return found.sort();
}

/** Builds web/dist and records its inputs. Returns the build's duration in ms. */
export async function buildWeb() {
  const started = performance.now();
  const { build } = await import('vite');
  await build({ configFile: join(ROOT, 'web', 'vite.config.ts'), logLevel: 'warn' });
  compressAssets();
  const files = Object.fromEntries(inputs().map((path) => [path, fingerprint(path)]));
  const temporary = `${MANIFEST}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ inputs: files }, null, 1)}\n`);
  renameSync(temporary, MANIFEST);
  return performance.now() - started;
}

/**
 * Writes a .br and a .gz beside each asset, compressed once at their best levels: the gateway
 * serves whichever the browser accepts (@fastify/static preCompressed) and compresses nothing per
 * request.
 */
function compressAssets() {
  const dir = join(WEB_DIST, 'assets');
  for (const name of readdirSync(dir)) {
    if (!/\.(js|css|svg|json)$/.test(name)) continue;
    const data = readFileSync(join(dir, name));
    writeFileSync(join(dir, `${name}.br`), brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
    writeFileSync(join(dir, `${name}.gz`), gzipSync(data, { level: 9 }));
  }
}

/** Why web/dist does not match its sources (no build, an input added, changed or gone), or null. */
export function webStaleReason() {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
    statSync(join(WEB_DIST, 'index.html'));
  } catch {
    return 'no build in web/dist yet';
  }
  const added = inputs().find((path) => manifest.inputs[path] === undefined);
  if (added !== undefined) return `${added} is new`;
  return changedInput(manifest.inputs);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const ms = await buildWeb();
  process.stdout.write(`build: web/ -> web/dist in ${ms.toFixed(0)} ms (scripts/build-web.mjs; ${relative(ROOT, WEB_DIST)})\n`);
}
