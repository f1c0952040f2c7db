/**
 * The snapshot worker (a worker thread; docs/architecture.md "Snapshots"): derives each snapshot
 * from the durable journal, off the event loop. It keeps a core of its own, a replica: restored
 * from the newest snapshot (or empty) at its first request, then carried forward by replaying the
 * journal after it, every second (never past the history's watermark: recovery always projects the
 * history after a snapshot from its replay); at each request it catches up to the watermark, writes
 * the state image atomically, keeps the newest `keep` snapshots, then archives the journal records the snapshot covers into segment files
 * (journal-segments.ts; their rows leave the database in the journal worker) and applies the
 * segments' retention. The live core is never read: the snapshot is what recovery would build,
 * by the same replay, which is also why the event loop never pauses for it.
 *
 * Each request (a message from snapshotter.ts) is answered by one report, `{ ok: true, ... }` with
 * the figures or `{ ok: false, error }`; a failure drops the replica, so the next request starts again
 * from the files. Kept between snapshots, the replica costs a second copy of the state in memory
 * and saves restoring it (and, from source, loading the modules) at every snapshot. The thread runs
 * at a lower priority (`lowerThreadPriority`): it is background work, and the order path comes first.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { coreConfig } from '../../config/core.ts';
import { Exchange } from '../../core/exchange.ts';
import { lowerThreadPriority, type Replica } from './background-thread.ts';
import { openDatabase } from './database.ts';
import { Journal } from './journal.ts';
import { historyProjectors } from './projections/index.ts';
import { journalFrom } from './journal-reader.ts';
import { archiveThrough, JournalSegments, pruneSegments } from './journal-segments.ts';
import { LAYOUT_FINGERPRINT, SnapshotStore, stateImage } from './snapshot-store.ts';

export interface SnapshotWorkerData {
  readonly dbPath: string;
  readonly dataDir: string;
  readonly core: Parameters<typeof coreConfig>[0];
  /** Snapshots kept (the newest ones). */
  readonly keep: number;
  /** Fewer new commands than this since the newest snapshot: nothing is written. */
  readonly minCommands: number;
  /** Archived segments older than this (service time) are deleted once no kept snapshot needs them; 0 keeps them. */
  readonly segmentRetentionMs: number;
}

export type SnapshotWorkerReport =
  | { readonly ok: true; readonly written: false; readonly seq: number }
  | {
    readonly ok: true;
    readonly written: true;
    readonly seq: number;
    readonly fromSeq: number;
    readonly replayed: number;
    readonly stateHash: string;
    readonly imageBytes: number;
    readonly fileBytes: number;
    readonly ms: { readonly restore: number; readonly replay: number; readonly encode: number; readonly write: number; readonly archive: number };
    readonly refused: readonly string[];
    /** Records archived into new segments, and segments deleted by the retention. */
    readonly archived: number;
    readonly segmentsDeleted: number;
  }
  | { readonly ok: false; readonly error: string };

/** How often the replica follows the journal between snapshots. */
const FOLLOW_MS = 1_000;

const data = workerData as SnapshotWorkerData;
const db = openDatabase(data.dbPath);
const journal = new Journal(db, historyProjectors(db));
const segments = new JournalSegments(data.dataDir);
const config = coreConfig(data.core);
let replica: Replica | null = null;
/** Commands the replica applied since the last snapshot it wrote. */
let followed = 0;
let followMs = 0;

/** Restores the newest usable snapshot (or none) into a fresh core. */
function restore(store: SnapshotStore, maxSeq: number): Replica {
  const exchange = new Exchange(config);
  const from = store.restoreNewest(exchange, maxSeq);
  return { exchange, seq: from?.seq ?? 0, link: from?.link ?? 0 };
}

/** Applies the journal after the replica's seq up to `target`; returns how many commands. */
function follow(r: Replica, target: number): number {
  let replayed = 0;
  for (const record of journalFrom(journal, segments, r.seq + 1, r.link)) {
    if (record.seq > target) break;
    const outcome = r.exchange.execute(record.command, record.ts);
    if (!outcome.ok) throw new Error(`journal replay diverged at seq ${record.seq}: ${outcome.code} ${outcome.message}`);
    r.seq = record.seq;
    r.link = record.chain;
    replayed++;
  }
  if (r.seq !== target) throw new Error(`the journal ends at seq ${r.seq}, before ${target}`);
  return replayed;
}

/**
 * What the history holds durably, read from the database each time (the journal worker moves it):
 * the newest seq a replica may reach. The history never runs ahead of the journal.
 */
function watermark(): number {
  return journal.projectedSeq();
}

/**
 * Between snapshots the replica follows the journal every second, so that a snapshot has only its
 * image to write, and the replay's CPU is spread evenly rather than spent in one burst per snapshot.
 */
function followJournal(): void {
  try {
    const t = performance.now();
    const r = (replica ??= restore(new SnapshotStore(data.dataDir), watermark()));
    followed += follow(r, Math.max(r.seq, watermark()));
    followMs += performance.now() - t;
  } catch {
    replica = null; // the next snapshot restores from the files, and says why if it fails again
  }
}

function snapshot(): SnapshotWorkerReport {
  const refused: string[] = [];
  const store = new SnapshotStore(data.dataDir, (m) => refused.push(m));
  const target = watermark();
  let t = performance.now();
  const r = (replica ??= restore(store, target));
  const restored = performance.now() - t;
  t = performance.now();
  followed += follow(r, Math.max(r.seq, target));
  const replay = followMs + performance.now() - t;
  const replayed = followed;
  if (replayed < data.minCommands) return { ok: true, written: false, seq: r.seq };
  t = performance.now();
  const image = stateImage(r.exchange, () => new Exchange(config));
  const encode = performance.now() - t;
  t = performance.now();
  const header = store.files.write(r.seq, r.exchange.now(), r.link, LAYOUT_FINGERPRINT, image, Date.now());
  store.files.prune(data.keep);
  const write = performance.now() - t;
  followed = 0;
  followMs = 0;
  t = performance.now();
  // What the snapshot covers leaves the database for segments (the journal worker deletes the rows).
  const archived = archiveThrough(journal, segments, r.seq).reduce((n, h) => n + h.lastSeq - h.firstSeq + 1, 0);
  const oldestKept = store.files.seqs().at(-1) ?? 0;
  const deleted = data.segmentRetentionMs > 0 ? pruneSegments(segments, data.segmentRetentionMs, r.exchange.now(), oldestKept).length : 0;
  const archive = performance.now() - t;
  return {
    ok: true, written: true, seq: r.seq, fromSeq: r.seq - replayed, replayed, stateHash: header.stateHash, imageBytes: image.length,
    fileBytes: header.bodyBytes, ms: { restore: restored, replay, encode, write, archive }, refused, archived, segmentsDeleted: deleted,
  };
}

lowerThreadPriority();
setInterval(followJournal, FOLLOW_MS);

// One snapshot per request, in order; a failure drops the replica (the next request restores from the files).
parentPort!.on('message', () => {
  let report: SnapshotWorkerReport;
  try {
    report = snapshot();
  } catch (error) {
    replica = null;
    report = { ok: false, error: (error as Error).stack ?? String(error) };
  }
  parentPort!.postMessage(report);
});
// Loaded: the parent may now terminate this worker safely (snapshotter.ts).
parentPort!.postMessage('ready');
