/**
 * The reads of the money history in PostgreSQL, as WalletHistory answers them from SQLite
 * (src/adapters/store/projections/wallet-history.ts): an account's ledger lines, its settlements,
 * one settlement, a system account's movements (the insurance fund's summary), and the restart
 * check of the recorded balances against a replayed ledger. The same parameters and results,
 * returned as promises; PgHistoryProjector (projector.ts) writes the rows.
 */
import type pg from 'pg';
import type { SettlementRecord } from '../../../core/events.ts';
import type { Ledger, LedgerEntryType } from '../../../core/ledger/ledger.ts';
import type { SettlementKind, SettlementStatus } from '../../../core/wallet/wallet.ts';
import type { HistoryEntry, SettlementQuery, SystemMovement, WalletHistoryReads } from '../../../gateway/history-port.ts';
import { replayDifferences } from '../../store/projections/balance-replay.ts';
import { fixed, int } from './values.ts';

interface SettlementRow {
  id: string; account_id: string; kind: SettlementKind; status: SettlementStatus; amount: string; asset: string;
  wallet_address: string; tx_hash: string | null; confirmations: number; failure_reason: string | null;
  created_at: string; updated_at: string;
}

export class PgWalletHistory implements WalletHistoryReads {
  constructor(private readonly pool: pg.Pool) {}

  /** The account's ledger lines, newest first; `beforeId` pages backwards. */
  async history(accountId: number, limit: number, beforeId?: number): Promise<HistoryEntry[]> {
    const { rows } = await this.pool.query<{
      id: string; type: LedgerEntryType; bucket: string; asset: string; amount: string; balance_after: string;
      ref: string | null; tx_hash: string | null; created_at: string;
    }>({
      name: 'wallet-history',
      text: `SELECT id, type, bucket, asset, amount, balance_after, ref, tx_hash, created_at FROM ledger_entries
             WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
      values: [accountId, beforeId ?? Number.MAX_SAFE_INTEGER, limit],
    });
    return rows.map((r) => ({
      id: int(r.id),
      type: r.type,
      bucket: r.bucket,
      asset: r.asset,
      amount: fixed(r.amount),
      balanceAfter: fixed(r.balance_after),
      ref: r.ref,
      txHash: r.tx_hash,
      createdAt: int(r.created_at),
    }));
  }

  /** Newest first, ids of one millisecond ordered by (length, bytes) as the SQLite read orders them. */
  async settlements(q: SettlementQuery): Promise<SettlementRecord[]> {
    const where = ['account_id = $1'];
    const args: (string | number)[] = [q.accountId];
    const param = (value: string | number): string => `$${args.push(value)}`;
    if (q.kind !== undefined) where.push(`kind = ${param(q.kind)}`);
    if (q.status !== undefined) where.push(`status = ${param(q.status)}`);
    if (q.before !== undefined) {
      const at = param(q.before.createdAt);
      const len = param(q.before.id.length);
      const id = param(q.before.id);
      where.push(`(created_at < ${at} OR (created_at = ${at} AND (length(id) < ${len} OR (length(id) = ${len} AND id < ${id}))))`);
    }
    const sql = `SELECT * FROM settlements WHERE ${where.join(' AND ')}
      ORDER BY created_at DESC, length(id) DESC, id DESC LIMIT ${param(q.limit)}`;
    const { rows } = await this.pool.query<SettlementRow>(sql, args);
    return rows.map(toRecord);
  }

  async settlement(id: string): Promise<SettlementRecord | undefined> {
    const { rows } = await this.pool.query<SettlementRow>({ name: 'wallet-settlement', text: 'SELECT * FROM settlements WHERE id = $1', values: [id] });
    return rows.length === 0 ? undefined : toRecord(rows[0]!);
  }

  /** A system account's balance after each movement since `sinceMs`, oldest first. */
  async systemHistory(name: string, asset: string, sinceMs: number): Promise<SystemMovement[]> {
    const { rows } = await this.pool.query<{ amount: string; balance_after: string; created_at: string }>({
      name: 'wallet-system-history',
      text: `SELECT amount, balance_after, created_at FROM ledger_entries
             WHERE system_name = $1 AND asset = $2 AND created_at >= $3 ORDER BY id`,
      values: [name, asset, sinceMs],
    });
    return rows.map((r) => ({ at: int(r.created_at), amount: fixed(r.amount), balanceAfter: fixed(r.balance_after) }));
  }

  /**
   * Each recorded account's balance after its last line against `ledger` (replayed to the
   * watermark), and no replayed balance on an account the history has no line for (user buckets
   * and the insurance fund): WalletHistory.replayDifferences, on this history. Empty when all agree.
   */
  async replayDifferences(ledger: Ledger): Promise<string[]> {
    const { rows } = await this.pool.query<{ account_key: string; balance_after: string }>('SELECT account_key, balance_after FROM ledger_balances');
    return replayDifferences(new Map(rows.map((r) => [r.account_key, fixed(r.balance_after)])), ledger);
  }
}

function toRecord(r: SettlementRow): SettlementRecord {
  return {
    id: r.id,
    accountId: int(r.account_id),
    kind: r.kind,
    status: r.status,
    amount: fixed(r.amount),
    asset: r.asset,
    walletAddress: r.wallet_address,
    txHash: r.tx_hash,
    confirmations: r.confirmations,
    failureReason: r.failure_reason,
    createdAt: int(r.created_at),
    updatedAt: int(r.updated_at),
  };
}
