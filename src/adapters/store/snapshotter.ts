/**
 * When the core's snapshots are written (docs/architecture.md "Snapshots"): every
 * `SNAPSHOT_EVERY_COMMANDS` journaled commands, and at least every `SNAPSHOT_EVERY_MS` while
 * commands arrive, by one snapshot worker (snapshot-worker.ts), kept between snapshots with its
 * replica of the core. The event loop only counts and asks; the replay and the writing happen in
 * the worker's thread. A failed
 * snapshot is logged and tried again at the next interval: the journal still holds everything.
 */
import { SnapshotFiles } from './snapshot-files.ts';
import { SnapshotThread } from './snapshot-thread.ts';
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
  /** The worker, kept between snapshots with its replica of the core (snapshot-worker.ts). */
  private readonly thread: SnapshotThread<SnapshotWorkerReport>;
  private running: Promise<SnapshotWorkerReport> | null = null;
  private lastSeq: number;
  private lastAt = Date.now();
  private stopped = false;

  constructor(private readonly options: SnapshotterOptions) {
    this.lastSeq = new SnapshotFiles(options.dataDir).seqs()[0] ?? 0;
    const o = options;
    const data: SnapshotWorkerData = {
      dbPath: o.dbPath, dataDir: o.dataDir, core: o.core, keep: o.keep, minCommands: 1, segmentRetentionMs: o.segmentRetentionMs,
    };
    this.thread = new SnapshotThread(new URL('./snapshot-worker.ts', import.meta.url), data);
  }

  /** The seq of the newest snapshot written (or found at start). */
  get newestSeq(): number {
    return this.lastSeq;
  }

  /** Starts the worker (its replica begins following the journal) and the schedule. */
  start(): void {
    this.thread.current();
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
    await this.thread.stop();
  }

  private check(): void {
    if (this.running !== null || this.stopped) return;
    const head = this.options.head();
    const due = head - this.lastSeq >= this.options.everyCommands || (head > this.lastSeq && Date.now() - this.lastAt >= this.options.everyMs);
    if (due) void this.run();
  }

  private run(): Promise<SnapshotWorkerReport> {
    this.running = this.thread.ask(() => 'snapshot').then((report) => {
      this.finish(report);
      return report;
    });
    return this.running;
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
