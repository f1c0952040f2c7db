/**
 * The leader lease against a real server (test/support/postgres.ts): one holder at a time, an
 * epoch bumped per holder, the loss of the lease connection reported; and the fencing it gives the
 * command log: a deposed leader appends nothing, and a new leader's head includes every batch the
 * old one committed before the bump (docs/architecture.md "Distributed mode: the command log and
 * the leader lease"). One server for the file, its tables reset before each test.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import pg from 'pg';
import type { Command } from '../../core/commands.ts';
import { fx } from '../../core/money.ts';
import type { CommittedCommand } from '../../runtime/journal-port.ts';
import { PostgresServer } from '../../../test/support/postgres.ts';
import { waitFor } from '../../../test/support/harness.ts';
import { encodeCommand } from '../store/command-codec.ts';
import { GENESIS, link } from '../store/journal-record.ts';
import { FencedError, PgCommandLog } from './command-log.ts';
import { migratePostgres } from './database.ts';
import { LeaderLease } from './leader-lease.ts';

let server: PostgresServer;
before(async () => {
  server = await PostgresServer.start();
  await migratePostgres(server.url);
});
after(() => server.destroy());
beforeEach(async () => {
  await query('TRUNCATE command_log');
  await query('UPDATE core_leader SET epoch = 0, holder = NULL, since = NULL WHERE id = 1');
});

async function query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

const deposit = (i: number): Command => ({
  type: 'chain.deposit_observed',
  txHash: `0x${i.toString(16).padStart(64, '0')}`,
  account: `0x${'a'.repeat(40)}`,
  amount: fx('1'),
  confirmations: 1,
});
const committed = (i: number): CommittedCommand => ({ ts: 1_700_000_000_000 + i, command: deposit(i), events: [] });
const fast = { keepaliveMs: 200, timeoutMs: 2_000 };

test('one holder at a time, each bumping the epoch; release lets the next one in', async () => {
  const a = new LeaderLease(server.url, fast);
  const b = new LeaderLease(server.url, fast);
  assert.equal(await a.acquire('core-a', { pollMs: 20 }), 1);
  assert.deepEqual(await query('SELECT epoch, holder FROM core_leader'), [{ epoch: '1', holder: 'core-a' }]);
  // B waits while A holds the lock; an abort ends its wait.
  await assert.rejects(b.acquire('core-b', { pollMs: 20, signal: AbortSignal.timeout(200) }), { name: 'TimeoutError' });
  const c = new LeaderLease(server.url, fast);
  const lostA: Error[] = [];
  a.onLost((error) => lostA.push(error));
  const taken = c.acquire('core-c', { pollMs: 20 });
  await a.release();
  assert.equal(await taken, 2);
  assert.deepEqual(await query('SELECT epoch, holder FROM core_leader'), [{ epoch: '2', holder: 'core-c' }]);
  assert.deepEqual(lostA, [], 'a release is not a loss');
  await c.release();
});

test('a deposed leader is fenced: its lease is lost, the next leader bumps, its appends insert nothing', async () => {
  const leaseA = new LeaderLease(server.url, fast);
  const epochA = await leaseA.acquire('core-a', { pollMs: 20 });
  const lostA: Error[] = [];
  leaseA.onLost((error) => lostA.push(error));
  const logA = await PgCommandLog.lead(server.url, epochA);
  await logA.append([committed(1), committed(2)]);

  // A's lease session is ended by the server (as when its connection dies): A is told.
  await query('SELECT pg_terminate_backend($1)', [await leaseA.backendPid()]);
  await waitFor(() => lostA.length === 1, 5_000);

  const leaseB = new LeaderLease(server.url, fast);
  const epochB = await leaseB.acquire('core-b', { pollMs: 20 });
  assert.equal(epochB, epochA + 1);
  const logB = await PgCommandLog.lead(server.url, epochB);

  // A did not stop in time (paused, say) and appends: refused, naming both epochs, nothing inserted.
  await assert.rejects(logA.append([committed(3)]), (error: unknown) => error instanceof FencedError && error.epoch === epochA && error.currentEpoch === epochB);
  assert.deepEqual(await query('SELECT seq, epoch FROM command_log ORDER BY seq'), [{ seq: '1', epoch: '1' }, { seq: '2', epoch: '1' }]);

  await logB.append([committed(3)]);
  assert.deepEqual(await query('SELECT seq, epoch FROM command_log ORDER BY seq'), [{ seq: '1', epoch: '1' }, { seq: '2', epoch: '1' }, { seq: '3', epoch: '2' }]);
  const replayed = [];
  for await (const record of logB.replay(1)) replayed.push(record.seq);
  assert.deepEqual(replayed, [1, 2, 3]);
  await Promise.all([logA.close(), logB.close(), leaseA.release(), leaseB.release()]);
});

test('an append in flight and the next leader\'s bump serialize: the new head includes the old leader\'s batch', async () => {
  const leaseA = new LeaderLease(server.url, fast);
  const epochA = await leaseA.acquire('core-a', { pollMs: 20 });
  await leaseA.release(); // A loses the lock but still believes it leads

  // A's append, driven by hand: the epoch checked under FOR SHARE, its row inserted, not yet committed.
  const appendA = new pg.Client({ connectionString: server.url });
  await appendA.connect();
  await appendA.query('BEGIN');
  const { rows } = await appendA.query<{ epoch: string }>('SELECT epoch FROM core_leader WHERE id = 1 FOR SHARE');
  assert.equal(Number(rows[0]!.epoch), epochA);
  const bytes = encodeCommand(deposit(1));
  const ts = committed(1).ts;
  await appendA.query('INSERT INTO command_log (seq, epoch, ts, command_id, command, chain) VALUES (1, $1, $2, NULL, $3, $4)',
    [epochA, ts, bytes, link(GENESIS, 1, ts, bytes)]);

  // B takes the lock; its bump waits for A's transaction.
  const leaseB = new LeaderLease(server.url, fast);
  let bumped = false;
  const acquired = leaseB.acquire('core-b', { pollMs: 20 }).then((epoch) => {
    bumped = true;
    return epoch;
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(bumped, false, 'the bump waits while an append holds core_leader FOR SHARE');
  await appendA.query('COMMIT');
  const epochB = await acquired;
  assert.equal(epochB, epochA + 1);

  // B reads the head after its bump: A's batch is in it, and B's first seq follows it.
  const logB = await PgCommandLog.lead(server.url, epochB);
  await logB.append([committed(2)]);
  const replayed = [];
  for await (const record of logB.replay(1)) replayed.push([record.seq, record.command]);
  assert.deepEqual(replayed, [[1, deposit(1)], [2, deposit(2)]]);
  await Promise.all([appendA.end(), logB.close(), leaseB.release()]);
});
