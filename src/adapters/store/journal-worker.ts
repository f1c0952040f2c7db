/**
 * The journal worker thread: owns a write connection to the service database, appends batches to
 * the journal durably, strictly in arrival order, and then writes their history projections.
 *
 * Group commit happens here, where the disk is: when a transaction ends, every batch that queued up
 * behind it (at most `maxCoalesced`) joins the next transaction, and one acknowledgement answers
 * them all. A commit costs about 200 us of fixed work (the WAL write and its fsync), so the slower
 * the disk, the larger the transactions, without the event loop having to guess when to send.
 *
 * The history comes second. A batch is acknowledged as soon as its commands are in the journal;
 * its events are projected afterwards (journal.ts says why that is safe), and appends take
 * priority: while batches keep arriving, their projections wait and are written together, in one
 * transaction, once the queue is empty or `maxProjectionLag` commands wait. Each projection
 * transaction is reported, so history reads can wait for what their client was acknowledged
 * (journal-writer.ts). Measured: bench/gateway/orders.ts, docs/performance.md.
 *
 * Housekeeping comes last: orders that ended without a fill leave the history after their retention
 * (projections/retention.ts). A chunk of at most `UnfilledOrderPruner.chunk` rows runs from a timer,
 * so only while no message is being handled; a full chunk schedules the next one behind any
 * messages that arrived meanwhile (setImmediate), otherwise the next check is `PRUNE_EVERY_MS` later.
 * Retention is counted in service time: the time stamped on the newest appended command. Journal
 * rows archived in segment files (journal-segments.ts, written by the snapshot worker) leave the
 * database the same way, `TRIM_CHUNK` rows at a time, once the service appends (recovery is over).
 */
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import type { CommittedCommand } from '../../runtime/journal-port.ts';
import { openDatabase } from './database.ts';
import { Journal } from './journal.ts';
import { unpackCommitted, type PackedCommand } from './journal-message.ts';
import { JournalSegments } from './journal-segments.ts';
import { historyProjectors } from './projections/index.ts';
import { UnfilledOrderPruner } from './projections/retention.ts';
import type { UnfilledRetention } from './projections/trading-history.ts';

export interface AppendMessage {
  readonly id: number;
  readonly batch: readonly PackedCommand[];
}

/**
 * `appended`: every batch with an id up to `upTo` is durable (ok) or was not written (the worker
 * failed). `projected`: the history holds every command up to journal seq `upTo` (ok), or a
 * projection failed (the history can no longer follow the journal until a restart).
 */
export interface WorkerReport {
  /** `ready`: the worker's modules are loaded (sent once); a worker is never terminated before it. */
  readonly kind: 'appended' | 'projected' | 'ready';
  readonly upTo: number;
  readonly ok: boolean;
  readonly error?: string;
}

export interface JournalWorkerData {
  readonly dbPath: string;
  readonly maxCoalesced: number;
  readonly maxProjectionLag: number;
  /** Orders that ended without a fill are pruned from the history after this (absent: kept). */
  readonly retention?: UnfilledRetention;
  /** DATA_DIR, whose journal/ holds the archived segments: rows archived there leave the database (absent: kept). */
  readonly archiveDataDir?: string;
}

/** How often the worker looks for history past its retention when the last chunk was not full. */
const PRUNE_EVERY_MS = 1000;

/** Journal rows deleted per chunk once archived. */
const TRIM_CHUNK = 2048;

const { dbPath, maxCoalesced, maxProjectionLag, retention, archiveDataDir } = workerData as JournalWorkerData;
const port: MessagePort = parentPort!;
const db = openDatabase(dbPath);
const projectors = historyProjectors(db);
const journal = new Journal(db, projectors);
const pruner = retention === undefined ? null : new UnfilledOrderPruner(db, projectors[1], retention);
/** Service time of the newest appended command: the clock the retention is counted on. */
let latestTs = 0;

/** Appended commands whose events are not projected yet, from journal seq `unprojectedFrom` (set by the append that starts them). */
let unprojected: CommittedCommand[] = [];
let unprojectedFrom = 0;
let projectionFailed = false;
/**
 * Why every later batch is refused, set by the first failure and never cleared; the core has
 * stopped (fail-stop) and the restart replays the journal as it was before the failure.
 * - An append failed: the batches behind it were computed by the core on top of the failed one, so
 *   appending them would leave a journal that skips it (and replays them on a different state).
 * - A history write failed: the writer then answers every batch still waiting with an error (their
 *   clients get 503), so those already on their way here must not become durable behind them.
 */
let refusal: string | null = null;

port.on('message', (first: AppendMessage) => {
  for (let next: AppendMessage | undefined = first; next !== undefined; next = receive()) {
    appendWithQueued(next);
    if (unprojected.length >= maxProjectionLag) projectPending();
  }
  projectPending();
});

function receive(): AppendMessage | undefined {
  return (receiveMessageOnPort(port) as { message: AppendMessage } | undefined)?.message;
}

/** Appends `first` and the batches queued behind it in one transaction, and acknowledges them. */
function appendWithQueued(first: AppendMessage): void {
  const batches = [first.batch];
  let last = first.id;
  while (batches.length < maxCoalesced) {
    const queued = receive();
    if (queued === undefined) break;
    batches.push(queued.batch);
    last = queued.id;
  }
  let report: WorkerReport;
  if (refusal !== null) {
    port.postMessage({ kind: 'appended', upTo: last, ok: false, error: refusal });
    return;
  }
  try {
    // Unpacked inside the try: a malformed message fails its batches like a disk error would.
    const commands = batches.flat().map(unpackCommitted);
    const firstSeq = journal.append(commands);
    latestTs = Math.max(latestTs, commands[commands.length - 1]!.ts);
    if (unprojected.length === 0) unprojectedFrom = firstSeq;
    for (const c of commands) unprojected.push(c);
    report = { kind: 'appended', upTo: last, ok: true };
  } catch (error) {
    refusal = `an earlier append failed: ${message(error)}`;
    report = { kind: 'appended', upTo: last, ok: false, error: message(error) };
  }
  port.postMessage(report);
}

function projectPending(): void {
  if (unprojected.length === 0 || projectionFailed) return;
  const batch = unprojected;
  unprojected = [];
  let report: WorkerReport;
  try {
    journal.project(batch, unprojectedFrom);
    report = { kind: 'projected', upTo: unprojectedFrom + batch.length - 1, ok: true };
  } catch (error) {
    projectionFailed = true;
    refusal ??= `the history could not be written: ${message(error)}`;
    report = { kind: 'projected', upTo: unprojectedFrom - 1, ok: false, error: message(error) };
  }
  unprojectedFrom += batch.length;
  port.postMessage(report);
}

/** One chunk of history pruning; the next runs behind waiting messages, or after `PRUNE_EVERY_MS`. */
function pruneChunk(): void {
  if (pruner === null) return;
  let full = false;
  if (refusal === null && latestTs > 0) {
    try {
      full = pruner.pruneChunk(latestTs) >= pruner.chunk;
    } catch (error) {
      // Housekeeping only: the history stays correct with the rows in it, so try again later.
      process.emitWarning(`history pruning failed: ${message(error)}`);
    }
  }
  if (full) setImmediate(pruneChunk);
  else setTimeout(pruneChunk, PRUNE_EVERY_MS).unref();
}

if (pruner !== null) setTimeout(pruneChunk, PRUNE_EVERY_MS).unref();

const segments = archiveDataDir === undefined ? null : new JournalSegments(archiveDataDir);

/** One chunk of archived journal rows out of the database; the next as for the history's pruning. */
function trimChunk(): void {
  if (segments === null) return;
  let full = false;
  if (refusal === null && latestTs > 0) {
    try {
      full = journal.trimArchived(segments.archivedThrough(), TRIM_CHUNK) >= TRIM_CHUNK;
    } catch (error) {
      // Housekeeping only: the rows are archived and still here; try again later.
      process.emitWarning(`journal trimming failed: ${message(error)}`);
    }
  }
  if (full) setImmediate(trimChunk);
  else setTimeout(trimChunk, PRUNE_EVERY_MS).unref();
}

if (segments !== null) setTimeout(trimChunk, PRUNE_EVERY_MS).unref();

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

parentPort!.postMessage({ kind: 'ready', upTo: 0, ok: true } satisfies WorkerReport);
