/**
 * Archived journal segments and the offline audit (docs/architecture.md "Segments and retention",
 * "Audit from genesis"), on a real SQLite journal of the rich venue's commands: records archived
 * into segments and trimmed from the database read back exactly, from the start or from a
 * snapshot's seq; a damaged or missing segment, or a chain that does not continue, stops the
 * reading naming where; the audit replays from genesis and verifies every snapshot and the
 * history, reports a snapshot whose state differs, and audits from the oldest snapshot once the
 * journal's start was deleted by the retention.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { openDatabase } from '../../src/adapters/store/database.ts';
import { journalFrom } from '../../src/adapters/store/journal-reader.ts';
import { archiveThrough, JournalSegments, pruneSegments } from '../../src/adapters/store/journal-segments.ts';
import { Journal } from '../../src/adapters/store/journal.ts';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import { historyProjectors } from '../../src/adapters/store/projections/index.ts';
import { LAYOUT_FINGERPRINT, SnapshotStore, stateImage } from '../../src/adapters/store/snapshot-store.ts';
import { Exchange } from '../../src/core/exchange.ts';
import { audit } from '../../src/audit.ts';
import { RichVenue, richConfig } from '../support/rich-venue.ts';

const root = mkdtempSync(join(tmpdir(), 'segments-'));
after(() => rmSync(root, { recursive: true, force: true }));
const venue = new RichVenue(5).run(400);
const commands = venue.journal;
const core = { depositConfirmations: 1 };

/** A data directory whose journal holds the venue's commands with their history, and snapshots at `snapshotAt`. */
function dataDir(name: string, snapshotAt: readonly number[]): { dir: string; journal: Journal; close(): void } {
  const dir = join(root, name);
  const db = openDatabase(join(dir, 'exchange.sqlite'));
  const journal = new Journal(db, historyProjectors(db));
  const exchange = new Exchange(richConfig());
  const store = new SnapshotStore(dir);
  for (let i = 0; i < commands.length;) {
    const batch: CommittedCommand[] = [];
    const end = Math.min(commands.length, snapshotAt.find((s) => s > i) ?? commands.length, i + 500);
    for (; i < end; i++) {
      const c = commands[i]!;
      const outcome = exchange.execute(c.command, c.ts);
      assert.ok(outcome.ok);
      batch.push({ ts: c.ts, command: c.command, events: outcome.events });
    }
    journal.project(batch, journal.append(batch));
    if (snapshotAt.includes(i)) {
      const link = [...journal.replay(i)][0]!.chain;
      store.files.write(i, exchange.now(), link, LAYOUT_FINGERPRINT, stateImage(exchange, () => new Exchange(richConfig())), Date.now());
    }
  }
  return { dir, journal, close: () => db.close() };
}

function trimAll(journal: Journal, segments: JournalSegments): void {
  while (journal.trimArchived(segments.archivedThrough(), 100) > 0);
}

describe('archived segments', () => {
  test('records archived and trimmed read back exactly, from the start and from any seq', () => {
    const d = dataDir('roundtrip', []);
    const segments = new JournalSegments(d.dir);
    const before = [...journal(d)];
    archiveThrough(d.journal, segments, 700, 250);
    assert.deepEqual(segments.list().map((f) => [f.firstSeq, f.lastSeq]), [[1, 250], [251, 500], [501, 700]]);
    trimAll(d.journal, segments);
    assert.equal(d.journal.firstSeq(), 701);
    assert.deepEqual([...journal(d)], before);
    const from = [...journalFrom(d.journal, segments, 400, before[398]!.chain)];
    assert.deepEqual(from, before.slice(399));
    assert.throws(() => [...journalFrom(d.journal, segments, 400, 12345)], /does not match the link the snapshot recorded/);
    d.close();
  });

  test('the newest row is never trimmed, so the journal keeps its head', () => {
    const d = dataDir('head', []);
    const segments = new JournalSegments(d.dir);
    archiveThrough(d.journal, segments, d.journal.head());
    trimAll(d.journal, segments);
    assert.equal(d.journal.firstSeq(), d.journal.head());
    assert.equal([...journal(d)].length, commands.length);
    d.close();
  });

  test('a damaged, missing or foreign segment stops the reading, naming it', () => {
    const d = dataDir('damaged', []);
    const segments = new JournalSegments(d.dir);
    archiveThrough(d.journal, segments, 600, 300);
    trimAll(d.journal, segments);
    const [first, second] = segments.list();
    const path = join(segments.dir, second!.name);
    const bytes = readFileSync(path);
    bytes[bytes.length - 10] = bytes[bytes.length - 10]! ^ 0xff;
    writeFileSync(path, bytes);
    assert.throws(() => [...journal(d)], new RegExp(`${second!.name} refused: body checksum`));
    renameSync(path, `${path}.away`);
    assert.throws(() => [...journal(d)], /the journal record at seq 301 is neither in the database .* nor in an archived segment/);
    // In its place, the same records linked on from another chain: the segment does not continue the first.
    const other = dataDir('other', []);
    new JournalSegments(d.dir).write(other.journal.storedRows(301, 600), 999);
    rmSync(`${path}.away`);
    assert.throws(() => [...journal(d)], new RegExp(`${second!.name} does not continue the chain`));
    assert.ok(first !== undefined);
    d.close();
    other.close();
  });

  test('the retention deletes only old segments that no kept snapshot needs', () => {
    const d = dataDir('retention', []);
    const segments = new JournalSegments(d.dir);
    archiveThrough(d.journal, segments, 900, 300);
    const last = commands[commands.length - 1]!.ts;
    assert.deepEqual(pruneSegments(segments, 1, last, 600).map((f) => f.lastSeq), [300, 600]);
    assert.deepEqual(segments.list().map((f) => f.firstSeq), [601]);
    d.close();
  });
});

describe('the audit', () => {
  test('replays from genesis, verifying the snapshots, the history and what a restart builds', () => {
    const d = dataDir('audit', [300, 800]);
    const segments = new JournalSegments(d.dir);
    archiveThrough(d.journal, segments, 800);
    trimAll(d.journal, segments);
    d.close();
    const lines: string[] = [];
    const report = audit(d.dir, core, (l) => lines.push(l));
    assert.ok(report.ok, lines.join('\n'));
    assert.equal(report.replayed, commands.length);
    assert.match(lines.join('\n'), /snapshot at seq 300: .* matches the replay[\s\S]*snapshot at seq 800: .* matches[\s\S]*the snapshot at seq 800 and the \d+ command\(s\) after it .* gives the same state/);
  });

  test('reports a snapshot whose state is not what the journal gives', () => {
    const d = dataDir('audit-bad', [300, 800]);
    d.close();
    // A well-formed snapshot (its checksums hold) of another state at seq 300.
    const store = new SnapshotStore(d.dir);
    const header = store.files.header(300)!;
    store.files.write(300, header.ts, header.link, LAYOUT_FINGERPRINT, stateImage(new Exchange(richConfig()), () => new Exchange(richConfig())), Date.now());
    const lines: string[] = [];
    assert.equal(audit(d.dir, core, (l) => lines.push(l)).ok, false);
    assert.match(lines.join('\n'), /FAIL {2}snapshot at seq 300: .* differs from the replay/);
  });

  test('after the retention deleted the journal\'s start, audits from the oldest snapshot', () => {
    const d = dataDir('audit-retention', [300, 800]);
    const segments = new JournalSegments(d.dir);
    archiveThrough(d.journal, segments, 800, 300);
    trimAll(d.journal, segments);
    d.close();
    pruneSegments(segments, 1, commands[commands.length - 1]!.ts, 300);
    const lines: string[] = [];
    const report = audit(d.dir, core, (l) => lines.push(l));
    assert.ok(report.ok, lines.join('\n'));
    assert.match(lines.join('\n'), /journal before seq 301 deleted by retention: audited from the snapshot at seq 300/);
    assert.equal(report.replayed, commands.length - 300);
  });
});

function journal(d: { dir: string; journal: Journal }) {
  return journalFrom(d.journal, new JournalSegments(d.dir), 1);
}
