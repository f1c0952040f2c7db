/**
 * The command log's archive in a real PostgreSQL (test/support/postgres.ts; docs/architecture.md
 * "Distributed mode: archiving the command log"): rows move into checksummed segments in one
 * transaction each, never the rows a kept snapshot needs, never the head row, never rows younger
 * than the id window; every reader (a replay from seq 0, a follower, the snapshot worker) reads
 * through the seam with the chain checked; an altered row is not archived and an altered segment
 * is refused by name; a leader after an archive goes on from the head; retention deletes only old
 * segments no kept snapshot needs.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { Exchange } from '../../core/exchange.ts';
import { LogFollower } from '../../runtime/log-follower.ts';
import { PostgresServer } from '../../../test/support/postgres.ts';
import { writeCommandLog } from '../../../test/support/command-log.ts';
import { RichVenue, richConfig } from '../../../test/support/rich-venue.ts';
import { encodeCommand } from '../store/command-codec.ts';
import { stateHash } from '../store/snapshot-files.ts';
import { stateImage } from '../store/snapshot-store.ts';
import { archiveCommandLog, pruneArchive } from './command-log-archive.ts';
import { PgCommandLog } from './command-log.ts';
import { migratePostgres, postgresPool } from './database.ts';
import { PgSnapshotStore } from './snapshot-store.ts';
import { PgSnapshotter } from './snapshotter.ts';

const journal = new RichVenue(7).run(900).journal;
const fresh = () => new Exchange(richConfig());
const hashOf = (exchange: Exchange) => stateHash(stateImage(exchange, fresh));
const fullHash = (() => {
  const core = fresh();
  for (const c of journal) core.execute(c.command, c.ts);
  return hashOf(core);
})();

let server: PostgresServer;
let pool: pg.Pool;

before(async () => {
  server = await PostgresServer.start();
  await migratePostgres(server.url);
  pool = postgresPool(server.url, 4);
  await writeCommandLog(server.url, 1, journal, 300);
});
after(async () => {
  await pool?.end();
  await server?.destroy();
});

const count = async (sql: string, values: unknown[] = []) => Number((await pool.query<{ n: string }>(sql, values)).rows[0]!.n);
const tsOf = (seq: number) => journal[seq - 1]!.ts;

/** A fresh core following the log from seq 0 to its head, as a role with no usable snapshot starts. */
async function replayFromGenesis(): Promise<{ exchange: Exchange; applied: number }> {
  const exchange = fresh();
  const log = PgCommandLog.follow(server.url, { pageSize: 97 });
  const follower = new LogFollower(exchange, log, { pageSize: 97, pollMs: 60_000, onFatal: (e) => assert.fail(e) });
  try {
    await follower.start();
    await follower.stop();
    return { exchange, applied: follower.appliedSeq };
  } finally {
    await log.close();
  }
}

test('rows move into segments, each one transaction, only before the oldest kept snapshot and the id window', async () => {
  // The id window first: only rows older than the cutoff's time leave.
  const cutoffSeq = 150;
  const first = await archiveCommandLog(pool, 400, tsOf(cutoffSeq), 64);
  assert.ok(first.archived > 0 && first.archived < cutoffSeq, `archived ${first.archived}`);
  const minSeq = await count('SELECT min(seq) AS n FROM command_log');
  assert.equal(minSeq, first.archived + 1, 'every seq in exactly one of the two tables');
  assert.ok(tsOf(first.archived) < tsOf(cutoffSeq), 'no record at or after the id window left');
  // Then up to the snapshot: seq 400 and later stay.
  const second = await archiveCommandLog(pool, 400, Number.MAX_SAFE_INTEGER, 64);
  assert.equal(first.archived + second.archived, 399);
  assert.equal(await count('SELECT min(seq) AS n FROM command_log'), 400);
  assert.equal(await count('SELECT count(*) AS n FROM command_log_segments'), first.segments.length + second.segments.length);
  const { rows } = await pool.query<{ first_seq: string; last_seq: string }>('SELECT first_seq, last_seq FROM command_log_segments ORDER BY first_seq');
  rows.forEach((r, i) => assert.equal(Number(r.first_seq), i === 0 ? 1 : Number(rows[i - 1]!.last_seq) + 1, 'contiguous segments'));
  const bytes = await count('SELECT sum(length(segment)) AS n FROM command_log_segments');
  const rowBytes = journal.slice(0, 399).reduce((n, c) => n + encodeCommand(c.command).length, 0);
  assert.ok(bytes < rowBytes, `the segments (${bytes} B) are smaller than the commands alone (${rowBytes} B)`);
  assert.equal((await archiveCommandLog(pool, 400, Number.MAX_SAFE_INTEGER)).archived, 0, 'nothing left to do');
});

test('a replay from seq 0 reads through the archive into the state of a full replay', async () => {
  const { exchange, applied } = await replayFromGenesis();
  assert.equal(applied, journal.length);
  assert.equal(hashOf(exchange), fullHash);
  const log = PgCommandLog.follow(server.url, { pageSize: 50 });
  try {
    const seqs: number[] = [];
    for await (const record of log.replay(120)) seqs.push(record.seq);
    assert.deepEqual(seqs, journal.map((_, i) => i + 1).slice(119), 'a replay from an archived seq, its link read from the archive');
  } finally {
    await log.close();
  }
});

test('an altered segment is refused by name; an altered row is not archived', async () => {
  const { rows: [seg] } = await pool.query<{ first_seq: string; segment: Buffer }>('SELECT first_seq, segment FROM command_log_segments ORDER BY first_seq LIMIT 1');
  const altered = Buffer.from(seg!.segment);
  altered[altered.length - 5]! ^= 1;
  await pool.query('UPDATE command_log_segments SET segment = $1 WHERE first_seq = $2', [altered, seg!.first_seq]);
  await assert.rejects(replayFromGenesis(), /command_log_segments segment-000000000001-\d+\.seg refused: body checksum/);
  await pool.query('UPDATE command_log_segments SET segment = $1 WHERE first_seq = $2', [seg!.segment, seg!.first_seq]);

  await pool.query('UPDATE command_log SET ts = ts + 1 WHERE seq = 450');
  await assert.rejects(archiveCommandLog(pool, 600, Number.MAX_SAFE_INTEGER), /the record at seq 450 does not match its chain link/);
  assert.equal(await count('SELECT min(seq) AS n FROM command_log'), 400, 'nothing moved: the transaction rolled back');
  await pool.query('UPDATE command_log SET ts = ts - 1 WHERE seq = 450');
});

test('the head row stays, and a leader after the archive goes on from it', async () => {
  const head = journal.length;
  await archiveCommandLog(pool, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  assert.equal(await count('SELECT count(*) AS n FROM command_log'), 1);
  assert.equal(await count('SELECT min(seq) AS n FROM command_log'), head);
  await pool.query('UPDATE core_leader SET epoch = 2 WHERE id = 1');
  const log = await PgCommandLog.lead(server.url, 2);
  try {
    const deposit = { commandId: 'after-archive', ts: tsOf(head) + 1, command: journal.find((c) => c.command.type === 'chain.deposit_observed')!.command, events: [] };
    await log.append([{ ...deposit, command: { ...deposit.command, txHash: `0x${'ab'.repeat(32)}` } as typeof deposit.command }]);
    assert.equal(await log.head(), head + 1);
  } finally {
    await log.close();
  }
  const { applied } = await replayFromGenesis();
  assert.equal(applied, head + 1);

  // Rows removed by hand (the head among them): a leader refuses to start from seq 0.
  await pool.query('UPDATE core_leader SET epoch = 3 WHERE id = 1');
  await pool.query('CREATE TABLE saved_log AS SELECT * FROM command_log');
  await pool.query('DELETE FROM command_log');
  await assert.rejects(PgCommandLog.lead(server.url, 3), /command_log is empty but its archive ends at seq \d+: refusing to lead from seq 0/);
  await pool.query('INSERT INTO command_log SELECT * FROM saved_log');
  await pool.query('DROP TABLE saved_log');
});

test('retention deletes old segments only before the oldest kept snapshot', async () => {
  const segments = await count('SELECT count(*) AS n FROM command_log_segments');
  assert.equal(await pruneArchive(pool, 1, tsOf(200), 1), 0, 'none ends before seq 1');
  const deleted = await pruneArchive(pool, 1, Number.MAX_SAFE_INTEGER, 300);
  const left = await count('SELECT min(first_seq) AS n FROM command_log_segments');
  assert.ok(deleted > 0 && deleted < segments, `${deleted} of ${segments}`);
  assert.ok(left <= 300, 'the segment holding seq 300 stays');
  await assert.rejects(replayFromGenesis(), /no record at seq 1/, 'a replay from seq 0 is no longer possible, and says so');
});

test('the projector\'s snapshot worker archives what its kept snapshots cover', { timeout: 60_000 }, async () => {
  // A log of its own: the same venue in a fresh database.
  await pool.query('TRUNCATE command_log, command_log_segments, core_snapshots');
  await writeCommandLog(server.url, 4, journal, 300);
  let target = 500;
  const snapshotter = new PgSnapshotter({
    databaseUrl: server.url, core: { depositConfirmations: 1 }, keep: 2, segmentRetentionMs: 0, archiveAfterMs: 0, everyCommands: 1e9, everyMs: 3_600_000,
    target: () => target, newestSeq: 0, log: () => undefined,
  });
  snapshotter.start();
  try {
    const first = await snapshotter.snapshotNow();
    // Before seq 500 and before its time (the window is 0 here): records sharing seq 500's time stay.
    const expected = journal.slice(0, 499).filter((c) => c.ts < tsOf(500)).length;
    assert.ok(first.ok && first.written && first.archived === expected && expected > 400, JSON.stringify(first));
    target = journal.length;
    const second = await snapshotter.snapshotNow();
    assert.ok(second.ok && second.written && second.archived === 499 - expected, `the rest before seq 500, still kept as a snapshot: ${JSON.stringify(second)}`);
    assert.equal(await count('SELECT min(seq) AS n FROM command_log'), 500);
  } finally {
    await snapshotter.stop();
  }
  assert.deepEqual(await new PgSnapshotStore(pool).seqs(), [journal.length, 500]);
  await pool.query('DELETE FROM core_snapshots');
  const { exchange, applied } = await replayFromGenesis();
  assert.equal(applied, journal.length);
  assert.equal(hashOf(exchange), fullHash, 'without a snapshot, the archive and the log give the full state');
});
