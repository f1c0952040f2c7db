/**
 * kill -9 of the PostgreSQL server under PgHistoryProjector, between batches and in the middle of
 * one: what was committed stays, a projection against the dead server fails at once (no hang), an
 * open batch commits whole or not at all, and the follower, resumed from the watermark on the same
 * pool once the server is back, ends with exactly the rows of a projection that never crashed
 * (nothing lost, nothing doubled).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { PostgresServer } from '../../../../test/support/postgres.ts';
import { dumpHistory, followHistory, historyDatabase } from '../../../../test/support/pg-history.ts';
import { venueCommands } from '../../../../test/support/venue-events.ts';
import { HistoryOutOfOrder, PgHistoryProjector, type ProjectedCommand } from './projector.ts';

let server: PostgresServer;
const pools: pg.Pool[] = [];
let items: ProjectedCommand[];

before(async () => {
  const { commands } = venueCommands(11, 600);
  items = commands.map((c, i) => ({ seq: i + 1, ts: c.ts, events: c.events }));
  server = await PostgresServer.start();
});

after(async () => {
  for (const pool of pools) await pool.end().catch(() => undefined);
  await server?.destroy();
});

/** Retries `work` while PostgreSQL is coming back (connections refused or reset). */
async function retrying<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (err instanceof HistoryOutOfOrder || attempt === 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

test('kill -9 of PostgreSQL between batches and during one: resumed from the watermark, nothing lost or doubled', async () => {
  const pool = await historyDatabase(server, 'crash');
  pools.push(pool);
  const projector = new PgHistoryProjector(pool);
  const third = Math.floor(items.length / 3);

  // Between batches: what was committed stays, and a projection against the dead server fails.
  await followHistory(projector, items, [9], third);
  await server.kill();
  await assert.rejects(projector.project(items.slice(third, third + 5)));
  await server.restart();
  assert.equal(await retrying(() => projector.projectedSeq()), third);

  // During a batch: it commits whole or not at all, and the watermark says which.
  await retrying(() => followHistory(projector, items, [13], 2 * third));
  const inFlight = projector.project(items.slice(2 * third, 2 * third + 60)).then(() => 'committed', (err: Error) => err.message);
  await server.kill();
  const outcome = await inFlight;
  await server.restart();
  const resumedAt = await retrying(() => projector.projectedSeq());
  assert.ok(resumedAt === 2 * third || (resumedAt === 2 * third + 60 && outcome === 'committed'), `resumed at ${resumedAt} after ${outcome}`);
  await retrying(() => followHistory(projector, items, [21, 4]));

  // The same commands projected once, without a crash, into a database of their own.
  const reference = await historyDatabase(server, 'reference');
  pools.push(reference);
  await followHistory(new PgHistoryProjector(reference), items, [16]);
  assert.deepEqual(await dumpHistory(pool), await dumpHistory(reference));
});
