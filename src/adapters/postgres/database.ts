/**
 * The distributed mode's PostgreSQL: a connection pool from DATABASE_URL and the schema, migrated
 * at start by node-pg-migrate from the SQL files in migrations/postgres/ (one file per change,
 * applied in name order, each once, recorded in its `pgmigrations` table). Every process of the
 * deployment migrates at start; node-pg-migrate holds an advisory lock while it does, so processes
 * starting together wait for one another rather than race (docs/deploy.md).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runner } from 'node-pg-migrate';

/**
 * The migrations folder: found from this module's place upward, as the same code runs from src/
 * under tsx and bundled into dist/ by `npm start` (scripts/build.mjs).
 */
export function migrationsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'migrations', 'postgres');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('migrations/postgres not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

/** Brings the database's schema up to date (waits while another process migrates it). */
export async function migratePostgres(url: string): Promise<void> {
  await runner({
    databaseUrl: url,
    dir: migrationsDir(),
    direction: 'up',
    migrationsTable: 'pgmigrations',
    advisoryLockMode: 'wait',
    singleTransaction: true,
    log: () => undefined,
  });
}

/**
 * A pool on `url`. bigint columns (seqs, fixed-point amounts) come back as strings from pg; the
 * adapters convert them where they read them, never through a float.
 */
export function postgresPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 5_000 });
  // An idle client's error (the server restarted) must not crash the process; the next query fails loudly.
  pool.on('error', () => undefined);
  return pool;
}
