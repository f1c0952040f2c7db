/**
 * The snapshot worker (a worker thread; docs/architecture.md "Snapshots"): derives the next
 * snapshot from the newest one and the durable journal after it, off the event loop. It restores
 * the newest snapshot into a core of its own (or starts from an empty core), replays the journal up
 * to the history's watermark (never past what the history holds, so recovery always projects the
 * history after a snapshot from its replay), writes the state image atomically, and keeps the
 * newest `keep` snapshots, then archives the journal records the snapshot covers into segment files
 * (journal-segments.ts; their rows leave the database in the journal worker) and applies the
 * segments' retention. The live core is never read: the snapshot is what recovery would build,
 * by the same replay, which is also why the event loop never pauses for it.
 *
 * It reports one message, `{ ok: true, ... }` with the figures or `{ ok: false, error }`, and exits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { coreConfig } from '../../config/core.ts';
import { Exchange } from '../../core/exchange.ts';
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

function run(data: SnapshotWorkerData): SnapshotWorkerReport {
  const db = openDatabase(data.dbPath);
  try {
    const journal = new Journal(db, historyProjectors(db));
    const refused: string[] = [];
    const store = new SnapshotStore(data.dataDir, (m) => refused.push(m));
    const config = coreConfig(data.core);
    const exchange = new Exchange(config);
    const target = Math.min(journal.projectedSeq(), journal.head());
    let t = performance.now();
    const from = store.restoreNewest(exchange, target);
    const fromSeq = from?.seq ?? 0;
    if (target - fromSeq < data.minCommands) return { ok: true, written: false, seq: fromSeq };
    const restore = performance.now() - t;
    t = performance.now();
    const segments = new JournalSegments(data.dataDir);
    let replayed = 0;
    let link = from?.link ?? 0;
    for (const record of journalFrom(journal, segments, fromSeq + 1, from?.link)) {
      if (record.seq > target) break;
      const outcome = exchange.execute(record.command, record.ts);
      if (!outcome.ok) throw new Error(`journal replay diverged at seq ${record.seq}: ${outcome.code} ${outcome.message}`);
      link = record.chain;
      replayed++;
    }
    if (replayed !== target - fromSeq) throw new Error(`replayed ${replayed} commands of ${target - fromSeq}`);
    const replay = performance.now() - t;
    t = performance.now();
    const image = stateImage(exchange, () => new Exchange(config));
    const encode = performance.now() - t;
    t = performance.now();
    const header = store.files.write(target, exchange.now(), link, LAYOUT_FINGERPRINT, image, Date.now());
    store.files.prune(data.keep);
    const write = performance.now() - t;
    t = performance.now();
    // What the snapshot covers leaves the database for segments (the journal worker deletes the rows).
    const archived = archiveThrough(journal, segments, target).reduce((n, h) => n + h.lastSeq - h.firstSeq + 1, 0);
    const oldestKept = store.files.seqs().at(-1) ?? 0;
    const deleted = data.segmentRetentionMs > 0 ? pruneSegments(segments, data.segmentRetentionMs, exchange.now(), oldestKept).length : 0;
    const archive = performance.now() - t;
    return {
      ok: true, written: true, seq: target, fromSeq, replayed, stateHash: header.stateHash, imageBytes: image.length,
      fileBytes: header.bodyBytes, ms: { restore, replay, encode, write, archive }, refused, archived, segmentsDeleted: deleted,
    };
  } finally {
    db.close();
  }
}

try {
  parentPort!.postMessage(run(workerData as SnapshotWorkerData));
} catch (error) {
  parentPort!.postMessage({ ok: false, error: (error as Error).stack ?? String(error) } satisfies SnapshotWorkerReport);
}
