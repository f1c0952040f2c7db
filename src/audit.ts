/**
 * The offline audit (`npm run audit`, docs/architecture.md "Audit from genesis"): replays every
 * archived journal segment and the live journal from the first command into a fresh core, on a
 * read-only connection (the service may keep running), and checks on the way:
 *   - every segment's checksums and the journal's chain across segments and the database;
 *   - at each kept snapshot's seq, that the replayed state has the snapshot's state hash;
 *   - at the history's watermark, that every recorded ledger balance equals the replayed one;
 *   - at the journal's head, that the newest snapshot plus the journal after it (what a restart
 *     builds) gives the same state as the replay from genesis.
 * It prints what it checked and exits 1 if anything differs. Settings come from the environment
 * (and .env), as for `npm start`: the core must be configured as the service that wrote the data.
 *
 *   npm run audit                  # DATA_DIR or ./data
 *   npm run audit -- --data-dir /var/lib/exchange
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { journalFrom } from './adapters/store/journal-reader.ts';
import { JournalSegments } from './adapters/store/journal-segments.ts';
import { Journal } from './adapters/store/journal.ts';
import { historyProjectors } from './adapters/store/projections/index.ts';
import { stateHash } from './adapters/store/snapshot-files.ts';
import { SnapshotStore, stateImage } from './adapters/store/snapshot-store.ts';
import { fileURLToPath } from 'node:url';
import { coreConfig, coreSettings } from './config/core.ts';
import { loadSettings } from './config/env.ts';
import { Exchange } from './core/exchange.ts';

interface Finding {
  readonly ok: boolean;
  readonly what: string;
}

export interface AuditReport {
  readonly findings: readonly Finding[];
  readonly replayed: number;
  readonly ok: boolean;
}

export function audit(dataDir: string, core: Parameters<typeof coreConfig>[0], say: (line: string) => void): AuditReport {
  const findings: Finding[] = [];
  const note = (ok: boolean, what: string) => {
    findings.push({ ok, what });
    say(`${ok ? 'ok  ' : 'FAIL'}  ${what}`);
  };
  const db = new Database(join(dataDir, 'exchange.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const projectors = historyProjectors(db);
    const journal = new Journal(db, projectors, { readOnly: true });
    const segments = new JournalSegments(dataDir);
    const store = new SnapshotStore(dataDir);
    const config = coreConfig(core);
    const fresh = () => new Exchange(config);
    const head = journal.head();
    const projected = journal.projectedSeq();
    const files = segments.list();
    const snapshots = store.files.seqs().filter((s) => s <= head).sort((a, b) => a - b);
    say(`audit of ${dataDir}: journal seq 1..${head} (${files.length} archived segment(s) through seq ${segments.archivedThrough()}, the database from seq ${journal.firstSeq()}), ${snapshots.length} snapshot(s), history at seq ${projected}`);
    const exchange = fresh();
    const firstKept = files[0]?.firstSeq ?? journal.firstSeq();
    let startAfter = 0;
    let startLink: number | undefined;
    if (firstKept > 1) {
      // The journal's start was deleted by the segments' retention: audit from the oldest snapshot it goes on from.
      const base = snapshots.find((s) => s >= firstKept - 1);
      const restored = base === undefined ? null : store.restoreNewest(exchange, base);
      if (restored === null) {
        note(false, `journal: records before seq ${firstKept} were deleted and no snapshot at or after seq ${firstKept - 1} restores`);
        return { findings, replayed: 0, ok: false };
      }
      startAfter = restored.seq;
      startLink = restored.link;
      note(true, `journal before seq ${firstKept} deleted by retention: audited from the snapshot at seq ${startAfter} (its checksums verified)`);
    }
    const started = performance.now();
    let replayed = 0;
    let nextSnapshot = snapshots.findIndex((s) => s > startAfter);
    if (nextSnapshot < 0) nextSnapshot = snapshots.length;
    const checkSnapshot = (seq: number) => {
      const header = store.files.header(seq);
      const hash = stateHash(stateImage(exchange, fresh));
      note(header !== null && header.stateHash === hash, `snapshot at seq ${seq}: state hash ${hash.slice(0, 16)}… ${header?.stateHash === hash ? 'matches the replay' : `differs from the replay (${header?.stateHash.slice(0, 16) ?? 'unreadable'}…)`}`);
    };
    const kept = projectors[0].keptBalancesDisagreeWithLines();
    note(kept.length === 0, kept.length === 0
      ? 'history: every kept balance is its account\'s last recorded line (what the restart\'s check reads)'
      : `history: ${kept.length} kept balance(s) disagree with the lines: ${kept.slice(0, 5).join('; ')}`);
    const checkHistory = () => {
      const differences = journal.replayDifferences(exchange.ledger);
      note(differences.length === 0, differences.length === 0
        ? `history at seq ${projected}: every recorded ledger balance equals the replayed one`
        : `history at seq ${projected}: ${differences.length} balance(s) differ: ${differences.slice(0, 5).join('; ')}`);
    };
    if (projected === startAfter) checkHistory();
    try {
      for (const record of journalFrom(journal, segments, startAfter + 1, startLink)) {
        if (record.seq > head) break; // the running service goes on appending: the audit stops where it began
        const outcome = exchange.execute(record.command, record.ts);
        if (!outcome.ok) throw new Error(`the replay refused the command at seq ${record.seq}: ${outcome.code} ${outcome.message}`);
        replayed++;
        while (nextSnapshot < snapshots.length && snapshots[nextSnapshot] === record.seq) checkSnapshot(snapshots[nextSnapshot++]!);
        if (record.seq === projected) checkHistory();
      }
      const seconds = (performance.now() - started) / 1000;
      note(replayed === head - startAfter, `journal: ${replayed} commands replayed from ${startAfter === 0 ? 'genesis' : `seq ${startAfter + 1}`} in ${seconds.toFixed(1)} s (${Math.round(replayed / Math.max(seconds, 1e-3)).toLocaleString('en-US')} commands/s), every segment and record checksum and the chain verified`);
    } catch (error) {
      note(false, `journal: ${(error as Error).message} (after ${replayed} commands)`);
      return { findings, replayed, ok: false };
    }
    const finalHash = stateHash(stateImage(exchange, fresh));
    const restart = fresh();
    const from = store.restoreNewest(restart, Math.min(head, projected));
    let tail = 0;
    for (const record of journalFrom(journal, segments, (from?.seq ?? 0) + 1, from?.link)) {
      if (record.seq > head) break;
      restart.execute(record.command, record.ts);
      tail++;
    }
    const restartHash = stateHash(stateImage(restart, fresh));
    const origin = from === null ? 'a replay without a snapshot' : `the snapshot at seq ${from.seq} and the ${tail} command(s) after it`;
    note(restartHash === finalHash, `final state at seq ${head}: hash ${finalHash.slice(0, 16)}…; ${origin} (what a restart builds) ${restartHash === finalHash ? 'gives the same state' : `gives another (${restartHash.slice(0, 16)}…)`}`);
    return { findings, replayed, ok: findings.every((f) => f.ok) };
  } finally {
    db.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'data-dir': { type: 'string' } } });
  const settings = loadSettings();
  const report = audit(values['data-dir'] ?? settings.dataDir, coreSettings(settings), (line) => console.log(line));
  console.log(report.ok ? 'audit passed' : 'audit FAILED');
  process.exit(report.ok ? 0 : 1);
}
