/**
 * When the distributed mode's core snapshots are written (docs/architecture.md "Distributed mode:
 * snapshots"): by the projector role, every `SNAPSHOT_EVERY_COMMANDS` commands of the history's
 * watermark, and at least every `SNAPSHOT_EVERY_MS` while it moves, by one worker thread
 * (pg-snapshot-worker.ts) that keeps its own replica of the core. The role's event loop only
 * compares two numbers each second and posts a message; the replay, the image and the write run in
 * the worker. A snapshot never passes the watermark, so the projector itself can start from it
 * (it must project every seq after the watermark). A failed snapshot is logged and tried again at
 * the next interval: the command log still holds everything.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../worker-entry.ts';
import type { PgSnapshotReport, PgSnapshotRequest, PgSnapshotWorkerData } from './pg-snapshot-worker.ts';

export interface PgSnapshotterOptions extends PgSnapshotWorkerData {
  readonly everyCommands: number;
  readonly everyMs: number;
  /** The newest seq a snapshot may cover (the history's watermark). */
  readonly target: () => number;
  /** The seq of the newest snapshot held when the role started. */
  readonly newestSeq: number;
  readonly log: (level: 'info' | 'error', message: string, detail?: Record<string, unknown>) => void;
}

/** How often the target is looked at (and the worker's replica moved to it). */
const CHECK_MS = 1_000;

export class PgSnapshotter {
  private timer: NodeJS.Timeout | null = null;
  private worker: Worker | null = null;
  private loaded: Promise<void> = Promise.resolve();
  private running: Promise<PgSnapshotReport> | null = null;
  private lastSeq: number;
  private lastAt = Date.now();
  private stopped = false;

  constructor(private readonly options: PgSnapshotterOptions) {
    this.lastSeq = options.newestSeq;
  }

  /** The seq of the newest snapshot written (or found at start). */
  get newestSeq(): number {
    return this.lastSeq;
  }

  /** Starts the schedule; the worker is spawned once there is something to follow. */
  start(): void {
    this.timer = setInterval(() => this.check(), CHECK_MS);
    this.timer.unref();
  }

  /** Writes a snapshot at the target now (unless one is being written: that one is awaited instead). */
  snapshotNow(): Promise<PgSnapshotReport> {
    return this.running ?? this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    const worker = this.worker;
    this.worker = null;
    if (worker === null) return;
    // Never terminate a worker still loading its modules (adapters/store/snapshotter.ts says why).
    await this.loaded;
    await worker.terminate();
  }

  private check(): void {
    if (this.running !== null || this.stopped) return;
    const target = this.options.target();
    const due = target - this.lastSeq >= this.options.everyCommands || (target > this.lastSeq && Date.now() - this.lastAt >= this.options.everyMs);
    if (due) void this.run();
    else if (target > this.lastSeq) this.post({ kind: 'follow', target });
  }

  private post(request: PgSnapshotRequest): void {
    (this.worker ?? this.spawn()).postMessage(request);
  }

  private run(): Promise<PgSnapshotReport> {
    const worker = this.worker ?? this.spawn();
    const done = this.loaded.then(() => new Promise<PgSnapshotReport>((resolve) => {
      const fail = (error: string) => {
        this.worker = null;
        resolve({ ok: false, error });
      };
      const onError = (error: Error) => fail(error.stack ?? String(error));
      const onExit = (code: number) => fail(`the snapshot worker exited (${code}) before reporting`);
      const onMessage = (report: PgSnapshotReport | 'ready') => {
        if (report === 'ready') return;
        worker.off('error', onError);
        worker.off('exit', onExit);
        worker.off('message', onMessage);
        resolve(report);
      };
      worker.once('error', onError);
      worker.once('exit', onExit);
      worker.on('message', onMessage);
      worker.postMessage({ kind: 'snapshot', target: this.options.target() } satisfies PgSnapshotRequest);
    }));
    this.running = done.then((report) => {
      this.finish(report);
      return report;
    });
    return this.running;
  }

  private spawn(): Worker {
    const { databaseUrl, core, keep } = this.options;
    const worker = spawnWorker(new URL('./pg-snapshot-worker.ts', import.meta.url), { databaseUrl, core, keep } satisfies PgSnapshotWorkerData);
    worker.unref();
    this.loaded = new Promise<void>((resolve) => {
      const onReady = (message: unknown) => {
        if (message !== 'ready') return;
        worker.off('message', onReady);
        resolve();
      };
      worker.on('message', onReady);
      worker.once('exit', () => resolve());
    });
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
    });
    this.worker = worker;
    return worker;
  }

  private finish(report: PgSnapshotReport): void {
    this.running = null;
    this.lastAt = Date.now();
    if (this.stopped) return;
    if (!report.ok) {
      this.options.log('error', 'snapshot failed; the command log still holds every command, the next interval tries again', { error: report.error });
      return;
    }
    for (const refusal of report.refused) this.options.log('error', refusal);
    this.lastSeq = report.seq;
    if (!report.written) return;
    const { ms, refused: _refused, ok: _ok, written: _written, ...figures } = report;
    this.options.log('info', `snapshot written at seq ${report.seq}`, {
      ...figures, ms: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, Math.round(v)])),
    });
  }
}
