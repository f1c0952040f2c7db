/**
 * The distributed mode's snapshot worker (a worker thread of the projector role; docs/architecture.md
 * "Distributed mode: snapshots"), the PostgreSQL counterpart of adapters/store/snapshot-worker.ts. It
 * keeps a core of its own, a replica: restored from the newest snapshot in PostgreSQL (or empty) at
 * its first request, then carried forward by reading the command log (chain-checked) up to the
 * target it is given, the history's watermark. Asked for a snapshot, it catches up to the target,
 * writes the state image into `core_snapshots` and keeps the newest `keep`. Nothing of the role's
 * event loop is used: the replay, the image and its compression run on this thread, at a lower
 * priority.
 *
 * Requests (from snapshotter.ts): `{ kind: 'follow', target }` (no answer) and `{ kind: 'snapshot',
 * target }`, answered by one report. After each snapshot it archives the command log's rows that
 * every kept snapshot covers (command-log-archive.ts). A failure drops the replica: the next request
 * restores again.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { coreConfig } from '../../config/core.ts';
import { Exchange } from '../../core/exchange.ts';
import { lowerThreadPriority, type Replica } from '../store/background-thread.ts';
import { stateImage } from '../store/snapshot-store.ts';
import { ARCHIVE_AFTER_MS, archiveCommandLog, pruneArchive } from './command-log-archive.ts';
import { PgCommandLog } from './command-log.ts';
import { postgresPool } from './database.ts';
import { PgSnapshotStore } from './snapshot-store.ts';

export interface PgSnapshotWorkerData {
  readonly databaseUrl: string;
  readonly core: Parameters<typeof coreConfig>[0];
  /** Snapshots kept (the newest ones). */
  readonly keep: number;
  /** Archived segments older than this (service time) are deleted once no kept snapshot needs them; 0 keeps them. */
  readonly segmentRetentionMs: number;
  /** Rows younger than this (service time) stay in command_log; command-log-archive.ts ARCHIVE_AFTER_MS unless a test sets it. */
  readonly archiveAfterMs?: number;
}

export type PgSnapshotRequest = { readonly kind: 'follow' | 'snapshot'; readonly target: number };

export type PgSnapshotReport =
  | { readonly ok: true; readonly written: false; readonly seq: number; readonly refused: readonly string[] }
  | {
    readonly ok: true;
    readonly written: true;
    readonly seq: number;
    /** Commands the replica applied since the previous snapshot it wrote (or restored). */
    readonly replayed: number;
    readonly stateHash: string;
    readonly imageBytes: number;
    readonly storedBytes: number;
    readonly ms: { readonly restore: number; readonly replay: number; readonly encode: number; readonly write: number; readonly archive: number };
    readonly refused: readonly string[];
    /** Command log records moved into the archive after this snapshot (command-log-archive.ts). */
    readonly archived: number;
    readonly segmentsDeleted: number;
    /** Why the archive failed (the snapshot was written; the next one tries again). */
    readonly archiveError?: string;
  }
  | { readonly ok: false; readonly error: string };

/** Records read per query. */
const PAGE = 2_000;

const data = workerData as PgSnapshotWorkerData;
const config = coreConfig(data.core);
const pool = postgresPool(data.databaseUrl, 2);
const log = PgCommandLog.follow(data.databaseUrl);
let replica: Replica | null = null;
let restoreMs = 0;
let followed = 0;
let followMs = 0;
let refused: string[] = [];

async function restored(maxSeq: number): Promise<Replica> {
  if (replica !== null) return replica;
  const started = performance.now();
  const exchange = new Exchange(config);
  const store = new PgSnapshotStore(pool, (message) => refused.push(message));
  const from = await store.restoreNewest(exchange, maxSeq);
  restoreMs = performance.now() - started;
  replica = { exchange, seq: from?.seq ?? 0, link: from?.link ?? 0 };
  return replica;
}

/** Applies the log after the replica's seq up to `target`. */
async function follow(target: number): Promise<void> {
  const started = performance.now();
  const r = await restored(target);
  while (r.seq < target) {
    const records = await log.readAfter(r.seq, r.link, Math.min(PAGE, target - r.seq));
    if (records.length === 0) throw new Error(`the command log ends at seq ${r.seq}, before the target ${target}`);
    for (const record of records) {
      const outcome = r.exchange.execute(record.command, record.ts);
      if (!outcome.ok) throw new Error(`log replay diverged at seq ${record.seq}: ${outcome.code} ${outcome.message}`);
      r.seq = record.seq;
      r.link = record.link;
      followed++;
    }
  }
  followMs += performance.now() - started;
}

async function snapshot(target: number): Promise<PgSnapshotReport> {
  await follow(target);
  const r = replica!;
  const store = new PgSnapshotStore(pool);
  if (followed === 0 && (await store.seqs())[0] === r.seq) return { ok: true, written: false, seq: r.seq, refused: takeRefused() };
  let t = performance.now();
  const image = stateImage(r.exchange, () => new Exchange(config));
  const encode = performance.now() - t;
  t = performance.now();
  const header = await store.write(r.seq, r.exchange.now(), r.link, image, data.keep);
  const write = performance.now() - t;
  t = performance.now();
  // What every kept snapshot covers leaves command_log for the archive (older than its id window).
  // The snapshot is written either way: a failed archive is reported, and tried again after the next one.
  let archived = 0;
  let segmentsDeleted = 0;
  let archiveError: string | undefined;
  try {
    const oldestKept = (await store.seqs()).at(-1) ?? 0;
    ({ archived } = await archiveCommandLog(pool, oldestKept, r.exchange.now() - (data.archiveAfterMs ?? ARCHIVE_AFTER_MS)));
    segmentsDeleted = data.segmentRetentionMs > 0 ? await pruneArchive(pool, data.segmentRetentionMs, r.exchange.now(), oldestKept) : 0;
  } catch (error) {
    archiveError = (error as Error).message;
  }
  const archive = performance.now() - t;
  const report: PgSnapshotReport = {
    ok: true, written: true, seq: r.seq, replayed: followed, stateHash: header?.stateHash ?? 'written by another process', imageBytes: image.length,
    storedBytes: header?.bodyBytes ?? 0, ms: { restore: restoreMs, replay: followMs, encode, write, archive }, refused: takeRefused(), archived, segmentsDeleted,
    ...(archiveError === undefined ? {} : { archiveError }),
  };
  followed = 0;
  followMs = 0;
  restoreMs = 0;
  return report;
}

function takeRefused(): string[] {
  const taken = refused;
  refused = [];
  return taken;
}

lowerThreadPriority();
// Requests are served one at a time, in order.
let queue: Promise<void> = Promise.resolve();
parentPort!.on('message', (request: PgSnapshotRequest) => {
  queue = queue.then(async () => {
    try {
      if (request.kind === 'follow') {
        await follow(request.target);
        return;
      }
      parentPort!.postMessage(await snapshot(request.target));
    } catch (error) {
      replica = null;
      followed = 0;
      followMs = 0;
      if (request.kind === 'snapshot') parentPort!.postMessage({ ok: false, error: (error as Error).stack ?? String(error) } satisfies PgSnapshotReport);
    }
  });
});
// Loaded: the parent may now terminate this worker safely (adapters/store/snapshotter.ts says why).
parentPort!.postMessage('ready');
