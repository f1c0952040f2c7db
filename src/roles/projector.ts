/**
 * ROLE=projector: writes the distributed mode's history (orders, fills, ledger lines, settlements,
 * candles) into PostgreSQL, where every gateway reads it (docs/deploy.md). It keeps a replica of
 * the core that follows the command log (runtime/log-follower.ts) and hands each command's events,
 * in seq order, to the PostgreSQL projector, which writes a batch and moves the watermark in one
 * transaction: each seq is projected once, even with two projectors running or a kill -9 between
 * batches (the replica restarts from the log, and only seqs past the watermark are written).
 * It also writes the core snapshots every role starts from, at the watermark, from a worker
 * thread of its own (adapters/postgres/snapshotter.ts).
 */
import { PgCommandLog } from '../adapters/postgres/command-log.ts';
import { migratePostgres, postgresPool } from '../adapters/postgres/database.ts';
import { HistoryOutOfOrder, PgHistoryProjector, PgTradingHistory, type ProjectedCommand } from '../adapters/postgres/history/index.ts';
import { restoreAtStart } from '../adapters/postgres/snapshot-store.ts';
import { PgSnapshotter } from '../adapters/postgres/snapshotter.ts';
import { coreConfig, coreSettings } from '../config/core.ts';
import type { Settings } from '../config/env.ts';
import { Exchange } from '../core/exchange.ts';
import { LogFollower } from '../runtime/log-follower.ts';
import type { CoreLog } from './core.ts';
import { healthServer } from './health.ts';

export interface ProjectorRoleOptions {
  readonly log: CoreLog;
  readonly onFatal: (error: unknown) => void;
}

export interface ProjectorRole {
  readonly address: string;
  /** The history's watermark as this process last wrote or read it. */
  projectedSeq(): number;
  close(): Promise<void>;
}

/** Commands per history transaction. */
const BATCH = 2_000;
/** Between attempts to write a batch while PostgreSQL is away. */
const RETRY_MS = 500;

export async function startProjectorRole(settings: Settings, options: ProjectorRoleOptions): Promise<ProjectorRole> {
  const servers = settings.distributed;
  if (servers === null) throw new Error('ROLE=projector needs NATS_URL and DATABASE_URL');
  await migratePostgres(servers.databaseUrl);
  const pool = postgresPool(servers.databaseUrl, 4);
  const projector = new PgHistoryProjector(pool);
  const exchange = new Exchange(coreConfig(coreSettings(settings)));
  const watermark = await projector.projectedSeq();
  // Only a snapshot at or below the watermark: every seq past it must go through this replica to be
  // projected (docs/architecture.md "Distributed mode: snapshots"). This role writes its snapshots
  // at the watermark, so the newest one normally qualifies.
  const { restored } = await restoreAtStart(servers.databaseUrl, exchange, { maxSeq: watermark, report: (message) => options.log.error(message) });
  const snapshotSeq = restored?.seq ?? null;
  const log = PgCommandLog.follow(servers.databaseUrl);
  const follower = new LogFollower(exchange, log, { pageSize: BATCH, pollMs: 500, onFatal: options.onFatal }, restored ?? undefined);
  const writer = new HistoryWriter(projector, watermark, options);
  follower.subscribe((events) => writer.add({ seq: follower.appliedSeq, ts: exchange.now(), events }));
  await follower.start();
  const replayed = follower.appliedSeq - (snapshotSeq ?? 0);
  const snapshotter = new PgSnapshotter({
    databaseUrl: servers.databaseUrl, core: coreSettings(settings), keep: settings.snapshots.keep, segmentRetentionMs: settings.snapshots.segmentRetentionMs,
    everyCommands: settings.snapshots.everyCommands, everyMs: settings.snapshots.everyMs,
    target: () => writer.projected, newestSeq: snapshotSeq ?? 0,
    log: (level, message, detail) => options.log[level](message, detail),
  });
  snapshotter.start();
  const stopPruning = pruneUnfilledOrders(new PgTradingHistory(pool), settings, () => (writer.projected > 0 ? exchange.now() : 0), options);
  const health = await healthServer(settings, () => ({
    role: 'projector', appliedSeq: follower.appliedSeq, projectedSeq: writer.projected, snapshotSeq: snapshotter.newestSeq, start: { snapshotSeq, replayed },
  }));
  options.log.info('history projector following the command log', { appliedSeq: follower.appliedSeq, projectedSeq: writer.projected, snapshotSeq, replayed });
  return {
    address: health.address,
    projectedSeq: () => writer.projected,
    async close() {
      stopPruning();
      await snapshotter.stop();
      await follower.stop();
      await writer.drain();
      await log.close();
      await pool.end();
      await health.app.close();
    },
  };
}

/**
 * Orders that ended without a fill leave the history after their retention
 * (HISTORY_UNFILLED_*_RETENTION_MS), counted in service time, a chunk at a time as the embedded
 * journal worker does: the maker's replaced quotes would otherwise grow the database by about a
 * gigabyte a day. A failed chunk is tried again later (the history is correct with the rows in it).
 */
function pruneUnfilledOrders(trading: PgTradingHistory, settings: Settings, now: () => number, options: ProjectorRoleOptions): () => void {
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const run = async (): Promise<void> => {
    let full = false;
    try {
      const at = now();
      if (at > 0) full = (await trading.pruneUnfilled(at, settings.history, PRUNE_CHUNK)) >= PRUNE_CHUNK;
    } catch (error) {
      options.log.warn('history pruning failed; trying again later', { error: String(error) });
    }
    if (!stopped) timer = setTimeout(() => void run(), full ? 0 : PRUNE_EVERY_MS);
  };
  timer = setTimeout(() => void run(), PRUNE_EVERY_MS);
  return () => {
    stopped = true;
    if (timer !== null) clearTimeout(timer);
  };
}

/** Orders deleted per pruning chunk, and the pause between chunks when the last was not full. */
const PRUNE_CHUNK = 512;
const PRUNE_EVERY_MS = 1_000;

/** Queues the replica's commands past the watermark and writes them in order, one batch at a time. */
class HistoryWriter {
  private queue: ProjectedCommand[] = [];
  private writing: Promise<void> | null = null;

  constructor(private readonly projector: PgHistoryProjector, public projected: number, private readonly options: ProjectorRoleOptions) {}

  add(command: ProjectedCommand): void {
    if (command.seq <= this.projected) return;
    this.queue.push(command);
    this.writing ??= this.writeAll().finally(() => (this.writing = null));
  }

  async drain(): Promise<void> {
    while (this.writing !== null) await this.writing;
  }

  private async writeAll(): Promise<void> {
    // Let the replica apply the rest of its page first: batches then fill up under load.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, BATCH);
      try {
        await this.projector.project(batch);
        this.projected = batch[batch.length - 1]!.seq;
      } catch (error) {
        if (!(error instanceof HistoryOutOfOrder)) {
          this.options.log.warn('history projection failed; retrying', { error: String(error) });
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
        // Another projector wrote some of it, or the commit's outcome is unknown: the watermark says.
        this.projected = await this.projector.projectedSeq().catch(() => this.projected);
      }
      let done = 0;
      while (done < this.queue.length && this.queue[done]!.seq <= this.projected) done++;
      if (done > 0) this.queue = this.queue.slice(done);
    }
  }
}
