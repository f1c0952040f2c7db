/**
 * Spawns a worker thread from its entry module, the same call from source and from the build
 * (docs/architecture.md, "Build and start"):
 *
 *   const worker = spawnWorker(new URL('./snapshot-worker.ts', import.meta.url), { dbPath });
 *
 * - From source (tests, benchmarks, `node --import tsx src/main.ts`; this module is then a .ts
 *   file): the worker starts in store/worker-boot.mjs, which registers tsx's loader (a worker
 *   thread does not inherit `--import tsx` on Node 20) and imports the entry, whose URL it reads
 *   from `workerData.entry`.
 * - From the build (`npm start` runs dist/main.js): every `src/**\/<name>-worker.ts` is an entry
 *   point of its own, built to `dist/<name>-worker.js` beside the bundle (scripts/build.mjs), and
 *   the worker runs that file. Inside the bundle `import.meta.url` is dist/main.js, so the caller's
 *   URL points into dist/ and only its file name is used.
 *
 * So a new worker needs no registration beyond its name: the entry's file name ends in
 * `-worker.ts` and is unique under src/ (the build refuses two of the same name).
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const ENTRY_NAME = /^[a-z0-9-]+-worker\.ts$/;

/** The worker running `entry` (a `new URL('./<name>-worker.ts', import.meta.url)`) with `workerData`. */
export function spawnWorker(entry: URL, workerData: object, options: Omit<WorkerOptions, 'workerData'> = {}): Worker {
  const name = entry.pathname.slice(entry.pathname.lastIndexOf('/') + 1);
  if (!ENTRY_NAME.test(name)) throw new Error(`worker entry ${name}: the build only finds entries named <name>-worker.ts (adapters/worker-entry.ts)`);
  if (FROM_SOURCE) {
    return new Worker(new URL('./store/worker-boot.mjs', import.meta.url), { ...options, workerData: { ...workerData, entry: entry.href } });
  }
  return new Worker(new URL(`./${name.slice(0, -'.ts'.length)}.js`, import.meta.url), { ...options, workerData });
}
