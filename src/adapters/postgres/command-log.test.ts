/**
 * The PostgreSQL command log against a real server (test/support/postgres.ts): the leader's group
 * commit and what followers and recovery read back, checked against the CRC chain; a duplicate
 * command id and a kill -9 of the server stop the writer (fail-stop) without losing anything it
 * acknowledged. One server for the file, its log emptied before each test.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { coreConfig } from '../../config/core.ts';
import { Exchange } from '../../core/exchange.ts';
import { fx } from '../../core/money.ts';
import type { LinkedRecord } from '../../runtime/command-log-tail.ts';
import type { CommittedCommand } from '../../runtime/journal-port.ts';
import { Sequencer } from '../../runtime/sequencer.ts';
import { PostgresServer } from '../../../test/support/postgres.ts';
import { waitFor } from '../../../test/support/harness.ts';
import { GENESIS } from '../store/journal-record.ts';
import { FencedError, PgCommandLog } from './command-log.ts';
import { migratePostgres } from './database.ts';

let server: PostgresServer;
before(async () => {
  server = await PostgresServer.start();
  await migratePostgres(server.url);
});
after(() => server.destroy());

/** The file's database emptied, with core_leader at epoch 1; its url. */
async function freshDatabase(): Promise<string> {
  await query(server.url, 'TRUNCATE command_log');
  await query(server.url, 'UPDATE core_leader SET epoch = 1 WHERE id = 1');
  return server.url;
}

async function query<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

const deposit = (i: number) => ({
  type: 'chain.deposit_observed' as const,
  txHash: `0x${i.toString(16).padStart(64, '0')}`,
  account: `0x${'a'.repeat(40)}`,
  amount: fx('1'),
  confirmations: 1,
});
const committed = (i: number, commandId?: string): CommittedCommand => ({ commandId, ts: 1_700_000_000_000 + i, command: deposit(i), events: [] });

async function collect(records: AsyncIterable<LinkedRecord>): Promise<LinkedRecord[]> {
  const out: LinkedRecord[] = [];
  for await (const record of records) out.push(record);
  return out;
}

test('appended batches read back in order through replay and readAfter, chained, with their command ids', async () => {
  const url = await freshDatabase();
  const log = await PgCommandLog.lead(url, 1, { pageSize: 2 });
  const reader = PgCommandLog.follow(url);
  try {
    await log.append([committed(1, 'c-1'), committed(2)]);
    await log.append([committed(3, 'c-3')]);
    await log.append([committed(4), committed(5, 'c-5')]);
    assert.equal(await reader.head(), 5);
    const replayed = await collect(reader.replay(1));
    assert.deepEqual(replayed.map((r) => r.seq), [1, 2, 3, 4, 5]);
    assert.deepEqual(replayed.map((r) => r.command), [1, 2, 3, 4, 5].map(deposit));
    assert.deepEqual(replayed.map((r) => r.ts), [1, 2, 3, 4, 5].map((i) => committed(i).ts));
    assert.deepEqual(replayed.map((r) => r.commandId), ['c-1', null, 'c-3', null, 'c-5']);
    // From the middle: the chain goes on from the link of the record before, read or given.
    assert.deepEqual(await collect(reader.replay(3)), replayed.slice(2));
    assert.deepEqual(await collect(reader.replay(4, replayed[2]!.link)), replayed.slice(3));
    assert.deepEqual(await reader.readAfter(1, replayed[0]!.link, 2), replayed.slice(1, 3));
    assert.deepEqual(await reader.readAfter(5, replayed[4]!.link, 10), []);
    assert.equal(await reader.seqOfCommand('c-3'), 3);
    assert.equal(await reader.seqOfCommand('unknown'), null);
    await assert.rejects(log.whenProjected(), /keeps no history/);

    // One byte more in record 4's command: every read refuses it, naming the seq.
    await query(url, `UPDATE command_log SET command = command || '\\x00'::bytea WHERE seq = 4`);
    await assert.rejects(collect(reader.replay(1)), /seq 4 does not match its checksum/);
    await assert.rejects(reader.readAfter(0, GENESIS, 10), /seq 4 does not match its checksum/);
    // A removed record is a gap, named too.
    await query(url, 'DELETE FROM command_log WHERE seq = 2');
    await assert.rejects(reader.readAfter(0, GENESIS, 10), /no record at seq 2 \(the next is seq 3\)/);
  } finally {
    await Promise.all([log.close(), reader.close()]);
  }
});

test('a command id appended twice fails the append and stops the writer for good', async () => {
  const url = await freshDatabase();
  const log = await PgCommandLog.lead(url, 1);
  const failures: Error[] = [];
  log.onFailure((error) => failures.push(error));
  try {
    await log.append([committed(1, 'same')]);
    await assert.rejects(log.append([committed(2, 'same')]), /duplicate key value violates unique constraint/);
    await assert.rejects(log.append([committed(3)]), /duplicate key/);
    assert.equal(failures.length, 1);
    assert.deepEqual(await query(url, 'SELECT seq FROM command_log'), [{ seq: '1' }]);
  } finally {
    await log.close();
  }
});

test('appends queued while a commit is in flight share the next commit, in order, seqs contiguous', async () => {
  const url = await freshDatabase();
  const log = await PgCommandLog.lead(url, 1, { maxCoalesced: 32 });
  try {
    const appends = Array.from({ length: 200 }, (_, i) => log.append([committed(i + 1)]));
    await Promise.all(appends);
    assert.ok(log.transactions < 200 / 4, `${log.transactions} transactions for 200 appends`);
    assert.ok(log.transactions >= 200 / 32);
    const rows = await query<{ seq: string; ts: string }>(url, 'SELECT seq, ts FROM command_log ORDER BY seq');
    assert.deepEqual(rows.map((r) => Number(r.seq)), Array.from({ length: 200 }, (_, i) => i + 1));
    assert.deepEqual(rows.map((r) => Number(r.ts)), Array.from({ length: 200 }, (_, i) => committed(i + 1).ts));
    // A second leader's writer at the same epoch starts from the head and the chain's end.
    const next = await PgCommandLog.lead(url, 1);
    await next.append([committed(201)]);
    await next.close();
    const records = await collect(PgCommandLog.follow(url).replay(1));
    assert.equal(records.length, 201);
  } finally {
    await log.close();
  }
});

test('a writer whose epoch is no longer current appends nothing', async () => {
  const url = await freshDatabase();
  await assert.rejects(PgCommandLog.lead(url, 7), FencedError);
  const log = await PgCommandLog.lead(url, 1);
  await log.append([committed(1)]);
  await query(url, 'UPDATE core_leader SET epoch = 2 WHERE id = 1');
  await assert.rejects(log.append([committed(2)]), (error: unknown) => error instanceof FencedError && /epoch 1 but core_leader holds epoch 2/.test(error.message));
  await assert.rejects(log.append([committed(3)]), FencedError);
  assert.deepEqual(await query(url, 'SELECT seq FROM command_log'), [{ seq: '1' }]);
  await log.close();
});

test('onAppended delivers the new head after each commit', async () => {
  const url = await freshDatabase();
  const log = await PgCommandLog.lead(url, 1);
  const follower = PgCommandLog.follow(url);
  const heads: number[] = [];
  const stop = await follower.onAppended((head) => heads.push(head));
  try {
    await log.append([committed(1), committed(2)]);
    await log.append([committed(3)]);
    await waitFor(() => heads.length === 2, 5_000);
    assert.deepEqual(heads, [2, 3]);
    await stop();
    await log.append([committed(4)]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(heads, [2, 3]);
  } finally {
    await Promise.all([log.close(), follower.close()]);
  }
});

test('the sequencer over the log: group commits with command ids, then recovery from the log alone (no history)', async () => {
  const url = await freshDatabase();
  const clock = { now: () => Date.UTC(2026, 10, 22) };
  const options = { earlyFlushAt: 4, maxInFlight: 4, onFatal: () => undefined };
  const live = await PgCommandLog.lead(url, 1);
  const sequencer = new Sequencer(new Exchange(coreConfig({ depositConfirmations: 1 })), live, live, clock, options);
  assert.equal((await sequencer.recover()).journalSeq, 0);
  const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => sequencer.submit(deposit(i), `id-${i}`)));
  assert.ok(outcomes.every((o) => o.ok));
  await assert.rejects(sequencer.historyBarrier(), /keeps no history/);
  assert.equal(await live.seqOfCommand('id-9'), 10);
  const account = `0x${'a'.repeat(40)}`;
  const balance = (exchange: Exchange) => exchange.walletBalances(account);
  await live.close();

  // A standby taking over: epoch bumped, a fresh core rebuilt from the log alone.
  await query(server.url, 'UPDATE core_leader SET epoch = 2 WHERE id = 1');
  const next = await PgCommandLog.lead(url, 2, { pageSize: 3 });
  const recovered = new Sequencer(new Exchange(coreConfig({ depositConfirmations: 1 })), next, next, clock, options);
  const result = await recovered.recover();
  assert.equal(result.replayed, 10);
  assert.equal(result.journalSeq, 10);
  assert.deepEqual(balance(recovered.exchange), balance(sequencer.exchange));
  assert.ok((await recovered.submit(deposit(10), 'id-10')).ok);
  assert.equal(await next.seqOfCommand('id-10'), 11);
  await next.close();
});

// Last: it kills the file's server (and restarts it).
test('kill -9 of PostgreSQL under appends: every acknowledged append survives, the rest reject promptly, the writer stops', async () => {
  const url = await freshDatabase();
  const timeoutMs = 2_000;
  const log = await PgCommandLog.lead(url, 1, { timeoutMs });
  const failures: Error[] = [];
  log.onFailure((error) => failures.push(error));
  const acknowledged: number[] = [];
  const settled: Promise<void>[] = [];
  let i = 0;
  let lastSettled = 0;
  const sending = setInterval(() => {
    for (let k = 0; k < 5; k++) {
      const n = ++i;
      settled.push(log.append([committed(n)]).then(() => void acknowledged.push(n), () => undefined).finally(() => (lastSettled = Date.now())));
    }
  }, 2);
  await waitFor(() => acknowledged.length >= 200, 10_000, 5).catch((error: unknown) => {
    clearInterval(sending);
    throw error;
  });
  const killedAt = Date.now();
  await server.kill(); // appends keep coming while it dies
  clearInterval(sending);
  await Promise.all(settled);
  assert.ok(lastSettled - killedAt < timeoutMs + 2_000, `appends settled ${lastSettled - killedAt} ms after the kill`);
  assert.equal(failures.length, 1);
  assert.ok(acknowledged.length < i, 'some appends were in flight at the kill');
  await assert.rejects(log.append([committed(i + 1)]));
  await log.close();

  await server.restart();
  const reader = PgCommandLog.follow(url);
  const records = await collect(reader.replay(1));
  await reader.close();
  const durable = new Set(records.map((r) => (r.command as { txHash: string }).txHash));
  for (const n of acknowledged) assert.ok(durable.has(deposit(n).txHash), `acknowledged append ${n} is in the log`);
  // Acknowledged in the order appended: the log holds a prefix of what was sent.
  assert.deepEqual(records.map((r) => r.ts), records.map((_, k) => committed(k + 1).ts));
});
