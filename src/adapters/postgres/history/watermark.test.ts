/**
 * PgHistoryWatermark on a real PostgreSQL server: it follows the projector's commits by their
 * notifications, answering from memory (no query per call) while its LISTEN connection is up;
 * after kill -9 of the server it answers from the table (rejecting while the server is away, never
 * going back), and once it has reconnected it answers from memory again, having caught up with the
 * commits it was not notified of.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { migratePostgres, postgresPool } from '../database.ts';
import { waitFor } from '../../../../test/support/harness.ts';
import { PostgresServer } from '../../../../test/support/postgres.ts';
import { PgHistoryProjector, type ProjectedCommand } from './projector.ts';
import { PgHistoryWatermark } from './watermark.ts';

let server: PostgresServer;
let pool: pg.Pool;
let queries = 0;

/** Commands without events: only the watermark moves. */
const commands = (from: number, count: number): ProjectedCommand[] =>
  Array.from({ length: count }, (_, i) => ({ seq: from + i, ts: 0, events: [] }));

before(async () => {
  server = await PostgresServer.start();
  await migratePostgres(server.url);
  pool = postgresPool(server.url);
  // Counts the watermark's reads of the table (the projector has a pool of its own).
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as { query: unknown }).query = (...args: unknown[]) => {
    queries++;
    return query(...args);
  };
});

after(async () => {
  await pool?.end();
  await server?.destroy();
});

test('follows the commits from memory, and from the table while the server is away', async () => {
  const watermark = new PgHistoryWatermark(server.url, pool, { reconnectMs: 100, timeoutMs: 2_000 });
  const writes = postgresPool(server.url, 2);
  const projector = new PgHistoryProjector(writes);
  try {
    await watermark.start();
    assert.equal(await watermark.projectedSeq(), 0);
    const before = queries;
    for (const [from, count] of [[1, 3], [4, 1], [5, 20]] as const) {
      await projector.project(commands(from, count));
      await waitFor(async () => (await watermark.projectedSeq()) === from + count - 1, 2_000, 5);
    }
    assert.equal(queries, before, 'answered from memory while listening');

    await server.kill();
    await waitFor(async () => {
      try {
        await watermark.projectedSeq();
        return false;
      } catch {
        return true; // the connection is known lost: the table is read, and the server is away
      }
    }, 5_000, 20);
    await server.restart();
    await waitFor(async () => (await projector.projectedSeq().catch(() => -1)) === 24, 10_000, 50);
    await projector.project(commands(25, 5));
    await waitFor(async () => (await watermark.projectedSeq().catch(() => 0)) === 29, 10_000, 20);

    // Reconnected: it caught up by reading after LISTEN, then follows notifications again.
    await waitFor(async () => {
      const n = queries;
      await watermark.projectedSeq();
      return queries === n;
    }, 5_000, 50);
    const after = queries;
    await projector.project(commands(30, 2));
    await waitFor(async () => (await watermark.projectedSeq()) === 31, 2_000, 5);
    assert.equal(queries, after, 'answered from memory after reconnecting');
  } finally {
    await watermark.stop();
    await writes.end();
  }
});
