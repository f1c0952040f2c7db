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
import { SnapshotThread } from '../store/snapshot-thread.ts';
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
  /** The worker, kept between snapshots with its replica of the core (pg-snapshot-worker.ts). */
  private readonly thread: SnapshotThread<PgSnapshotReport>;
  private running: Promise<PgSnapshotReport> | null = null;
  private lastSeq: number;
  private lastAt = Date.now();
  private stopped = false;

  constructor(private readonly options: PgSnapshotterOptions) {
    this.lastSeq = options.newestSeq;
    const { databaseUrl, core, keep, segmentRetentionMs, archiveAfterMs } = options;
    const workerData: PgSnapshotWorkerData = { databaseUrl, core, keep, segmentRetentionMs, ...(archiveAfterMs === undefined ? {} : { archiveAfterMs }) };
    this.thread = new SnapshotThread(new URL('./pg-snapshot-worker.ts', import.meta.url), workerData);
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
    await this.thread.stop();
  }

  private check(): void {
    if (this.running !== null || this.stopped) return;
    const target = this.options.target();
    const due = target - this.lastSeq >= this.options.everyCommands || (target > this.lastSeq && Date.now() - this.lastAt >= this.options.everyMs);
    if (due) void this.run();
    else if (target > this.lastSeq) this.post({ kind: 'follow', target });
  }

  private post(request: PgSnapshotRequest): void {
    this.thread.current().postMessage(request);
  }

  private run(): Promise<PgSnapshotReport> {
    this.running = this.thread.ask(() => ({ kind: 'snapshot', target: this.options.target() }) satisfies PgSnapshotRequest).then((report) => {
      this.finish(report);
      return report;
    });
    return this.running;
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
    if (report.archiveError !== undefined) {
      this.options.log('error', 'archiving the command log failed; its rows stay in command_log and the next snapshot tries again', { error: report.archiveError });
    }
    const { ms, refused: _refused, ok: _ok, written: _written, ...figures } = report;
    this.options.log('info', `snapshot written at seq ${report.seq}`, {
      ...figures, ms: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, Math.round(v)])),
    });
  }
}
