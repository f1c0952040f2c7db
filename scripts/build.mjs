// Builds src/ ahead of start (docs/architecture.md, "Build and start"): esbuild bundles src/main.ts
// into dist/main.js and every worker entry, src/**/<name>-worker.ts, into dist/<name>-worker.js
// (adapters/worker-entry.ts spawns those). The ES-module packages of many small files are bundled
// with the code (BUNDLED: loading their ~2,000 files was most of the start, docs/performance.md
// "Start"); the other dependencies stay external and load from node_modules as they do under tsx
// (better-sqlite3 is native, the fastify packages are CommonJS and some read files beside them).
// dist/build.json records each input's size, mtime and SHA-256, so that scripts/start.mjs can tell a
// build older than its sources without loading esbuild.
//
// Run as a script, it also builds the web terminal (scripts/build-web.mjs).
//
// Run: node scripts/build.mjs   (npm runs it on `npm install` and `npm ci` as the `prepare` script;
// scripts/start.mjs runs it when dist/ is missing or stale).
import { mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';
import { changedInput, fingerprint } from './build-inputs.mjs';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST = join(ROOT, 'dist');
const MANIFEST = join(DIST, 'build.json');
/** Inputs that change the output without being bundled: the build itself and esbuild's TypeScript settings. */
const BUILD_INPUTS = ['scripts/build.mjs', 'tsconfig.json'];
const WORKER_ENTRY = /^[a-z0-9-]+-worker\.ts$/;
/**
 * Direct dependencies bundled with the code, and with them whatever they import that is not a
 * direct dependency (viem's ox, @noble/*, ...). The TypeBox type provider is listed so that, if its
 * code is ever imported, it shares the bundled typebox.
 */
const BUNDLED = new Set(['typebox', 'viem', 'jose', '@fastify/type-provider-typebox']);

function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Leaves node built-ins and the direct dependencies outside BUNDLED to Node's loader, at run time. */
function externals() {
  const dependencies = new Set(Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).dependencies));
  return {
    name: 'externals',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, ({ path }) => {
        const name = packageName(path);
        if (path.startsWith('node:') || (dependencies.has(name) && !BUNDLED.has(name))) return { path, external: true };
        return undefined;
      });
    },
  };
}

/** Every worker entry under src/, as paths relative to the root (adapters/worker-entry.ts names them). */
function workerEntries(dir = join(ROOT, 'src')) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...workerEntries(path));
    else if (WORKER_ENTRY.test(entry.name)) found.push(relative(ROOT, path));
  }
  return found;
}

/** A bundled file of a package: that package's package.json; a file of the project: itself. */
function packageManifest(input) {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return input;
  const rest = input.slice(at + 'node_modules/'.length);
  return `${input.slice(0, at)}node_modules/${packageName(rest)}/package.json`;
}

/** Writes `contents` to `path` by a rename, so a process starting meanwhile reads the old file or the new one, never half of one. */
function writeAtomically(path, contents) {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, path);
}

/** Builds dist/ from src/ and records what it was built from. Returns the build's duration in ms. */
export async function buildDist() {
  const started = performance.now();
  const { build, stop } = await import('esbuild');
  const workers = workerEntries();
  const names = workers.map((w) => basename(w));
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw new Error(`two worker entries named ${twice}: dist/ holds one file per name (adapters/worker-entry.ts)`);
  // stop(): esbuild's service process would otherwise live on beside the service start.mjs runs.
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ['src/main.ts', ...workers],
    entryNames: '[name]',
    outdir: 'dist',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    plugins: [externals()],
    // Stack traces name src/ lines with NODE_OPTIONS=--enable-source-maps (not on by default: it slows every stack trace).
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    write: false,
    logLevel: 'warning',
  }).finally(stop);
  // A bundled CommonJS module calling require() would throw when it runs (dist/ is ES modules): refuse it now.
  const required = result.outputFiles.find((file) => file.path.endsWith('.js') && file.text.includes('__require('));
  if (required !== undefined) throw new Error(`${relative(ROOT, required.path)}: a bundled CommonJS module uses require(); make its package external (scripts/build.mjs BUNDLED)`);
  mkdirSync(DIST, { recursive: true });
  const outputs = result.outputFiles.map((file) => relative(DIST, file.path));
  for (const file of result.outputFiles) writeAtomically(file.path, file.contents);
  // Outputs of an earlier build that this one did not write (a renamed worker) would only mislead.
  for (const name of readdirSync(DIST)) {
    if (name !== 'build.json' && !outputs.includes(name) && !name.endsWith('.tmp')) rmSync(join(DIST, name), { force: true });
  }
  // A bundled package stands in the manifest as its package.json (npm rewrites it on every install of
  // the package), so the start-time check stats a few dozen files rather than thousands.
  const inputs = [...new Set([...Object.keys(result.metafile.inputs).map(packageManifest), ...BUILD_INPUTS])].sort();
  const manifest = { outputs, inputs: Object.fromEntries(inputs.map((path) => [path, fingerprint(path)])) };
  writeAtomically(MANIFEST, `${JSON.stringify(manifest, null, 1)}\n`);
  return performance.now() - started;
}

/**
 * Why dist/ cannot run as it is (no build, an output missing, an input changed or gone), or null
 * when it matches the sources. An input whose size and mtime are as recorded is taken as
 * unchanged; one whose mtime moved is read and hashed (a `touch` or a checkout back and forth needs
 * no build). A file no input imports cannot change the build, so new files need no scan.
 */
export function staleReason() {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(MANIFEST, 'utf8'));
  } catch {
    return 'no build in dist/ yet';
  }
  for (const output of manifest.outputs) {
    try {
      statSync(join(DIST, output));
    } catch {
      return `dist/${output} is missing`;
    }
  }
  return changedInput(manifest.inputs);
}

// Run as a script (not imported by start.mjs); argv[1] may name it through a symlink, import.meta.url never does.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const ms = await buildDist();
  process.stdout.write(`build: src/ -> dist/ in ${ms.toFixed(0)} ms (scripts/build.mjs)\n`);
  const { buildWeb } = await import('./build-web.mjs');
  const webMs = await buildWeb();
  process.stdout.write(`build: web/ -> web/dist in ${webMs.toFixed(0)} ms (scripts/build-web.mjs)\n`);
}
