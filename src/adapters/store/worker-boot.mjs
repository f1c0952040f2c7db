// Boots a TypeScript worker thread when running from source: registers tsx's loader, then imports
// the worker's entry module (workerData.entry). Worker threads do not inherit `--import tsx` from
// the parent on Node 20. Spawn workers through adapters/worker-entry.ts, which uses this file from
// source and the built dist/<name>-worker.js otherwise (docs/architecture.md, "Build and start").
import { register } from 'tsx/esm/api';
import { workerData } from 'node:worker_threads';

register();
await import(workerData.entry);
