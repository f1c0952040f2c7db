/**
 * Core snapshots in a real PostgreSQL (test/support/postgres.ts; docs/architecture.md "Distributed
 * mode: snapshots"): on the rich venue (test/support/rich-venue.ts) written into the command log, a
 * snapshot restored into a fresh core and followed by the log after it gives the state image of a
 * full replay (the state hash, as test/snapshot/snapshot-replay.test.ts compares); a corrupted row
 * or one that disagrees with the log's chain is refused and the one before it used, down to a full
 * replay; the newest SNAPSHOT_KEEP are kept; two writers of one seq write it once; and the worker
 * (snapshotter.ts) writes what a replay of the log gives.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { Exchange } from '../../core/exchange.ts';
import { LogFollower } from '../../runtime/log-follower.ts';
import { writeCommandLog } from '../../../test/support/command-log.ts';
import { PostgresServer } from '../../../test/support/postgres.ts';
import { RichVenue, richConfig, type TimedCommand } from '../../../test/support/rich-venue.ts';
import { stateHash } from '../store/snapshot-files.ts';
import { stateImage } from '../store/snapshot-store.ts';
import { PgCommandLog } from './command-log.ts';
import { migratePostgres, postgresPool } from './database.ts';
import { commandIdsThrough, PgSnapshotStore } from './snapshot-store.ts';
import { PgSnapshotter } from './snapshotter.ts';

const venue = new RichVenue(5).run(600);
const journal: readonly TimedCommand[] = venue.journal;
const fresh = () => new Exchange(richConfig());
const hashOf = (exchange: Exchange) => stateHash(stateImage(exchange, fresh));

function replay(into: Exchange, commands: readonly TimedCommand[]): Exchange {
  for (const c of commands) assert.ok(into.execute(c.command, c.ts).ok, `replay diverged at ${c.command.type}`);
  return into;
}

let server: PostgresServer;
let pool: pg.Pool;
let fullHash: string;

before(async () => {
  server = await PostgresServer.start();
  await migratePostgres(server.url);
  pool = postgresPool(server.url, 4);
  await writeCommandLog(server.url, 1, journal);
  fullHash = hashOf(replay(fresh(), journal));
});
after(async () => {
  await pool?.end();
  await server?.destroy();
});

/** The log's chain link at `seq`. */
async function linkAt(seq: number): Promise<number> {
  const { rows } = await pool.query<{ chain: string }>('SELECT chain FROM command_log WHERE seq = $1', [seq]);
  return Number(rows[0]!.chain);
}

/** Writes the state after the first `seq` commands as a snapshot. */
async function writeAt(store: PgSnapshotStore, seq: number, keep = 10): Promise<void> {
  const core = replay(fresh(), journal.slice(0, seq));
  await store.write(seq, core.now(), await linkAt(seq), stateImage(core, fresh), keep);
}

/** A fresh core restored from the newest usable snapshot, then following the log to its head, as a role starts. */
async function startLikeARole(store: PgSnapshotStore): Promise<{ exchange: Exchange; from: number | null; replayed: number }> {
  const exchange = fresh();
  const restored = await store.restoreNewest(exchange, journal.length);
  const log = PgCommandLog.follow(server.url);
  const follower = new LogFollower(exchange, log, { pageSize: 500, pollMs: 60_000, onFatal: (e) => assert.fail(e) }, restored ?? undefined);
  let replayed = 0;
  follower.subscribe(() => replayed++);
  await follower.start();
  await follower.stop();
  await log.close();
  assert.equal(follower.appliedSeq, journal.length);
  return { exchange, from: restored?.seq ?? null, replayed };
}

describe('PostgreSQL snapshots', () => {
  test('a snapshot plus the log after it gives the state of a full replay', async () => {
    await pool.query('TRUNCATE core_snapshots');
    const store = new PgSnapshotStore(pool);
    for (const share of [0.25, 0.6]) {
      const cut = Math.round(journal.length * share);
      await writeAt(store, cut);
      const { exchange, from, replayed } = await startLikeARole(store);
      assert.equal(from, cut);
      assert.equal(replayed, journal.length - cut, 'only the commands after the snapshot are replayed');
      assert.equal(hashOf(exchange), fullHash);
    }
  });

  test('a corrupted or foreign row is refused and the one before it used, down to a full replay', async () => {
    await pool.query('TRUNCATE core_snapshots');
    const refusals: string[] = [];
    const store = new PgSnapshotStore(pool, (m) => refusals.push(m));
    await writeAt(store, 100);
    await writeAt(store, 200);
    await writeAt(store, 300);
    // A flipped byte in the body of the newest.
    await pool.query(`UPDATE core_snapshots SET snapshot = set_byte(snapshot, length(snapshot) - 40, get_byte(snapshot, length(snapshot) - 40) # 1) WHERE seq = 300`);
    // The next one claims another log's chain link (header and row agree; the log does not).
    const core = replay(fresh(), journal.slice(0, 200));
    await pool.query('DELETE FROM core_snapshots WHERE seq = 200');
    await store.write(200, core.now(), ((await linkAt(200)) ^ 1) >>> 0, stateImage(core, fresh), 10);

    const first = await startLikeARole(store);
    assert.equal(first.from, 100);
    assert.equal(hashOf(first.exchange), fullHash);
    assert.match(refusals.join('\n'), /snapshot at seq 300 refused: (state hash does not match|body does not decompress)/);
    assert.match(refusals.join('\n'), /snapshot at seq 200 refused: its chain link \d+ differs from the command log's/);

    refusals.length = 0;
    await pool.query(`UPDATE core_snapshots SET snapshot = substring(snapshot FROM 1 FOR length(snapshot) - 10) WHERE seq = 100`);
    const none = await startLikeARole(store);
    assert.equal(none.from, null, 'no usable snapshot: a full replay');
    assert.equal(none.replayed, journal.length);
    assert.equal(hashOf(none.exchange), fullHash);
    assert.match(refusals.join('\n'), /snapshot at seq 100 refused: body is .* bytes, the header says/);
  });

  test('a snapshot past the seq a process may start at is not used', async () => {
    await pool.query('TRUNCATE core_snapshots');
    const refusals: string[] = [];
    const store = new PgSnapshotStore(pool, (m) => refusals.push(m));
    await writeAt(store, 100);
    await writeAt(store, 300);
    assert.equal((await store.restoreNewest(fresh(), 250))?.seq, 100);
    assert.match(refusals.join('\n'), /snapshot at seq 300 is past seq 250/);
  });

  test('the newest SNAPSHOT_KEEP are kept, and a seq written twice is written once', async () => {
    await pool.query('TRUNCATE core_snapshots');
    const store = new PgSnapshotStore(pool);
    for (const seq of [50, 100, 150, 200, 250]) await writeAt(store, seq, 3);
    assert.deepEqual(await store.seqs(), [250, 200, 150]);
    const core = replay(fresh(), journal.slice(0, 250));
    assert.equal(await store.write(250, core.now(), await linkAt(250), stateImage(core, fresh), 3), null, 'the first writer\'s row stays');
  });

  test('a restored core remembers the command ids a full replay would', async () => {
    const ids = await commandIdsThrough(pool, 300, 100);
    assert.equal(ids.size, 100);
    assert.equal(ids.get('id-300'), 300);
    assert.equal(ids.get('id-201'), 201);
    assert.equal(ids.get('id-200'), undefined);
  });

  test('the snapshot worker writes, off the event loop, the state a replay of the log gives', { timeout: 60_000 }, async () => {
    await pool.query('TRUNCATE core_snapshots');
    const store = new PgSnapshotStore(pool);
    await writeAt(store, 150);
    let target = 400;
    const logged: string[] = [];
    const snapshotter = new PgSnapshotter({
      databaseUrl: server.url, core: { depositConfirmations: 1 }, keep: 2, segmentRetentionMs: 0, everyCommands: 1e9, everyMs: 3_600_000,
      target: () => target, newestSeq: 150, log: (_level, message) => logged.push(message),
    });
    snapshotter.start();
    try {
      const first = await snapshotter.snapshotNow();
      assert.ok(first.ok && first.written, JSON.stringify(first));
      assert.equal(first.seq, 400);
      assert.equal(first.replayed, 250, 'the worker restored the snapshot at 150 and replayed the log after it');
      assert.equal(first.stateHash, hashOf(replay(fresh(), journal.slice(0, 400))));
      target = journal.length;
      const second = await snapshotter.snapshotNow();
      assert.ok(second.ok && second.written);
      assert.equal(second.seq, journal.length);
      assert.equal(second.stateHash, fullHash);
      assert.deepEqual(await store.seqs(), [journal.length, 400], 'SNAPSHOT_KEEP=2');
      const again = await snapshotter.snapshotNow();
      assert.ok(again.ok && !again.written, 'nothing new: nothing written');
      assert.equal(snapshotter.newestSeq, journal.length);
      assert.match(logged.join('\n'), new RegExp(`snapshot written at seq ${journal.length}`));
    } finally {
      await snapshotter.stop();
    }
  });
});
