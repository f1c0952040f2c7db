// Boots a TypeScript worker thread: registers tsx's loader, then imports the worker's entry module
// (workerData.entry). Worker threads do not inherit `--import tsx` from the parent on Node 20.
import { register } from 'tsx/esm/api';
import { workerData } from 'node:worker_threads';

register();
await import(workerData.entry);
