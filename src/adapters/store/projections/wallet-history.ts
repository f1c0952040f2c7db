/**
 * History of money: every ledger line and every settlement record, written from the core's
 * events inside the journal transaction, and the reads that `/wallet/history`,
 * `/wallet/settlements` and the insurance-fund summary serve. Amounts are stored as exact decimal
 * strings, never as SQLite REALs.
 */
import type { ExchangeEvent, SettlementRecord } from '../../../core/events.ts';
import { ledgerKey, type Ledger, type LedgerEntryType } from '../../../core/ledger/ledger.ts';
import { formatDecimal } from '../../../core/money.ts';
import type { SettlementKind, SettlementStatus } from '../../../core/wallet/wallet.ts';
import type { HistoryEntry, SettlementQuery, SystemMovement, WalletHistoryReads } from '../../../gateway/history-port.ts';
import type { Db } from '../database.ts';
import type { Projector } from '../journal.ts';
import { storedDecimal } from '../stored-decimal.ts';
import { replayDifferences } from './balance-replay.ts';

const MIGRATIONS = [
  {
    id: '0100_wallet_history',
    sql: `
      CREATE TABLE ledger_entries (
        id INTEGER PRIMARY KEY, tx_id INTEGER NOT NULL, account_id INTEGER, system_name TEXT,
        bucket TEXT, asset TEXT NOT NULL, type TEXT NOT NULL, amount TEXT NOT NULL,
        balance_after TEXT NOT NULL, ref TEXT, tx_hash TEXT, created_at INTEGER NOT NULL);
      CREATE INDEX ledger_by_account ON ledger_entries (account_id, id);
      CREATE INDEX ledger_by_system ON ledger_entries (system_name, asset, id);
      CREATE TABLE settlements (
        id TEXT PRIMARY KEY, account_id INTEGER NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
        amount TEXT NOT NULL, asset TEXT NOT NULL, wallet_address TEXT NOT NULL, tx_hash TEXT,
        confirmations INTEGER NOT NULL, failure_reason TEXT, created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL);
      CREATE INDEX settlements_by_account ON settlements (account_id, created_at DESC, id);`,
  },
  {
    // A ledger line belongs to a user or to the insurance fund: each index covers only its own
    // rows, so a user's line (three per filled order, inside the durable transaction) is not also
    // inserted into the system-account index under a NULL key, and the other way round.
    id: '0101_ledger_partial_indexes',
    sql: `
      DROP INDEX ledger_by_account;
      CREATE INDEX ledger_by_account ON ledger_entries (account_id, id) WHERE account_id IS NOT NULL;
      DROP INDEX ledger_by_system;
      CREATE INDEX ledger_by_system ON ledger_entries (system_name, asset, id) WHERE system_name IS NOT NULL;`,
  },
  {
    // Each recorded account's balance after its last line, kept as lines are projected, so that the
    // restart's replay check reads one row per account instead of grouping the whole ledger history
    // (which grows with the venue's age). Filled once from the lines already recorded.
    id: '0102_ledger_balances',
    sql: `
      CREATE TABLE ledger_balances (account_key TEXT PRIMARY KEY, balance_after TEXT NOT NULL, last_id INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO ledger_balances (account_key, balance_after, last_id)
        SELECT CASE WHEN account_id IS NOT NULL THEN 'u:' || account_id || ':' || bucket || ':' || asset
                    ELSE 's:' || system_name || ':' || asset END,
               balance_after, MAX(id)
        FROM ledger_entries GROUP BY account_id, system_name, bucket, asset;`,
  },
];

interface SettlementRow {
  id: string;
  account_id: number;
  kind: SettlementKind;
  status: SettlementStatus;
  amount: string;
  asset: string;
  wallet_address: string;
  tx_hash: string | null;
  confirmations: number;
  failure_reason: string | null;
  created_at: number;
  updated_at: number;
}

export type { HistoryEntry, SettlementQuery } from '../../../gateway/history-port.ts';

export class WalletHistory implements Projector, WalletHistoryReads {
  readonly migrations = MIGRATIONS;
  readonly consumes = ['ledger', 'settlement'] as const;
  private stmts: ReturnType<WalletHistory['prepare']> | null = null;

  constructor(private readonly db: Db) {}

  project(event: ExchangeEvent): void {
    const s = (this.stmts ??= this.prepare());
    if (event.type === 'ledger') {
      const e = event.entry;
      // Users' lines serve /wallet/history and the insurance fund's its public summary; the other
      // system accounts (fees, clearing, chain) are never read back: the journal keeps them.
      if (e.account.kind === 'system' && e.account.name !== 'insurance') return;
      const user = e.account.kind === 'user';
      s.insertEntry.run(
        e.entryId,
        e.txId,
        user ? e.account.accountId : null,
        e.account.kind === 'system' ? e.account.name : null,
        e.account.kind === 'user' ? e.account.bucket : null,
        e.account.asset,
        e.type,
        formatDecimal(e.amount),
        formatDecimal(e.balanceAfter),
        e.ref,
        e.txHash,
        e.at,
      );
      s.keepBalance.run(ledgerKey(e.account), formatDecimal(e.balanceAfter), e.entryId);
    } else if (event.type === 'settlement') {
      const r = event.settlement;
      s.upsertSettlement.run(
        r.id, r.accountId, r.kind, r.status, formatDecimal(r.amount), r.asset, r.walletAddress,
        r.txHash, r.confirmations, r.failureReason, r.createdAt, r.updatedAt,
      );
    }
  }

  /**
   * Each recorded account's balance after its last line against the replayed ledger, and no
   * replayed balance on an account the history has no line for (user buckets and the insurance
   * fund: the accounts whose lines are recorded). One row per account (ledger_balances), once per start.
   */
  replayDifferences(ledger: Ledger): string[] {
    const rows = this.db.prepare('SELECT account_key, balance_after FROM ledger_balances').all() as { account_key: string; balance_after: string }[];
    return replayDifferences(new Map(rows.map((r) => [r.account_key, storedDecimal(r.balance_after)])), ledger);
  }

  /**
   * Where the kept balances (ledger_balances, read by the restart's check) disagree with the lines
   * themselves: the balance after each account's last line. One grouped scan of the whole history:
   * the offline audit's check, not the restart's.
   */
  keptBalancesDisagreeWithLines(): string[] {
    const rows = this.db.prepare(
      `SELECT l.key AS key, l.balance_after AS lines, b.balance_after AS kept FROM (
         SELECT CASE WHEN account_id IS NOT NULL THEN 'u:' || account_id || ':' || bucket || ':' || asset
                     ELSE 's:' || system_name || ':' || asset END AS key, balance_after, MAX(id)
         FROM ledger_entries GROUP BY account_id, system_name, bucket, asset) AS l
       LEFT JOIN ledger_balances AS b ON b.account_key = l.key`,
    ).all() as { key: string; lines: string; kept: string | null }[];
    const count = (this.db.prepare('SELECT COUNT(*) AS n FROM ledger_balances').get() as { n: number }).n;
    const out = rows.filter((r) => r.kept !== r.lines).map((r) => `${r.key}: its last line says ${r.lines}, the kept balance ${r.kept ?? 'none'}`);
    if (count !== rows.length) out.push(`${count} kept balances for ${rows.length} accounts with lines`);
    return out;
  }

  /** The account's ledger lines, newest first; `beforeId` pages backwards. */
  history(accountId: number, limit: number, beforeId?: number): HistoryEntry[] {
    const s = (this.stmts ??= this.prepare());
    const rows = s.history.all(accountId, beforeId ?? Number.MAX_SAFE_INTEGER, limit) as {
      id: number; type: LedgerEntryType; bucket: string; asset: string; amount: string;
      balance_after: string; ref: string | null; tx_hash: string | null; created_at: number;
    }[];
    return rows.map((r) => ({
      id: r.id,
      type: r.type,
      bucket: r.bucket,
      asset: r.asset,
      amount: storedDecimal(r.amount),
      balanceAfter: storedDecimal(r.balance_after),
      ref: r.ref,
      txHash: r.tx_hash,
      createdAt: r.created_at,
    }));
  }

  settlements(q: SettlementQuery): SettlementRecord[] {
    const where = ['account_id = ?'];
    const args: (string | number)[] = [q.accountId];
    if (q.kind !== undefined) {
      where.push('kind = ?');
      args.push(q.kind);
    }
    if (q.status !== undefined) {
      where.push('status = ?');
      args.push(q.status);
    }
    // Newest first. Ids are `<kind>_<n>`: within one millisecond, (length, text) orders them by n
    // (text alone would put wd_9 before wd_10); the cursor uses the same total order.
    if (q.before !== undefined) {
      where.push('(created_at < ? OR (created_at = ? AND (length(id) < ? OR (length(id) = ? AND id < ?))))');
      const len = q.before.id.length;
      args.push(q.before.createdAt, q.before.createdAt, len, len, q.before.id);
    }
    const order = 'ORDER BY created_at DESC, length(id) DESC, id DESC';
    const sql = `SELECT * FROM settlements WHERE ${where.join(' AND ')} ${order} LIMIT ?`;
    const rows = this.db.prepare(sql).all(...args, q.limit) as SettlementRow[];
    return rows.map(toRecord);
  }

  settlement(id: string): SettlementRecord | undefined {
    const s = (this.stmts ??= this.prepare());
    const row = s.settlement.get(id) as SettlementRow | undefined;
    return row === undefined ? undefined : toRecord(row);
  }

  /** A system account's balance after each movement since `sinceMs`, oldest first. */
  systemHistory(name: string, asset: string, sinceMs: number): SystemMovement[] {
    // MAX(id) makes SQLite read balance_after from each group's last line (its bare-column rule).
    const rows = this.db
      .prepare(
        `SELECT amount, balance_after, created_at FROM ledger_entries
         WHERE system_name = ? AND asset = ? AND created_at >= ? ORDER BY id`,
      )
      .all(name, asset, sinceMs) as { amount: string; balance_after: string; created_at: number }[];
    return rows.map((r) => ({ at: r.created_at, amount: storedDecimal(r.amount), balanceAfter: storedDecimal(r.balance_after) }));
  }

  private prepare() {
    return {
      insertEntry: this.db.prepare(
        `INSERT INTO ledger_entries (id, tx_id, account_id, system_name, bucket, asset, type, amount,
         balance_after, ref, tx_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      keepBalance: this.db.prepare(
        `INSERT INTO ledger_balances (account_key, balance_after, last_id) VALUES (?, ?, ?)
         ON CONFLICT (account_key) DO UPDATE SET balance_after = excluded.balance_after, last_id = excluded.last_id
         WHERE excluded.last_id > ledger_balances.last_id`,
      ),
      upsertSettlement: this.db.prepare(
        `INSERT INTO settlements (id, account_id, kind, status, amount, asset, wallet_address, tx_hash,
         confirmations, failure_reason, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET status = excluded.status, tx_hash = excluded.tx_hash,
         confirmations = excluded.confirmations, failure_reason = excluded.failure_reason,
         updated_at = excluded.updated_at`,
      ),
      history: this.db.prepare(
        `SELECT id, type, bucket, asset, amount, balance_after, ref, tx_hash, created_at FROM ledger_entries
         WHERE account_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
      ),
      settlement: this.db.prepare('SELECT * FROM settlements WHERE id = ?'),
    };
  }
}

function toRecord(r: SettlementRow): SettlementRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    status: r.status,
    amount: storedDecimal(r.amount),
    asset: r.asset,
    walletAddress: r.wallet_address,
    txHash: r.tx_hash,
    confirmations: r.confirmations,
    failureReason: r.failure_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}
