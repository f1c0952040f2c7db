/**
 * The distributed mode's core snapshots in PostgreSQL (migrations/postgres/4000_snapshots.sql,
 * docs/architecture.md "Distributed mode: snapshots"): every role (a core, a gateway, the
 * projector) restores the newest usable one into its fresh core and follows the command log from
 * its seq and chain link, instead of replaying the log from seq 0.
 *
 * A row holds the bytes of an embedded snapshot file (adapters/store/snapshot-files.ts: header with
 * its CRC, state layout, SHA-256 of the image, gzipped image) and is checked the same way before it
 * is used; it must also agree with the command log's chain link at its seq (a snapshot of another
 * log, after a database was rebuilt, is refused). A refused snapshot is reported with the reason
 * and the one before it tried, down to a full replay. One that passes its checks but cannot be
 * restored stops the start, as in the embedded mode (the core may be half filled): deleting the
 * row makes the next start use the one before it.
 */
import pg from 'pg';
import type { Exchange } from '../../core/exchange.ts';
import { decodeSnapshot, encodeSnapshot, SnapshotRefused, type SnapshotHeader } from '../store/snapshot-files.ts';
import { LAYOUT_FINGERPRINT, refusal, restoreChecked } from '../store/snapshot-store.ts';

/** Where a restored core stands: the follower goes on from `seq` and `link` (runtime/log-follower.ts FollowFrom). */
export interface RestoredSnapshot {
  readonly seq: number;
  readonly link: number;
  readonly ts: number;
  readonly stateHash: string;
  readonly ms: number;
}

export class PgSnapshotStore {
  constructor(private readonly pool: pg.Pool, private readonly report: (message: string) => void = () => undefined) {}

  /**
   * Writes the state image of a core at `seq` (its log link `link`, its time `ts`) and keeps the
   * newest `keep`. Two writers of the same seq write it once (the first one's row stays): returns
   * the header, or null when the row was already there.
   */
  async write(seq: number, ts: number, link: number, image: Uint8Array, keep: number, layout = LAYOUT_FINGERPRINT): Promise<SnapshotHeader | null> {
    const { header, parts } = encodeSnapshot(seq, ts, link, layout, image, Date.now());
    const { rowCount } = await this.pool.query(
      `INSERT INTO core_snapshots (seq, chain, ts, layout, state_hash, snapshot) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (seq) DO NOTHING`,
      [seq, link, ts, layout, header.stateHash, Buffer.concat(parts)],
    );
    await this.prune(keep);
    return rowCount === 1 ? header : null;
  }

  /** Deletes all but the newest `keep` snapshots; returns the seqs deleted. */
  async prune(keep: number): Promise<number[]> {
    const { rows } = await this.pool.query<{ seq: string }>(
      'DELETE FROM core_snapshots WHERE seq NOT IN (SELECT seq FROM core_snapshots ORDER BY seq DESC LIMIT $1) RETURNING seq',
      [keep],
    );
    return rows.map((r) => Number(r.seq)).sort((a, b) => b - a);
  }

  /** Seqs of the snapshots held, newest first (not yet checked). */
  async seqs(): Promise<number[]> {
    const { rows } = await this.pool.query<{ seq: string }>('SELECT seq FROM core_snapshots ORDER BY seq DESC');
    return rows.map((r) => Number(r.seq));
  }

  /**
   * Restores the newest snapshot at or below `maxSeq` that passes every check into `exchange` (a
   * freshly built core), or returns null and leaves it untouched (full replay). Each refused one is
   * reported with the reason.
   */
  async restoreNewest(exchange: Exchange, maxSeq: number): Promise<RestoredSnapshot | null> {
    for (const seq of await this.seqs()) {
      if (seq > maxSeq) {
        this.report(`snapshot at seq ${seq} is past seq ${maxSeq}, where this process must start at the latest; not used`);
        continue;
      }
      const started = performance.now();
      let header: SnapshotHeader;
      let image: Uint8Array;
      try {
        ({ header, image } = await this.readChecked(seq));
      } catch (error) {
        this.report(refusal(seq, error));
        continue;
      }
      restoreChecked(exchange, seq, image, `DELETE FROM core_snapshots WHERE seq = ${seq} to start from the one before it`);
      return { seq, link: header.link, ts: header.ts, stateHash: header.stateHash, ms: performance.now() - started };
    }
    return null;
  }

  /** One snapshot, read and checked: its bytes as the file store checks them, and its link against the log's. */
  private async readChecked(seq: number): Promise<{ header: SnapshotHeader; image: Uint8Array }> {
    const { rows } = await this.pool.query<{ snapshot: Buffer; chain: string; logged: string | null }>(
      'SELECT s.snapshot, s.chain, l.chain AS logged FROM core_snapshots s LEFT JOIN command_log l ON l.seq = s.seq WHERE s.seq = $1',
      [seq],
    );
    const row = rows[0];
    if (row === undefined) throw new SnapshotRefused(seq, 'deleted while it was read (another writer pruned it)');
    const snapshot = decodeSnapshot(row.snapshot, seq, LAYOUT_FINGERPRINT);
    if (snapshot.header.link !== Number(row.chain)) throw new SnapshotRefused(seq, `its row's chain link ${row.chain} differs from its header's ${snapshot.header.link}`);
    if (row.logged === null) throw new SnapshotRefused(seq, 'the command log holds no record at its seq (a snapshot of another log)');
    if (Number(row.logged) !== snapshot.header.link) throw new SnapshotRefused(seq, `its chain link ${snapshot.header.link} differs from the command log's ${row.logged} at its seq (a snapshot of another log)`);
    return snapshot;
  }
}

/**
 * The command ids of the log's records in (`throughSeq` - `count`, `throughSeq`], oldest first: a
 * core restored from a snapshot at `throughSeq` remembers them as a full replay would have, so a
 * command retried to it after a takeover is answered from the log, not appended twice.
 */
export async function commandIdsThrough(pool: pg.Pool, throughSeq: number, count: number): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ command_id: string; seq: string }>(
    'SELECT command_id, seq FROM command_log WHERE seq > $1 AND seq <= $2 AND command_id IS NOT NULL ORDER BY seq',
    [throughSeq - count, throughSeq],
  );
  return new Map(rows.map((r) => [r.command_id, Number(r.seq)]));
}

/** What a role starts from: the restored snapshot (null: the log from seq 0) and the ids it covers. */
export interface StartingPoint {
  readonly restored: RestoredSnapshot | null;
  /** The command ids of the last `commandIds` seqs the snapshot covers (empty when not asked for). */
  readonly commandIds: Map<string, number>;
}

/**
 * At a role's start: restores the newest usable snapshot at or below `maxSeq` into `exchange` (a
 * fresh core) on a pool of its own, reporting each refused one; a core also asks for the command
 * ids the snapshot covers (`commandIds`: how many seqs back).
 */
export async function restoreAtStart(databaseUrl: string, exchange: Exchange, options: { readonly maxSeq?: number; readonly commandIds?: number; readonly report: (message: string) => void }): Promise<StartingPoint> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1, connectionTimeoutMillis: 5_000, application_name: 'exchange-snapshot-restore' });
  pool.on('error', () => undefined);
  try {
    const restored = await new PgSnapshotStore(pool, options.report).restoreNewest(exchange, options.maxSeq ?? Number.MAX_SAFE_INTEGER);
    const commandIds = restored !== null && (options.commandIds ?? 0) > 0 ? await commandIdsThrough(pool, restored.seq, options.commandIds!) : new Map<string, number>();
    return { restored, commandIds };
  } finally {
    await pool.end();
  }
}
