/**
 * Helpers of the PostgreSQL history tests (src/adapters/postgres/history/*.test.ts): databases of
 * their own on one test server, a dump of every history row to compare two projections by, and a
 * follower that projects from the watermark on, as the projector role does.
 */
import type pg from 'pg';
import { migratePostgres, postgresPool } from '../../src/adapters/postgres/database.ts';
import { HistoryOutOfOrder, type PgHistoryProjector, type ProjectedCommand } from '../../src/adapters/postgres/history/projector.ts';
import type { PostgresServer } from './postgres.ts';

/** Every history table with its key (the order a dump lists its rows in). */
export const HISTORY_TABLES: Readonly<Record<string, string>> = {
  history_watermark: 'id',
  ledger_entries: 'id',
  ledger_balances: 'account_key',
  settlements: 'id',
  orders: 'id',
  trades: 'account_id, engine, trade_id',
  market_trades: 'market_id, trade_id',
  candles_1m: 'market_id, t',
  prices_1m: 'market_id, t',
  dvol_1m: 'underlying, t',
};

/** The URL of database `name` on the server. */
export function databaseUrl(server: PostgresServer, name: string): string {
  return server.url.replace(/\/postgres$/, `/${name}`);
}

/** A new database on the server, migrated; returns a pool on it (the caller ends it). */
export async function historyDatabase(server: PostgresServer, name: string): Promise<pg.Pool> {
  const admin = postgresPool(server.url, 1);
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  await migratePostgres(databaseUrl(server, name));
  return postgresPool(databaseUrl(server, name));
}

/** Every history row, table by table, in key order. */
export async function dumpHistory(pool: pg.Pool): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const [table, key] of Object.entries(HISTORY_TABLES)) out[table] = (await pool.query(`SELECT * FROM ${table} ORDER BY ${key}`)).rows;
  return out;
}

/**
 * A follower over `items` (item i has seq i + 1): reads the watermark, projects the next batch
 * from there (sizes taken in turn), until every item up to `until` is projected; a batch another
 * projector wrote first is refused (HistoryOutOfOrder) and the follower reads the watermark again.
 */
export async function followHistory(
  projector: PgHistoryProjector, items: readonly ProjectedCommand[], sizes: readonly number[], until = items.length,
): Promise<{ written: number; refused: number }> {
  let written = 0;
  let refused = 0;
  for (let k = 0; ; k++) {
    const at = await projector.projectedSeq();
    if (at >= until) return { written, refused };
    try {
      await projector.project(items.slice(at, Math.min(until, at + sizes[k % sizes.length]!)));
      written++;
    } catch (err) {
      if (!(err instanceof HistoryOutOfOrder)) throw err;
      refused++;
    }
  }
}
