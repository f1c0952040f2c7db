/**
 * The worker journal writer on a real SQLite file: batches sent faster than the worker commits
 * share transactions, every batch is answered, and the journal holds them all in sending order;
 * the history follows each commit, appends take priority over it, and `whenProjected` resolves
 * once it is written.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { coreConfig } from '../../config/core.ts';
import { Exchange } from '../../core/exchange.ts';
import { fx } from '../../core/money.ts';
import { openDatabase } from './database.ts';
import type { CommittedCommand } from '../../runtime/journal-port.ts';
import { Journal } from './journal.ts';
import { WorkerJournalWriter } from './journal-writer.ts';
import { historyProjectors } from './projections/index.ts';
import type { AppendMessage, JournalWorkerData, WorkerReport } from './journal-worker.ts';
import { packCommitted } from './journal-message.ts';

const dir = mkdtempSync(join(os.tmpdir(), 'journal-writer-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('batches that queue behind a commit share the next transaction, in order, each answered', async () => {
  const path = join(dir, 'exchange.sqlite');
  const db = openDatabase(path);
  const journal = new Journal(db, historyProjectors(db)); // creates the schema the worker writes
  const maxCoalesced = 8;
  const writer = new WorkerJournalWriter(path, { projectedTypes: journal.projectedTypes(), maxCoalesced, maxProjectionLag: 1024, projectedSeq: 0 });
  try {
    const hashes = Array.from({ length: 50 }, (_, i) => `0x${i.toString(16).padStart(64, '0')}`);
    const answered: number[] = [];
    await Promise.all(hashes.map((txHash, i) => {
      const command = { type: 'chain.deposit_observed' as const, txHash, account: `0x${'b'.repeat(40)}`, amount: fx('1'), confirmations: 1 };
      return writer.append([{ ts: 1_000 + i, command, events: [] }]).then(() => answered.push(i));
    }));
    assert.deepEqual(answered, hashes.map((_, i) => i), 'every batch answered, in sending order');
    assert.ok(writer.transactions < 50, `50 batches sent at once took ${writer.transactions} transactions`);
    assert.ok(writer.transactions >= Math.ceil(50 / maxCoalesced), 'no transaction holds more than maxCoalesced batches');
    const stored = [...journal.replay()];
    assert.deepEqual(stored.map((r) => r.seq), hashes.map((_, i) => i + 1));
    assert.deepEqual(stored.map((r) => (r.command as { txHash: string }).txHash), hashes);
  } finally {
    await writer.close();
    db.close();
  }
});

test('a malformed message fails its batch with an error acknowledgement and writes nothing, then or after', async () => {
  const path = join(dir, 'malformed.sqlite');
  const db = openDatabase(path);
  const journal = new Journal(db, historyProjectors(db));
  const worker = await journalWorker(path, 8);
  try {
    const command = { type: 'clock.tick' };
    const message: AppendMessage = { id: 1, batch: [[1_000, command], [1_001, command, 9, 'not an event']] };
    worker.postMessage(message);
    const [ack] = (await once(worker, 'message')) as [WorkerReport];
    assert.equal(ack.kind, 'appended');
    assert.equal(ack.upTo, 1);
    assert.equal(ack.ok, false);
    assert.match(ack.error ?? '', /unknown event tag 9/);
    assert.equal([...journal.replay()].length, 0, 'no command of the failed batch was journaled');
    // The core computed later batches on top of the failed one: appending them would leave a
    // journal that skips it (before the fix, this batch was written as seq 1).
    worker.postMessage({ id: 2, batch: [[1_002, command]] } satisfies AppendMessage);
    const [next] = (await once(worker, 'message')) as [WorkerReport];
    assert.deepEqual([next.kind, next.upTo, next.ok], ['appended', 2, false]);
    assert.match(next.error ?? '', /an earlier append failed/);
    assert.equal([...journal.replay()].length, 0, 'nothing is written after a failed append');
  } finally {
    await worker.terminate();
    db.close();
  }
});

/** `n` deposits applied by a real core, with the events it produced (one ledger line each). */
function deposits(n: number): CommittedCommand[] {
  const core = new Exchange(coreConfig({ depositConfirmations: 1 }));
  return Array.from({ length: n }, (_, i) => {
    const command = { type: 'chain.deposit_observed' as const, txHash: txHashOf(i), account: `0x${'c'.repeat(40)}`, amount: fx('1'), confirmations: 1 };
    const outcome = core.execute(command, 1_000 + i);
    assert.ok(outcome.ok);
    return { ts: 1_000 + i, command, events: outcome.events };
  });
}

const txHashOf = (i: number) => `0x${i.toString(16).padStart(64, '0')}`;

test('appends are acknowledged before their history is written, and appends queued meanwhile go first', async () => {
  const path = join(dir, 'priority.sqlite');
  const db = openDatabase(path);
  const projectors = historyProjectors(db);
  const [wallet] = projectors;
  const journal = new Journal(db, projectors);
  const worker = await journalWorker(path, 1); // one batch per transaction, so each message is its own append
  try {
    const reports: WorkerReport[] = [];
    worker.on('message', (r: WorkerReport) => reports.push(r));
    const commands = deposits(3);
    for (let i = 0; i < 3; i++) worker.postMessage({ id: i + 1, batch: [packCommitted(commands[i]!, journal.projectedTypes())] } satisfies AppendMessage);
    await waitUntil(() => reports.some((r) => r.kind === 'projected'));
    assert.deepEqual(reports.map((r) => [r.kind, r.upTo, r.ok]), [
      ['appended', 1, true], ['appended', 2, true], ['appended', 3, true], ['projected', 3, true],
    ], 'the three appends first, then one history transaction for all three');
    assert.equal(journal.projectedSeq(), 3);
    assert.deepEqual(wallet.history(1, 10).map((l) => l.txHash), [2, 1, 0].map(txHashOf), 'newest first');
  } finally {
    await worker.terminate();
    db.close();
  }
});

test('after a history write fails, nothing more is appended: the core has stopped and answered those batches 503', async () => {
  const path = join(dir, 'history-failure.sqlite');
  const db = openDatabase(path);
  const journal = new Journal(db, historyProjectors(db));
  // The disk refuses history rows and only them: the journal's own table still takes appends.
  db.exec(`CREATE TRIGGER history_refused BEFORE INSERT ON ledger_entries BEGIN SELECT RAISE(ABORT, 'history disk full'); END`);
  const worker = await journalWorker(path, 1);
  try {
    const reports: WorkerReport[] = [];
    worker.on('message', (r: WorkerReport) => reports.push(r));
    const commands = deposits(2);
    worker.postMessage({ id: 1, batch: [packCommitted(commands[0]!, journal.projectedTypes())] } satisfies AppendMessage);
    await waitUntil(() => reports.some((r) => r.kind === 'projected'));
    assert.deepEqual(reports.map((r) => [r.kind, r.upTo, r.ok]), [['appended', 1, true], ['projected', 0, false]]);
    // The writer failed every batch still waiting (their clients got 503) and stopped the core;
    // a batch already on its way must not be written behind their backs.
    worker.postMessage({ id: 2, batch: [packCommitted(commands[1]!, journal.projectedTypes())] } satisfies AppendMessage);
    await waitUntil(() => reports.length === 3);
    assert.deepEqual([reports[2]!.kind, reports[2]!.upTo, reports[2]!.ok], ['appended', 2, false], 'before: appended, ok');
    assert.match(reports[2]!.error ?? '', /history disk full/);
    assert.equal([...journal.replay()].length, 1, 'only the batch acknowledged before the failure is in the journal');
  } finally {
    await worker.terminate();
    db.close();
  }
});

test('whenProjected resolves once the history holds the journal up to that seq', async () => {
  const path = join(dir, 'when-projected.sqlite');
  const db = openDatabase(path);
  const projectors = historyProjectors(db);
  const [wallet] = projectors;
  const journal = new Journal(db, projectors);
  const writer = new WorkerJournalWriter(path, { projectedTypes: journal.projectedTypes(), maxCoalesced: 8, maxProjectionLag: 1024, projectedSeq: 0 });
  try {
    await writer.whenProjected(0); // nothing to wait for
    await Promise.all(deposits(4).map((c) => writer.append([c])));
    await writer.whenProjected(4);
    assert.equal(journal.projectedSeq(), 4);
    assert.equal(wallet.history(1, 10).length, 4);
  } finally {
    await writer.close();
    db.close();
  }
});

/** The journal worker itself, without a writer in front of it, once loaded: the test posts and reads its messages. */
async function journalWorker(dbPath: string, maxCoalesced: number): Promise<Worker> {
  const entry = new URL('./journal-worker.ts', import.meta.url).href;
  const workerData: JournalWorkerData & { entry: string } = { entry, dbPath, maxCoalesced, maxProjectionLag: 1024 };
  const worker = new Worker(new URL('./worker-boot.mjs', import.meta.url), { workerData });
  const [ready] = (await once(worker, 'message')) as [WorkerReport];
  assert.equal(ready.kind, 'ready');
  return worker;
}

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(condition(), 'timed out');
}
