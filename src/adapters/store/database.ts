/**
 * Opens the service's SQLite database (better-sqlite3) with the settings durability depends on:
 * WAL journaling and `synchronous=FULL`, so a committed transaction survives a process kill and
 * a power loss. Schema migrations are plain SQL, applied in order, each in its own transaction,
 * and recorded in `schema_migrations`.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type Db = Database.Database;

export interface Migration {
  readonly id: string;
  readonly sql: string;
}

/**
 * `FULL` (the default) fsyncs every commit: the exchange's own data, which must survive a power
 * loss. `NORMAL` (WAL) still survives a process kill, since a committed transaction is in the WAL
 * file before the call returns, and fsyncs only at checkpoints: for stores that stand in for
 * systems outside the exchange (the simulated chain), so they never stall the event loop.
 */
export type Synchronous = 'FULL' | 'NORMAL';

export function openDatabase(path: string, synchronous: Synchronous = 'FULL'): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)');
  return db;
}

export function migrate(db: Db, migrations: readonly Migration[]): void {
  const applied = new Set(
    (db.prepare('SELECT id FROM schema_migrations').all() as { id: string }[]).map((r) => r.id),
  );
  for (const m of migrations) {
    if (applied.has(m.id)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)').run(m.id, Date.now());
    })();
  }
}
