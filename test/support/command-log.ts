/**
 * A command log in a real PostgreSQL written as a leader writes it (test/support/postgres.ts,
 * src/adapters/postgres/command-log.ts): the lease's epoch bumped to `epoch`, then `commands`
 * appended in batches, each under the id `id-<seq>`, for the tests of what reads the log.
 */
import pg from 'pg';
import { PgCommandLog } from '../../src/adapters/postgres/command-log.ts';
import type { TimedCommand } from './rich-venue.ts';

export async function writeCommandLog(url: string, epoch: number, commands: readonly TimedCommand[], batch = 250): Promise<void> {
  const db = new pg.Client(url);
  await db.connect();
  try {
    await db.query('UPDATE core_leader SET epoch = $1 WHERE id = 1', [epoch]);
  } finally {
    await db.end();
  }
  const log = await PgCommandLog.lead(url, epoch);
  try {
    for (let i = 0; i < commands.length; i += batch) {
      await log.append(commands.slice(i, i + batch).map((c, j) => ({ commandId: `id-${i + j + 1}`, ts: c.ts, command: c.command, events: [] })));
    }
  } finally {
    await log.close();
  }
}
