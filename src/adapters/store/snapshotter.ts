/**
 * When the core's snapshots are written (docs/architecture.md "Snapshots"): every
 * `SNAPSHOT_EVERY_COMMANDS` journaled commands, and at least every `SNAPSHOT_EVERY_MS` while
 * commands arrive, by one snapshot worker (snapshot-worker.ts), kept between snapshots with its
 * replica of the core. The event loop only counts and asks; the replay and the writing happen in
 * the worker's thread. A failed
 * snapshot is logged and tried again at the next interval: the journal still holds everything.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../worker-entry.ts';
import { SnapshotFiles } from './snapshot-files.ts';
import type { SnapshotWorkerData, SnapshotWorkerReport } from './snapshot-worker.ts';

export interface SnapshotterOptions {
  readonly dbPath: string;
  readonly dataDir: string;
  readonly core: SnapshotWorkerData['core'];
  readonly everyCommands: number;
  readonly everyMs: number;
  readonly keep: number;
  readonly segmentRetentionMs: number;
  /** The journal's durable head now. */
  readonly head: () => number;
  readonly log: (level: 'info' | 'error', message: string, detail?: unknown) => void;
}

/** How often the head is looked at. */
const CHECK_MS = 1_000;

export class Snapshotter {
  private timer: NodeJS.Timeout | null = null;
  private worker: Worker | null = null;
  /** Per worker, resolved once it has loaded its modules (or exited): it is never terminated before. */
  private readonly loaded = new WeakMap<Worker, Promise<void>>();
  private running: Promise<SnapshotWorkerReport> | null = null;
  private lastSeq: number;
  private lastAt = Date.now();
  private stopped = false;

  constructor(private readonly options: SnapshotterOptions) {
    this.lastSeq = new SnapshotFiles(options.dataDir).seqs()[0] ?? 0;
  }

  /** The seq of the newest snapshot written (or found at start). */
  get newestSeq(): number {
    return this.lastSeq;
  }

  /** Starts the worker (its replica begins following the journal) and the schedule. */
  start(): void {
    this.spawn();
    this.timer = setInterval(() => this.check(), CHECK_MS);
    this.timer.unref();
  }

  /** Writes a snapshot now (unless one is being written: that one is awaited instead). */
  snapshotNow(): Promise<SnapshotWorkerReport> {
    return this.running ?? this.run();
  }

  /** Stops scheduling and the worker; a snapshot being written is abandoned (its temporary file is removed later). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    const worker = this.worker;
    this.worker = null;
    if (worker === null) return;
    // Terminating a worker while it still evaluates its modules can abort the whole process in V8
    // (a fatal "location_ != nullptr" check, nodejs/node#53238): wait until it is loaded.
    await this.loaded.get(worker);
    await worker.terminate();
  }

  private check(): void {
    if (this.running !== null || this.stopped) return;
    const head = this.options.head();
    const due = head - this.lastSeq >= this.options.everyCommands || (head > this.lastSeq && Date.now() - this.lastAt >= this.options.everyMs);
    if (due) void this.run();
  }

  private run(): Promise<SnapshotWorkerReport> {
    const worker = this.worker ?? this.spawn();
    const done = this.loaded.get(worker)!.then(() => new Promise<SnapshotWorkerReport>((resolve) => {
      const fail = (error: string) => {
        this.worker = null; // a new worker (restoring from the files) serves the next snapshot
        resolve({ ok: false, error });
      };
      const onError = (error: Error) => fail(error.stack ?? String(error));
      const onExit = (code: number) => fail(`the snapshot worker exited (${code}) before reporting`);
      worker.once('error', onError);
      worker.once('exit', onExit);
      worker.once('message', (report: SnapshotWorkerReport) => {
        worker.off('error', onError);
        worker.off('exit', onExit);
        resolve(report);
      });
      worker.postMessage('snapshot');
    }));
    this.running = done.then((report) => {
      this.finish(report);
      return report;
    });
    return this.running;
  }

  /** The worker, kept between snapshots with its replica of the core (snapshot-worker.ts). */
  private spawn(): Worker {
    const o = this.options;
    const data: SnapshotWorkerData = {
      dbPath: o.dbPath, dataDir: o.dataDir, core: o.core, keep: o.keep, minCommands: 1, segmentRetentionMs: o.segmentRetentionMs,
    };
    const worker = spawnWorker(new URL('./snapshot-worker.ts', import.meta.url), data);
    worker.unref();
    // The worker says 'ready' once its modules are loaded (or it exits first).
    this.loaded.set(worker, new Promise<void>((resolve) => {
      const onReady = (message: unknown) => {
        if (message !== 'ready') return;
        worker.off('message', onReady);
        resolve();
      };
      worker.on('message', onReady);
      worker.once('exit', () => resolve());
    }));
    // A worker that died between snapshots is replaced at the next one.
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
    });
    this.worker = worker;
    return worker;
  }

  private finish(report: SnapshotWorkerReport): void {
    this.running = null;
    this.lastAt = Date.now();
    if (this.stopped) return;
    if (!report.ok) {
      this.options.log('error', 'snapshot failed; the journal still holds every command, the next interval tries again', report.error);
      return;
    }
    this.lastSeq = report.seq;
    if (!report.written) return;
    for (const refusal of report.refused) this.options.log('error', refusal);
    const { ms, ...figures } = report;
    this.options.log('info', `snapshot written at seq ${report.seq}`, {
      ...figures, refused: undefined, ms: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, Math.round(v)])),
    });
  }
}
