/**
 * Two ROLE=core processes on a real PostgreSQL and a real NATS server: one leads, the other follows
 * the log as a hot standby. Commands arrive over the NATS command bus from many concurrent senders
 * (as gateways send them, each under its own id, retried with that id); the leader is killed with
 * SIGKILL under that load. The standby must lead within 5 s, every command acknowledged before or
 * after the kill must be in the log exactly once, nothing a sender was not told may be counted
 * twice, and the log replayed from the start must give a ledger that sums to zero with the
 * acknowledged deposits credited.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { CommandBusClient } from '../../src/adapters/nats/command-bus.ts';
import { closeNats, connectNats } from '../../src/adapters/nats/connection.ts';
import { PgCommandLog } from '../../src/adapters/postgres/command-log.ts';
import { coreConfig } from '../../src/config/core.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange } from '../../src/core/exchange.ts';
import { fx } from '../../src/core/money.ts';
import { LogFollower } from '../../src/runtime/log-follower.ts';
import { freePort, waitFor } from '../support/harness.ts';
import { NatsServer } from '../support/nats.ts';
import { PostgresServer } from '../support/postgres.ts';
import { ServiceProcess } from '../support/service-process.ts';

let postgres: PostgresServer;
let nats: NatsServer;
let root: string;

before(async () => {
  [postgres, nats] = await Promise.all([PostgresServer.start(), NatsServer.start()]);
  root = mkdtempSync(join(tmpdir(), 'exchange-cluster-'));
});

after(async () => {
  await Promise.all([postgres?.destroy(), nats?.destroy()]);
  rmSync(root, { recursive: true, force: true });
});

async function core(name: string): Promise<ServiceProcess> {
  const proc = new ServiceProcess(join(root, name), await freePort(), {
    ROLE: 'core',
    NATS_URL: nats.url,
    DATABASE_URL: postgres.url,
    SIMULATED_CHAIN_FILE: join(root, 'chain.sqlite'),
    DEPOSIT_CONFIRMATIONS: '1',
    LOG_LEVEL: 'info',
  });
  await proc.start();
  return proc;
}

async function health(proc: ServiceProcess): Promise<{ leading: boolean; appliedSeq: number; epoch: number | null }> {
  const reply = await fetch(`${proc.url}/health`, { signal: AbortSignal.timeout(1_000) });
  return (await reply.json()) as { leading: boolean; appliedSeq: number; epoch: number | null };
}

const TRADER = `0x${'7'.repeat(40)}`;
let deposits = 0;
const deposit = (): Command => ({
  type: 'chain.deposit_observed',
  txHash: `0x${(++deposits).toString(16).padStart(64, '0')}`,
  account: TRADER,
  amount: fx('3'),
  confirmations: 1,
});

test('kill -9 of the leader under load: the standby leads within 5 s; every acknowledged command is applied once', { timeout: 120_000 }, async () => {
  const first = await core('core-a');
  await waitFor(async () => (await health(first)).leading, 15_000, 50);
  const second = await core('core-b');
  assert.equal((await health(second)).leading, false, 'the second core stands by');

  const connection = await connectNats(nats.url, 'test-gateway');
  const bus = new CommandBusClient(connection, { deadlineMs: 8_000 });
  const acked = new Map<string, number>();
  const unavailable: string[] = [];
  let stop = false;
  let longest = 0;
  const sender = async () => {
    while (!stop) {
      const id = randomUUID();
      const sent = performance.now();
      const reply = await bus.submit(id, deposit());
      longest = Math.max(longest, performance.now() - sent);
      if (reply.ok) acked.set(id, reply.seq);
      else if (reply.code === 'UNAVAILABLE') unavailable.push(id);
      else assert.fail(`rejected: ${reply.code} ${reply.message}`);
    }
  };
  const senders = Array.from({ length: 8 }, sender);
  await waitFor(() => acked.size >= 300, 20_000, 20);

  const killedAt = performance.now();
  const ackedBeforeKill = acked.size;
  await first.kill();
  await waitFor(async () => (await health(second)).leading, 10_000, 20);
  const takeoverMs = performance.now() - killedAt;
  await waitFor(() => acked.size >= ackedBeforeKill + 300, 20_000, 20);
  stop = true;
  await Promise.all(senders);
  await closeNats(connection);

  assert.ok(takeoverMs < 5_000, `the standby led ${Math.round(takeoverMs)} ms after the kill`);
  assert.ok(longest < 9_000, `no request hung (longest ${Math.round(longest)} ms)`);

  // Every acknowledged id is in the log once, at or before the seq it was acknowledged with.
  const db = new pg.Client(postgres.url);
  await db.connect();
  const { rows } = await db.query<{ command_id: string; seq: string }>('SELECT command_id, seq FROM command_log WHERE command_id IS NOT NULL');
  const logged = new Map(rows.map((r) => [r.command_id, Number(r.seq)]));
  for (const [id, seq] of acked) {
    const at = logged.get(id);
    assert.ok(at !== undefined, `acknowledged command ${id} is in the log`);
    assert.ok(at <= seq, `command ${id} logged at ${at}, acknowledged at ${seq}`);
  }
  const epochs = await db.query<{ epoch: string }>('SELECT DISTINCT epoch FROM command_log ORDER BY epoch');
  await db.end();
  assert.ok(epochs.rows.length >= 2, 'both leaders appended');

  // Replayed from the start, the log gives a balanced ledger holding every logged deposit once.
  const exchange = new Exchange(coreConfig({ depositConfirmations: 1 }));
  const log = PgCommandLog.follow(postgres.url);
  const replica = new LogFollower(exchange, log, { pageSize: 5_000, pollMs: 1_000, onFatal: (e) => assert.fail(e) });
  await replica.catchUp();
  await log.close();
  const credited = exchange.walletBalances(TRADER).walletBalance;
  assert.equal(credited, fx('3') * BigInt(logged.size), 'each logged deposit credited once');
  assert.ok(logged.size >= acked.size && logged.size <= acked.size + unavailable.length + 8, 'only sent commands are logged');
  for (const [asset, total] of exchange.ledger.totalsByAsset()) assert.equal(total, 0n, `the ledger sums to zero in ${asset}`);

  // The killed core comes back as a standby and follows the new leader.
  await first.start();
  const back = await health(first);
  assert.equal(back.leading, false);
  const leaderSeq = (await health(second)).appliedSeq;
  await waitFor(async () => (await health(first)).appliedSeq >= leaderSeq, 10_000, 50);
  console.log(`takeover ${Math.round(takeoverMs)} ms; acknowledged ${acked.size}, unavailable ${unavailable.length}, logged ${logged.size}`);
  await Promise.all([first.kill(), second.kill()]);
});
