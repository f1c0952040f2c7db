/**
 * Core snapshots in a real deployment (test/support/cluster.ts; docs/architecture.md "Distributed
 * mode: snapshots"): after thousands of commands the projector has written snapshots (the newest
 * SNAPSHOT_KEEP kept); a gateway, a standby core and the projector restarted each start from the
 * newest usable one and replay only the log after it, and read the same state; a corrupted newest
 * row is refused and the one before it used; a standby started from a snapshot takes the lead
 * and still answers a command retried from before its snapshot from the log, not twice.
 * Timing bounds are generous: the machine running the tests is shared.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { CommandBusClient } from '../../src/adapters/nats/command-bus.ts';
import { closeNats, connectNats, type NatsConnection } from '../../src/adapters/nats/connection.ts';
import type { Command } from '../../src/core/commands.ts';
import { fx } from '../../src/core/money.ts';
import { Cluster, health } from '../support/cluster.ts';
import { call, freePort, signIn, waitFor, type Trader } from '../support/harness.ts';
import { ServiceProcess } from '../support/service-process.ts';

const COMMANDS = 4_000;
const EVERY = 1_000;

let cluster: Cluster;
let db: pg.Client;
let nats: NatsConnection;
let bus: CommandBusClient;
let trader: Trader;
const acked = new Map<string, number>();
/** Deposits sent so far, each of 3 and each under its own id. */
let sent = 0;

const deposit = (i: number): Command => ({
  type: 'chain.deposit_observed',
  txHash: `0x${(0x5000_0000 + i).toString(16).padStart(64, '0')}`,
  account: trader.address.toLowerCase(),
  amount: fx('3'),
  confirmations: 1,
});

interface StartFigures {
  readonly snapshotSeq: number | null;
  readonly replayed: number;
  readonly seq?: number;
}

before(async () => {
  cluster = await Cluster.start({ cores: 2, gateways: 1, env: { SNAPSHOT_EVERY_COMMANDS: String(EVERY), SNAPSHOT_KEEP: '2', DEPOSIT_CONFIRMATIONS: '1' } });
  db = new pg.Client(cluster.postgres.url);
  await db.connect();
  nats = await connectNats(cluster.nats.url, 'test-snapshots');
  bus = new CommandBusClient(nats, { deadlineMs: 15_000 });
  trader = await signIn(cluster.gateways[0]!.url);
});

after(async () => {
  await closeNats(nats).catch(() => undefined);
  await db?.end().catch(() => undefined);
  await cluster?.stop();
});

async function send(count: number, concurrency = 32): Promise<void> {
  const from = sent;
  sent += count;
  let next = from;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < from + count) {
      const i = next++;
      const reply = await bus.submit(`snapshot-load-${i}`, deposit(i));
      assert.ok(reply.ok, JSON.stringify(reply));
      acked.set(`snapshot-load-${i}`, reply.seq);
    }
  }));
}

async function snapshotSeqs(): Promise<number[]> {
  return (await db.query<{ seq: string }>('SELECT seq FROM core_snapshots ORDER BY seq DESC')).rows.map((r) => Number(r.seq));
}

async function head(): Promise<number> {
  return Number((await db.query<{ head: string }>('SELECT coalesce(max(seq), 0) AS head FROM command_log')).rows[0]!.head);
}

/** A gateway started on the first one's folder with the info log on, and the figures its start logged. */
async function restartGateway(): Promise<{ proc: ServiceProcess; start: StartFigures; output: string }> {
  for (const g of cluster.gateways) await g.kill();
  const proc = new ServiceProcess(join(cluster.root, 'gateway-0'), await freePort(), {
    ROLE: 'gateway', NATS_URL: cluster.nats.url, DATABASE_URL: cluster.postgres.url, SIMULATED_CHAIN_FILE: join(cluster.root, 'chain.sqlite'),
    SNAPSHOT_EVERY_COMMANDS: String(EVERY), SNAPSHOT_KEEP: '2', DEPOSIT_CONFIRMATIONS: '1', LOG_LEVEL: 'info',
  });
  await proc.start();
  cluster.gateways.splice(0, cluster.gateways.length, proc);
  // The line is written just after /health turns 200: wait until it has been read.
  await waitFor(() => proc.output().includes('caught up with the command log'), 10_000, 20).catch(() => undefined);
  const output = proc.output();
  const line = output.split('\n').find((l) => l.includes('caught up with the command log'));
  assert.ok(line !== undefined, `the gateway logged its start:\n${proc.tail()}`);
  return { proc, start: JSON.parse(line) as StartFigures, output };
}

async function walletBalance(base: string): Promise<string> {
  const reply = await call(base, '/wallet/balance', { token: trader.token });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.walletBalance as string;
}

test('every role restarts from the newest snapshot and replays only the log after it', { timeout: 300_000 }, async () => {
  await send(COMMANDS);
  // The projector writes one every EVERY commands of its watermark, and keeps the newest two.
  await waitFor(async () => ((await snapshotSeqs())[0] ?? 0) >= (await head()) - EVERY, 60_000, 200);
  // The schedule samples the watermark each second, so a loaded machine may project the whole
  // load between two samples and write one snapshot for it: then EVERY more commands make the next one due.
  for (let round = 0; (await snapshotSeqs()).length < 2; round++) {
    assert.ok(round < 3, `a second snapshot after ${round} more rounds of ${EVERY} commands (${(await snapshotSeqs()).join(', ')})`);
    const newestBefore = (await snapshotSeqs())[0] ?? 0;
    await send(EVERY);
    await waitFor(async () => ((await snapshotSeqs())[0] ?? 0) > newestBefore, 60_000, 200);
  }
  const loadedHead = await head();
  await waitFor(async () => (await health(cluster.projector!)).projectedSeq! >= loadedHead, 30_000, 100);
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const kept = await snapshotSeqs();
  assert.equal(kept.length, 2, `SNAPSHOT_KEEP=2 rows kept (${kept.join(', ')})`);
  const projectorHealth = (await health(cluster.projector!)) as unknown as { snapshotSeq: number };
  assert.ok(projectorHealth.snapshotSeq >= kept[0]!, 'the projector reports the newest snapshot it wrote');
  const expected = String(3 * sent);
  assert.equal(await walletBalance(cluster.gateways[0]!.url), expected);

  // A gateway restarted: the newest snapshot, then only the commands after it.
  const newest = (await snapshotSeqs())[0]!;
  const gateway = await restartGateway();
  assert.ok(gateway.start.snapshotSeq !== null && gateway.start.snapshotSeq >= newest, `started from the newest snapshot (${JSON.stringify(gateway.start)})`);
  assert.equal(gateway.start.replayed, gateway.start.seq! - gateway.start.snapshotSeq!);
  assert.ok(gateway.start.replayed < loadedHead / 2, `replayed ${gateway.start.replayed} of ${gateway.start.seq} commands`);
  assert.equal(await walletBalance(gateway.proc.url), expected, 'the restarted gateway reads the same state');

  // The newest row corrupted: refused, the one before it used.
  const [top, older] = await snapshotSeqs();
  await db.query('UPDATE core_snapshots SET snapshot = set_byte(snapshot, length(snapshot) - 40, get_byte(snapshot, length(snapshot) - 40) # 1) WHERE seq = $1', [top]);
  const fallback = await restartGateway();
  assert.equal(fallback.start.snapshotSeq, older, JSON.stringify(fallback.start));
  assert.match(fallback.output, new RegExp(`snapshot at seq ${top} refused`));
  assert.equal(await walletBalance(fallback.proc.url), expected);
  await db.query('DELETE FROM core_snapshots WHERE seq = $1', [top]);

  // The standby restarted from a snapshot, then the leader killed: the standby leads.
  const leader = (await cluster.leader())!;
  const standbyAt = cluster.cores.findIndex((c) => c !== leader);
  await cluster.cores[standbyAt]!.kill();
  const standby = await cluster.role('core', `core-${standbyAt}`);
  cluster.cores[standbyAt] = standby;
  const standbyStart = ((await health(standby)) as unknown as { start: StartFigures }).start;
  assert.equal(standbyStart.snapshotSeq, older, JSON.stringify(standbyStart));
  // Only the log after that snapshot: its head then, minus the snapshot's seq (ticks move the head meanwhile).
  const headNow = await head();
  assert.ok(standbyStart.replayed >= loadedHead - older! && standbyStart.replayed <= headNow - older!, JSON.stringify({ standbyStart, loadedHead, headNow }));
  await leader.kill();
  await waitFor(async () => (await health(standby)).leading === true, 20_000, 50);
  // A command retried from before the snapshot the new leader started from: answered from the log, not applied again.
  const early = 'snapshot-load-5';
  const retried = await bus.submit(early, deposit(5));
  assert.ok(retried.ok, JSON.stringify(retried));
  const logged = await db.query<{ seq: string }>('SELECT seq FROM command_log WHERE command_id = $1', [early]);
  assert.equal(logged.rows.length, 1);
  assert.equal(retried.seq, Number(logged.rows[0]!.seq), 'answered with the seq the log holds it at (the leader did not append it again, which would fail-stop it)');
  await send(200);
  assert.equal(await walletBalance(fallback.proc.url), String(3 * sent), 'every deposit credited once, through the new leader');

  // The projector restarted: from a snapshot at or below its watermark, and it projects every seq after it.
  await cluster.projector!.kill();
  cluster.projector = await cluster.role('projector', 'projector');
  const projected = (await health(cluster.projector)) as unknown as { projectedSeq: number; start: StartFigures };
  assert.ok(projected.start.snapshotSeq !== null && projected.start.snapshotSeq <= projected.projectedSeq, JSON.stringify(projected));
  const finalHead = await head();
  await waitFor(async () => (await health(cluster.projector!)).projectedSeq! >= finalHead, 30_000, 100);
  const hash = (i: number) => (deposit(i) as { txHash: string }).txHash;
  const deposits = await db.query<{ n: string }>('SELECT count(DISTINCT tx_hash) AS n FROM ledger_entries WHERE tx_hash BETWEEN $1 AND $2', [hash(0), hash(sent - 1)]);
  assert.equal(Number(deposits.rows[0]!.n), sent, 'the history holds every deposit once');
});
