/**
 * Group commit of the sequencer on a real journal (SQLite file, projections included): when
 * batches go to the writer, how many may be in flight, and that replies come back in submission
 * order and only once their batch is durable. Then the history, projected after the commit: reads
 * wait for what was acknowledged, a writer failure stops the core, and recovery projects what a
 * crash left unprojected.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openDatabase } from '../adapters/store/database.ts';
import { decode, encode } from '../adapters/store/codec.ts';
import { Journal } from '../adapters/store/journal.ts';
import { InlineJournalWriter } from '../adapters/store/journal-writer.ts';
import { historyProjectors } from '../adapters/store/projections/index.ts';
import { coreConfig } from '../config/core.ts';
import { Exchange } from '../core/exchange.ts';
import { fx } from '../core/money.ts';
import type { CommittedCommand, JournalWriter } from './journal-port.ts';
import { Sequencer, type SequencerOptions } from './sequencer.ts';

const dir = mkdtempSync(join(os.tmpdir(), 'sequencer-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A real journal writer whose commits wait until the test releases them, one batch at a time. */
class GatedWriter implements JournalWriter {
  readonly sent: number[] = [];
  private readonly gates: (() => void)[] = [];
  constructor(private readonly inner: JournalWriter) {}

  append(batch: readonly CommittedCommand[]): Promise<void> {
    this.sent.push(batch.length);
    return new Promise<void>((resolve) => this.gates.push(resolve)).then(() => this.inner.append(batch));
  }

  /** Lets the oldest waiting batch commit. */
  release(): void {
    this.gates.shift()?.();
  }

  whenProjected(seq: number): Promise<void> {
    return this.inner.whenProjected(seq);
  }

  onFailure(listener: (error: Error) => void): void {
    this.inner.onFailure(listener);
  }
}

/**
 * A real journal writer that appends at once and writes the history only when the test says so,
 * as the journal worker does a little later: the writer contract the sequencer relies on.
 */
class LaggingHistoryWriter implements JournalWriter {
  private unprojected: CommittedCommand[] = [];
  private unprojectedFrom = 1;
  private readers: { seq: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  private failureListener: ((error: Error) => void) | null = null;
  constructor(private readonly journal: Journal) {}

  append(batch: readonly CommittedCommand[]): Promise<void> {
    const first = this.journal.append(batch);
    if (this.unprojected.length === 0) this.unprojectedFrom = first;
    this.unprojected.push(...batch);
    return Promise.resolve();
  }

  /** Writes the history of everything appended so far. */
  project(): void {
    this.journal.project(this.unprojected, this.unprojectedFrom);
    this.unprojected = [];
    const projected = this.journal.projectedSeq();
    for (const r of this.readers.filter((r) => r.seq <= projected)) r.resolve();
    this.readers = this.readers.filter((r) => r.seq > projected);
  }

  fail(error: Error): void {
    for (const r of this.readers) r.reject(error);
    this.failureListener?.(error);
  }

  whenProjected(seq: number): Promise<void> {
    if (seq <= this.journal.projectedSeq()) return Promise.resolve();
    return new Promise((resolve, reject) => this.readers.push({ seq, resolve, reject }));
  }

  onFailure(listener: (error: Error) => void): void {
    this.failureListener = listener;
  }
}

let files = 0;
function setUp(options: Omit<SequencerOptions, 'onFatal'>) {
  const db = openDatabase(join(dir, `exchange-${++files}.sqlite`));
  const journal = new Journal(db, historyProjectors(db));
  const writer = new GatedWriter(new InlineJournalWriter(journal));
  const exchange = new Exchange(coreConfig({ depositConfirmations: 1 }));
  const sequencer = new Sequencer(exchange, journal, writer, { now: () => Date.UTC(2026, 10, 22) }, { ...options, onFatal: () => {} });
  return { journal, writer, sequencer };
}

const deposit = (i: number) => ({
  type: 'chain.deposit_observed' as const,
  txHash: `0x${i.toString(16).padStart(64, '0')}`,
  account: `0x${'a'.repeat(40)}`,
  amount: fx('1'),
  confirmations: 1,
});

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A few event-loop turns: a commit's acknowledgement and the flush it schedules take more than one. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await tick();
}

test('a burst is sent in slices of earlyFlushAt while it is being applied, the rest at the end of the turn', async () => {
  const { writer, sequencer, journal } = setUp({ earlyFlushAt: 2, maxInFlight: 4 });
  const order: number[] = [];
  const replies = [0, 1, 2, 3, 4].map((i) => sequencer.submit(deposit(i)).then((o) => (assert.ok(o.ok), order.push(i))));
  assert.deepEqual(writer.sent, [2, 2], 'two slices left during the burst itself');
  await tick();
  assert.deepEqual(writer.sent, [2, 2, 1], 'the remainder left at the end of the turn');
  assert.equal(journal.head(), 0, 'nothing is durable before the writer commits');
  for (let i = 0; i < 3; i++) writer.release();
  await Promise.all(replies);
  assert.deepEqual(order, [0, 1, 2, 3, 4], 'replies in submission order');
  assert.equal(journal.head(), 5);
});

test('with maxInFlight batches in flight, commands collect and the next batch takes all of them', async () => {
  const { writer, sequencer, journal } = setUp({ earlyFlushAt: 2, maxInFlight: 1 });
  let answered = 0;
  const replies = [0, 1, 2, 3, 4, 5, 6].map((i) => sequencer.submit(deposit(i)).then(() => answered++));
  await tick();
  assert.deepEqual(writer.sent, [2], 'one batch in flight; the other five wait');
  assert.equal(answered, 0);
  writer.release();
  await settle();
  assert.equal(answered, 2, 'the first batch is answered once durable');
  assert.deepEqual(writer.sent, [2, 5], 'the commit sent everything that waited as one batch');
  writer.release();
  await Promise.all(replies);
  assert.equal(journal.head(), 7);
});

function setUpLagging() {
  const db = openDatabase(join(dir, `exchange-${++files}.sqlite`));
  const [wallet, trading, market] = historyProjectors(db);
  const journal = new Journal(db, [wallet, trading, market]);
  const writer = new LaggingHistoryWriter(journal);
  const exchange = new Exchange(coreConfig({ depositConfirmations: 1 }));
  let fatal: unknown = null;
  const options = { earlyFlushAt: 16, maxInFlight: 4, onFatal: (e: unknown) => (fatal = e) };
  const sequencer = new Sequencer(exchange, journal, writer, { now: () => Date.UTC(2026, 10, 22) }, options);
  return { db, journal, wallet, writer, sequencer, fatal: () => fatal };
}

const ACCOUNT = 1; // the first address the exchange sees

test('a history read waits until the history holds every command acknowledged before it', async () => {
  const { writer, sequencer, wallet } = setUpLagging();
  for (let i = 0; i < 3; i++) assert.ok((await sequencer.submit(deposit(i))).ok);
  assert.equal(wallet.history(ACCOUNT, 100).length, 0, 'acknowledged, not projected yet');
  let ready = false;
  const read = sequencer.historyBarrier().then(() => (ready = true));
  await settle();
  assert.equal(ready, false, 'the read waits for the history');
  writer.project();
  await read;
  assert.equal(wallet.history(ACCOUNT, 100).length, 3, 'one deposit line per acknowledged command');
  await sequencer.historyBarrier(); // already current: resolves at once
});

test('a history writer failure stops the core: commands are refused and history reads fail', async () => {
  const { writer, sequencer, fatal } = setUpLagging();
  assert.ok((await sequencer.submit(deposit(0))).ok);
  const read = sequencer.historyBarrier();
  writer.fail(new Error('disk full'));
  await assert.rejects(read, /disk full/);
  await settle();
  assert.equal(sequencer.isHealthy(), false);
  assert.match(String(fatal()), /disk full/);
  const refused = await sequencer.submit(deposit(1));
  assert.ok(!refused.ok && refused.code === 'UNAVAILABLE');
});

test('recovery projects the commands a crash left unprojected, from the replay\'s own events', async () => {
  // The live run: five deposits acknowledged, the history written for the first two only.
  const live = setUpLagging();
  for (let i = 0; i < 2; i++) assert.ok((await live.sequencer.submit(deposit(i))).ok);
  live.writer.project();
  for (let i = 2; i < 5; i++) assert.ok((await live.sequencer.submit(deposit(i))).ok);
  assert.equal(live.journal.projectedSeq(), 2);
  const path = live.db.name;
  live.db.close();

  const { db, wallet, journal, sequencer } = restart(path);
  assert.equal((await sequencer.recover()).replayed, 5);
  assert.equal(journal.projectedSeq(), 5);
  const lines = wallet.history(ACCOUNT, 100);
  assert.equal(lines.length, 5, 'each deposit projected exactly once');
  assert.deepEqual(lines.map((l) => l.amount), Array(5).fill(fx('1')));
  db.close();
});

test('recovery reads a journal port that answers asynchronously (a log over the network) as it reads SQLite', async () => {
  const live = setUpLagging();
  for (let i = 0; i < 2; i++) assert.ok((await live.sequencer.submit(deposit(i))).ok);
  live.writer.project();
  for (let i = 2; i < 5; i++) assert.ok((await live.sequencer.submit(deposit(i))).ok);
  const path = live.db.name;
  live.db.close();

  const { db, journal, sequencer } = restart(path);
  const recovering = sequencer.recover({
    records: async function* (fromSeq, previousLink) {
      for (const record of journal.replay(fromSeq, previousLink)) yield await Promise.resolve(record);
    },
  });
  const refused = await sequencer.submit(deposit(5));
  assert.ok(!refused.ok && refused.code === 'UNAVAILABLE', 'nothing is accepted while the journal is read');
  assert.equal((await recovering).replayed, 5);
  assert.equal(journal.projectedSeq(), 5);
  assert.equal(sequencer.stats().journalHead, 5, 'the durable watermark starts at the head recovery read');
  assert.ok((await sequencer.submit(deposit(5))).ok);
  assert.equal(journal.head(), 6);
  db.close();
});

/** A fresh core on the same file, as a restarted service builds it. */
function restart(path: string, replayCheck: 'strict' | 'warn' = 'strict') {
  const db = openDatabase(path);
  const [wallet, trading, market] = historyProjectors(db);
  const journal = new Journal(db, [wallet, trading, market]);
  const exchange = new Exchange(coreConfig({ depositConfirmations: 1 }));
  const options = { earlyFlushAt: 16, maxInFlight: 4, onFatal: () => {}, replayCheck };
  const sequencer = new Sequencer(exchange, journal, new InlineJournalWriter(journal), { now: () => Date.UTC(2026, 10, 22) }, options);
  return { db, wallet, journal, sequencer, exchange };
}

/** Four deposits acknowledged, the history written for the first three; the file closed. */
async function crashedAfterFour(): Promise<string> {
  const live = setUpLagging();
  for (let i = 0; i < 3; i++) assert.ok((await live.sequencer.submit(deposit(i))).ok);
  live.writer.project();
  assert.ok((await live.sequencer.submit(deposit(3))).ok);
  const path = live.db.name;
  live.db.close();
  return path;
}

/** Alters the balance the history recorded after account 1's last ledger line. */
function alterLastLine(path: string, balance: string): void {
  const edit = openDatabase(path);
  edit.prepare('UPDATE ledger_entries SET balance_after = ? WHERE id = (SELECT MAX(id) FROM ledger_entries WHERE account_id = 1)').run(balance);
  edit.prepare("UPDATE ledger_balances SET balance_after = ? WHERE account_key = 'u:1:wallet:USDC'").run(balance);
  edit.close();
}

test('recovery refuses a replay that does not reproduce the recorded balances (the core changed under the journal)', async () => {
  const path = await crashedAfterFour();
  // What a change of the core's behaviour does to a replay: the second command now yields 2, not 1.
  const edit = openDatabase(path);
  const row = edit.prepare('SELECT command FROM journal WHERE seq = 2').get() as { command: string };
  const command = decode<ReturnType<typeof deposit>>(row.command);
  edit.prepare('UPDATE journal SET command = ? WHERE seq = 2').run(encode({ ...command, amount: fx('2') }));
  // Unlinked from there on, the records are linked anew when the journal opens (as a journal written
  // before the chain is): the record is valid, only the replay check can tell.
  edit.prepare('UPDATE journal SET chain = NULL WHERE seq >= 2').run();
  edit.close();
  const { db, sequencer } = restart(path);
  await assert.rejects(sequencer.recover(), /journal replay diverged from the recorded history at seq 3: u:1:wallet:USDC recorded 3, replayed 4/);
  db.close();
});

test('JOURNAL_REPLAY_CHECK=warn: recovery reports the difference and serves the replayed state', async () => {
  const path = await crashedAfterFour();
  alterLastLine(path, '7');
  const { db, sequencer, exchange, journal } = restart(path, 'warn');
  assert.equal((await sequencer.recover()).replayed, 4);
  assert.match(sequencer.replayDivergence ?? '', /at seq 3: u:1:wallet:USDC recorded 7, replayed 3/);
  assert.equal(exchange.transferable(1, 'wallet', 'USDC'), fx('4'), 'the replayed state, all four deposits');
  assert.equal(journal.projectedSeq(), 4);
  db.close();
});

test('recovery refuses a history that does not match the journal', async () => {
  const path = await crashedAfterFour();
  alterLastLine(path, '7');
  const { db, sequencer } = restart(path);
  await assert.rejects(sequencer.recover(), /diverged from the recorded history at seq 3: u:1:wallet:USDC recorded 7, replayed 3/);
  db.close();
});


test('recovery refuses a journal record altered after it was written, and names it', async () => {
  const path = await crashedAfterFour();
  const edit = openDatabase(path);
  const row = edit.prepare('SELECT command FROM journal WHERE seq = 2').get() as { command: string };
  edit.prepare('UPDATE journal SET command = ? WHERE seq = 2').run(encode({ ...decode<ReturnType<typeof deposit>>(row.command), amount: fx('2') }));
  edit.close();
  const { db, sequencer } = restart(path);
  await assert.rejects(sequencer.recover(), /journal record at seq 2 does not match its checksum/);
  db.close();
});

test('recovery refuses a journal with a record missing in the middle, and names it', async () => {
  const path = await crashedAfterFour();
  const edit = openDatabase(path);
  edit.prepare('DELETE FROM journal WHERE seq = 2').run();
  edit.close();
  const { db, sequencer } = restart(path);
  // Before: replay skipped the gap; only the balance check could notice, and only when the lost
  // command moved a ledger line (a lost resting order went unnoticed).
  await assert.rejects(sequencer.recover(), /the journal has no record at seq 2 \(the next is seq 3\)/);
  db.close();
});

/**
 * A sequencer whose journal writer hangs on every append until `diskFails` rejects the pending one
 * and reports the failure (in either order: the worker's report and the append's rejection race).
 */
function withFailingDisk(maxInFlight: number) {
  const db = openDatabase(join(dir, `exchange-${++files}.sqlite`));
  const journal = new Journal(db, historyProjectors(db));
  let failed: (error: Error) => void = () => undefined;
  let listener: (error: Error) => void = () => undefined;
  const writer: JournalWriter = {
    append: () => new Promise<void>((_resolve, reject) => (failed = reject)),
    whenProjected: () => Promise.resolve(),
    onFailure: (l) => (listener = l),
  };
  const exchange = new Exchange(coreConfig({ depositConfirmations: 1 }));
  const options = { earlyFlushAt: 16, maxInFlight, replayCheck: 'strict' as const, onFatal: () => {} };
  const sequencer = new Sequencer(exchange, journal, writer, { now: () => Date.UTC(2026, 10, 22) }, options);
  const diskFails = (order: 'listener first' | 'append first') => {
    const error = new Error('disk I/O error (injected)');
    if (order === 'listener first') listener(error);
    failed(error);
    if (order === 'append first') listener(error);
  };
  return { db, sequencer, diskFails };
}

test('a journal failure while the pipeline is full answers everything waiting: commands 503, barriers reject', async () => {
  const { db, sequencer, diskFails } = withFailingDisk(1);
  const first = sequencer.submit(deposit(0));
  await settle(); // the first batch is in flight: the pipeline is full
  const second = sequencer.submit(deposit(1));
  const barrier = sequencer.barrier().then(() => 'resolved', () => 'rejected');
  await settle();
  diskFails('listener first'); // the worker reports the failure before the append promise settles
  // Before: the second command and the barrier waited forever (the full pipeline kept them unsent).
  assert.deepEqual(await Promise.all([first, second].map((p) => p.then((o) => (o.ok ? 'ok' : o.code)))), ['UNAVAILABLE', 'UNAVAILABLE']);
  assert.equal(await barrier, 'rejected');
  assert.equal(await sequencer.barrier().then(() => 'resolved', () => 'rejected'), 'rejected', 'and every later read');
  db.close();
});

test('a read waiting behind a batch that fails is refused, though its own group was written', async () => {
  const { db, sequencer, diskFails } = withFailingDisk(4);
  const deposit0 = sequencer.submit(deposit(0));
  await settle(); // its batch is in flight; the pipeline has room
  const barrier = sequencer.barrier().then(() => 'resolved', () => 'rejected'); // a read that shows the deposit
  await settle(); // the barrier's group (no commands) is sent behind it
  diskFails('append first');
  assert.equal((await deposit0).ok ? 'ok' : 'refused', 'refused');
  assert.equal(await barrier, 'rejected', 'before: resolved, and the read showed a deposit that was never written');
  db.close();
});
