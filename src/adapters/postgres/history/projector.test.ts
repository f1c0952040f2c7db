/**
 * PgHistoryProjector writes each seq exactly once, on a real PostgreSQL server. A seeded venue's
 * commands (test/support/venue-events.ts) are projected once into a reference database; then, in
 * databases of their own on the same server: a batch that does not start just after the
 * watermark is refused and writes nothing; the commit notifies the new watermark; and two
 * projectors racing over the same commands (each a follower: read the watermark, project from
 * there, go on when refused) leave exactly the reference's rows. Crashes: projector-crash.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { postgresPool } from '../database.ts';
import { PostgresServer } from '../../../../test/support/postgres.ts';
import { databaseUrl, dumpHistory, followHistory, HISTORY_TABLES, historyDatabase } from '../../../../test/support/pg-history.ts';
import { venueCommands } from '../../../../test/support/venue-events.ts';
import { HISTORY_WATERMARK_CHANNEL, HistoryOutOfOrder, PgHistoryProjector, type ProjectedCommand } from './projector.ts';

let server: PostgresServer;
const pools: pg.Pool[] = [];
let items: ProjectedCommand[];
let reference: Record<string, unknown[]>;

async function database(name: string): Promise<pg.Pool> {
  const pool = await historyDatabase(server, name);
  pools.push(pool);
  return pool;
}

before(async () => {
  const { commands } = venueCommands(11, 600);
  items = commands.map((c, i) => ({ seq: i + 1, ts: c.ts, events: c.events }));
  server = await PostgresServer.start();
  const pool = await database('reference');
  await followHistory(new PgHistoryProjector(pool), items, [16]);
  reference = await dumpHistory(pool);
});

after(async () => {
  for (const pool of pools) await pool.end().catch(() => undefined);
  await server?.destroy();
});

test('the reference holds every kind of row', () => {
  assert.equal((reference.history_watermark![0] as { projected_seq: string }).projected_seq, String(items.length));
  for (const table of Object.keys(HISTORY_TABLES)) assert.ok(reference[table]!.length > 0, `${table} is empty`);
});

test('a batch that does not start just after the watermark is refused and writes nothing', async () => {
  const pool = await database('refusals');
  const projector = new PgHistoryProjector(pool);
  assert.equal(await projector.projectedSeq(), 0);
  await projector.project(items.slice(0, 40));
  const before = await dumpHistory(pool);
  for (const from of [1, 40, 42, 200]) {
    await assert.rejects(projector.project(items.slice(from - 1, from + 9)), (err: unknown) => {
      assert.ok(err instanceof HistoryOutOfOrder, String(err));
      assert.equal(err.firstSeq, from);
      assert.equal(err.projectedSeq, 40);
      return true;
    });
  }
  await assert.rejects(projector.project([items[40]!, items[42]!]), /not contiguous/);
  assert.deepEqual(await dumpHistory(pool), before);
  await projector.project([]);
  await followHistory(projector, items, [7, 100]);
  assert.deepEqual(await dumpHistory(pool), reference);
});

test('the commit notifies the new watermark', async () => {
  const pool = await database('notified');
  const listener = await pool.connect();
  try {
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.query(`LISTEN ${HISTORY_WATERMARK_CHANNEL}`);
    const projector = new PgHistoryProjector(pool);
    await projector.project(items.slice(0, 3));
    await projector.project(items.slice(3, 10));
    for (let i = 0; i < 100 && heard.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(heard, ['3', '10']);
  } finally {
    listener.release();
  }
});

test('two projectors racing over the same commands write each seq once', async () => {
  const pool = await database('race');
  // Two pools: as two processes, each with connections of its own (one commits without waiting for its WAL flush).
  const other = postgresPool(databaseUrl(server, 'race'));
  pools.push(other);
  const [a, b] = await Promise.all([
    followHistory(new PgHistoryProjector(pool), items, [3, 11, 1, 40]),
    followHistory(new PgHistoryProjector(other, { synchronousCommit: false }), items, [5, 2, 29, 8]),
  ]);
  assert.ok(a.written > 0 && b.written > 0, `both wrote: ${JSON.stringify({ a, b })}`);
  assert.ok(a.refused + b.refused > 0, `they collided: ${JSON.stringify({ a, b })}`);
  assert.deepEqual(await dumpHistory(pool), reference);
});
