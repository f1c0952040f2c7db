/**
 * The snapshot worker (a worker thread; docs/architecture.md "Snapshots"): derives the next
 * snapshot from the newest one and the durable journal after it, off the event loop. It restores
 * the newest snapshot into a core of its own (or starts from an empty core), replays the journal up
 * to the history's watermark (never past what the history holds, so recovery always projects the
 * history after a snapshot from its replay), writes the state image atomically, and keeps the
 * newest `keep` snapshots. The live core is never read: the snapshot is what recovery would build,
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
import { LAYOUT_FINGERPRINT, SnapshotStore, stateImage } from './snapshot-store.ts';

export interface SnapshotWorkerData {
  readonly dbPath: string;
  readonly dataDir: string;
  readonly core: Parameters<typeof coreConfig>[0];
  /** Snapshots kept (the newest ones). */
  readonly keep: number;
  /** Fewer new commands than this since the newest snapshot: nothing is written. */
  readonly minCommands: number;
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
    readonly ms: { readonly restore: number; readonly replay: number; readonly encode: number; readonly write: number };
    readonly refused: readonly string[];
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
    let replayed = 0;
    for (const record of journal.replay(fromSeq + 1)) {
      if (record.seq > target) break;
      const outcome = exchange.execute(record.command, record.ts);
      if (!outcome.ok) throw new Error(`journal replay diverged at seq ${record.seq}: ${outcome.code} ${outcome.message}`);
      replayed++;
    }
    if (replayed !== target - fromSeq) throw new Error(`replayed ${replayed} commands of ${target - fromSeq}`);
    const replay = performance.now() - t;
    t = performance.now();
    const image = stateImage(exchange, () => new Exchange(config));
    const encode = performance.now() - t;
    t = performance.now();
    const { chain: link } = db.prepare('SELECT chain FROM journal WHERE seq = ?').get(target) as { chain: number };
    const header = store.files.write(target, exchange.now(), link, LAYOUT_FINGERPRINT, image, Date.now());
    store.files.prune(data.keep);
    const write = performance.now() - t;
    return {
      ok: true, written: true, seq: target, fromSeq, replayed, stateHash: header.stateHash, imageBytes: image.length,
      fileBytes: header.bodyBytes, ms: { restore, replay, encode, write }, refused,
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
