/**
 * Snapshots give exactly the state a replay gives (docs/architecture.md "Snapshots"): on a venue
 * that exercises every kind of state (test/support/rich-venue.ts), the state restored from a
 * snapshot taken at several points of its journal, with the rest of the journal replayed after it,
 * has the same state image (hence the same hash) as a replay of the whole journal; and a snapshot
 * file that is truncated, altered or written under another state layout is refused by its checks.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Exchange } from '../../src/core/exchange.ts';
import { LAYOUT_FINGERPRINT, SnapshotStore, stateImage } from '../../src/adapters/store/snapshot-store.ts';
import { stateHash } from '../../src/adapters/store/snapshot-files.ts';
import { RichVenue, richConfig, type TimedCommand } from '../support/rich-venue.ts';

const dir = mkdtempSync(join(tmpdir(), 'snapshot-replay-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const venue = new RichVenue(3).run(900);
const journal = venue.journal;
const fresh = () => new Exchange(richConfig());

function replay(into: Exchange, commands: readonly TimedCommand[]): Exchange {
  for (const c of commands) {
    const outcome = into.execute(c.command, c.ts);
    assert.ok(outcome.ok, `replay diverged at ${c.command.type}`);
  }
  return into;
}

const fullHash = stateHash(stateImage(replay(fresh(), journal), fresh));

describe('a snapshot and the journal after it give the state of a full replay', () => {
  for (const share of [0, 0.1, 0.5, 0.9, 1]) {
    test(`snapshot after ${Math.round(share * 100)} % of ${journal.length} commands`, () => {
      const cut = Math.round(journal.length * share);
      const store = new SnapshotStore(join(dir, `cut-${cut}`));
      const before = replay(fresh(), journal.slice(0, cut));
      store.files.write(cut, before.now(), 0, LAYOUT_FINGERPRINT, stateImage(before, fresh), Date.now());

      const restored = fresh();
      assert.equal(store.restoreNewest(restored, journal.length)?.seq, cut);
      replay(restored, journal.slice(cut));
      assert.equal(stateHash(stateImage(restored, fresh)), fullHash);
    });
  }

  test('the restored core answers reads as the replayed one does', () => {
    const cut = Math.round(journal.length / 2);
    const store = new SnapshotStore(join(dir, 'reads'));
    const before = replay(fresh(), journal.slice(0, cut));
    store.files.write(cut, before.now(), 0, LAYOUT_FINGERPRINT, stateImage(before, fresh), Date.now());
    const restored = fresh();
    store.restoreNewest(restored, journal.length);
    replay(restored, journal.slice(cut));
    const full = replay(fresh(), journal);
    for (const account of full.accounts.all()) {
      assert.deepEqual(restored.assetBalances(account.address), full.assetBalances(account.address));
      assert.deepEqual(restored.walletBalances(account.address), full.walletBalances(account.address));
    }
    assert.ok(full.accounts.count() > 5);
  });
});

describe('snapshot files are checked before they are used', () => {
  const base = replay(fresh(), journal.slice(0, 300));
  const image = stateImage(base, fresh);

  function storeWith(name: string, seqs: number[]): SnapshotStore {
    const store = new SnapshotStore(join(dir, name), (m) => refusals.push(m));
    for (const seq of seqs) store.files.write(seq, base.now(), 0, LAYOUT_FINGERPRINT, image, Date.now());
    return store;
  }
  const refusals: string[] = [];
  const path = (store: SnapshotStore, seq: number) => join(store.files.dir, `snapshot-${String(seq).padStart(12, '0')}.snap`);

  test('a truncated newest snapshot is refused and the one before it used', () => {
    refusals.length = 0;
    const store = storeWith('truncated', [100, 300]);
    const bytes = readFileSync(path(store, 300));
    writeFileSync(path(store, 300), bytes.subarray(0, bytes.length - 100));
    assert.equal(store.restoreNewest(fresh(), 1000)?.seq, 100);
    assert.match(refusals.join('\n'), /snapshot at seq 300 refused: body is .* bytes, the header says/);
  });

  test('a flipped byte in the body is refused by the state hash or the decompression', () => {
    refusals.length = 0;
    const store = storeWith('flipped', [300]);
    const bytes = readFileSync(path(store, 300));
    bytes[bytes.length - 40] = bytes[bytes.length - 40]! ^ 0x01;
    writeFileSync(path(store, 300), bytes);
    assert.equal(store.restoreNewest(fresh(), 1000), null, 'no usable snapshot: full replay');
    assert.match(refusals.join('\n'), /snapshot at seq 300 refused: (state hash does not match|body does not decompress)/);
  });

  test('a changed header is refused by its checksum', () => {
    refusals.length = 0;
    const store = storeWith('header', [300]);
    const bytes = readFileSync(path(store, 300));
    const at = bytes.indexOf('"seq":300');
    bytes[at + 7] = '4'.charCodeAt(0);
    writeFileSync(path(store, 300), bytes);
    assert.equal(store.restoreNewest(fresh(), 1000), null);
    assert.match(refusals.join('\n'), /header checksum does not match/);
  });

  test('a snapshot written under another state layout is refused', () => {
    refusals.length = 0;
    const store = new SnapshotStore(join(dir, 'layout'), (m) => refusals.push(m));
    store.files.write(300, base.now(), 0, 'f'.repeat(64), image, Date.now());
    assert.equal(store.restoreNewest(fresh(), 1000), null);
    assert.match(refusals.join('\n'), /written by code with another state layout/);
  });

  test('a snapshot past the history the journal holds is not used', () => {
    refusals.length = 0;
    const store = storeWith('ahead', [100, 300]);
    assert.equal(store.restoreNewest(fresh(), 200)?.seq, 100);
    assert.match(refusals.join('\n'), /snapshot at seq 300 is past what the journal's history holds/);
  });

  test('prune keeps the newest snapshots and removes temporary files', () => {
    const store = storeWith('prune', [100, 200, 300, 400]);
    writeFileSync(join(store.files.dir, 'snapshot-000000000500.snap.tmp'), 'partial');
    assert.deepEqual(store.files.prune(2), [200, 100]);
    assert.deepEqual(store.files.seqs(), [400, 300]);
  });
});
