/**
 * The parent's side of a snapshot worker thread (store/snapshot-worker.ts embedded,
 * postgres/pg-snapshot-worker.ts distributed): spawned on demand, kept between snapshots with its
 * replica of the core, replaced when it dies, and never terminated while it still loads its
 * modules. The worker says 'ready' once loaded, then answers each snapshot request with one report.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../worker-entry.ts';

/** A snapshot that did not complete, as both workers report it. */
export interface SnapshotFailure {
  readonly ok: false;
  readonly error: string;
}

export class SnapshotThread<Report> {
  private worker: Worker | null = null;
  /** Per worker, resolved once it has loaded its modules (or exited): it is never terminated before. */
  private readonly loaded = new WeakMap<Worker, Promise<void>>();

  /** `entry` and `data` as for spawnWorker (adapters/worker-entry.ts). */
  constructor(private readonly entry: URL, private readonly data: object) {}

  /** The live worker, spawned if there is none. */
  current(): Worker {
    return this.worker ?? this.spawn();
  }

  /**
   * Sends `request()` (read once the worker is loaded) and resolves with its report; a worker that
   * fails or exits first is dropped (a new one, restoring again, serves the next request).
   */
  ask(request: () => unknown): Promise<Report | SnapshotFailure> {
    const worker = this.current();
    return this.loaded.get(worker)!.then(() => new Promise<Report | SnapshotFailure>((resolve) => {
      const fail = (error: string) => {
        this.worker = null;
        resolve({ ok: false, error });
      };
      const onError = (error: Error) => fail(error.stack ?? String(error));
      const onExit = (code: number) => fail(`the snapshot worker exited (${code}) before reporting`);
      const onMessage = (report: Report | 'ready') => {
        if (report === 'ready') return;
        worker.off('error', onError);
        worker.off('exit', onExit);
        worker.off('message', onMessage);
        resolve(report);
      };
      worker.once('error', onError);
      worker.once('exit', onExit);
      worker.on('message', onMessage);
      worker.postMessage(request());
    }));
  }

  /** Terminates the worker, once loaded: a snapshot being written is abandoned. */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker === null) return;
    // Terminating a worker while it still evaluates its modules can abort the whole process in V8
    // (a fatal "location_ != nullptr" check, nodejs/node#53238): wait until it is loaded.
    await this.loaded.get(worker);
    await worker.terminate();
  }

  private spawn(): Worker {
    const worker = spawnWorker(this.entry, this.data);
    worker.unref();
    this.loaded.set(worker, new Promise<void>((resolve) => {
      const onReady = (message: unknown) => {
        if (message !== 'ready') return;
        worker.off('message', onReady);
        resolve();
      };
      worker.on('message', onReady);
      worker.once('exit', () => resolve());
    }));
    // A worker that died between snapshots is replaced at the next request.
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
    });
    this.worker = worker;
    return worker;
  }
}
