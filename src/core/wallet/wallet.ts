/**
 * The wallet: bucket transfers, withdrawals, and the settlement records of deposits and
 * withdrawals as the chain moves them (decisions.md "Money").
 *
 * Deposit:    pending -> confirmed (credited once, when confirmations reach the configured number)
 *                     -> failed    (reorged away before that; never credited)
 * Withdrawal: pending -> processing -> sent -> confirmed
 *             processing -> insufficient_liquidity -> processing (hot wallet short; retried)
 *             sent -> processing (its transaction was reorged away; broadcast again)
 *             any non-terminal -> failed, refunded to `wallet` by a `withdrawal_refund` entry.
 *
 * Invariants: a deposit transaction is credited at most once (keyed by tx hash); a withdrawal's
 * amount sits in the `withdrawals_pending` system account from request to confirmation or refund,
 * so `pendingWithdrawalTotal` is exactly the sum of the account's non-terminal withdrawals.
 * Chain adapters report what they see; every decision (credit, refund) is made here, in order.
 */
import { fail } from '../assert.ts';
import { formatDecimal, type Fixed } from '../money.ts';
import { reject, type Rejection } from '../errors.ts';
import { systemAccount, userAccount, type Bucket, type Ledger } from '../ledger/ledger.ts';
import { MovementIds } from './movement-ids.ts';

export const SETTLEMENT_STATUSES = [
  'pending',
  'processing',
  'sent',
  'confirmed',
  'failed',
  'insufficient_liquidity',
] as const;
export type SettlementStatus = (typeof SETTLEMENT_STATUSES)[number];
export type SettlementKind = 'deposit' | 'withdraw';

export interface Settlement {
  readonly id: string;
  readonly accountId: number;
  readonly kind: SettlementKind;
  status: SettlementStatus;
  readonly amount: Fixed;
  readonly asset: string;
  readonly walletAddress: string;
  txHash: string | null;
  confirmations: number;
  /** Failed broadcast attempts while the hot wallet was short (withdrawals only). */
  attempts: number;
  failureReason: string | null;
  readonly createdAt: number;
  updatedAt: number;
}

const TERMINAL: ReadonlySet<SettlementStatus> = new Set(['confirmed', 'failed']);

export interface WalletContext {
  readonly ledger: Ledger;
  now(): number;
  emitSettlement(settlement: Settlement): void;
  emitAlarm(kind: string, message: string): void;
  /** What the owner of `bucket` allows to leave it right now (balance minus holds and margin). */
  transferable(accountId: number, bucket: Bucket): Fixed;
}

export interface WalletConfig {
  readonly settlementAsset: string;
  readonly depositConfirmations: number;
  /** Insufficient-liquidity retries before a withdrawal fails and is refunded. */
  readonly withdrawalMaxAttempts: number;
  /** How long the client id of an accepted transfer or withdrawal stays refused (movement-ids.ts). */
  readonly movementIdRetentionMs: number;
}

/** How often used movement ids are pruned (on the clock tick). */
const MOVEMENT_ID_PRUNE_MS = 3_600_000;

export class Wallet {
  private readonly settlements = new Map<string, Settlement>();
  private readonly depositsByTx = new Map<string, Settlement>();
  /** Credited deposits already reported reorged (the alarm is raised once per deposit). */
  private readonly reorgedAfterCredit = new Set<string>();
  private readonly pendingWithdrawals = new Map<number, Fixed>();
  private nextDeposit = 1;
  private nextWithdrawal = 1;
  private readonly movementIds: MovementIds;
  private lastMovementIdPrune = 0;

  constructor(
    private readonly ctx: WalletContext,
    private readonly config: WalletConfig,
  ) {
    this.movementIds = new MovementIds(config.movementIdRetentionMs);
  }

  /** `clientId`: the client's idempotency tag (movement-ids.ts), or null. */
  transfer(accountId: number, from: Bucket, to: Bucket, amount: Fixed, clientId: string | null = null): Rejection | null {
    if (from === to) return reject('VALIDATION_ERROR', '`from` and `to` must be different buckets');
    if (amount <= 0n) return reject('VALIDATION_ERROR', 'amount must be positive');
    const duplicate = this.duplicate(accountId, clientId);
    if (duplicate !== null) return duplicate;
    const available = this.ctx.transferable(accountId, from);
    if (amount > available) return insufficient(from, amount, available);
    const asset = this.config.settlementAsset;
    const now = this.ctx.now();
    const entryId = this.ctx.ledger.move(
      'transfer',
      userAccount(accountId, from, asset),
      userAccount(accountId, to, asset),
      amount,
      now,
      { ref: `${from}->${to}` },
    );
    if (clientId !== null) this.movementIds.record(accountId, clientId, `transfer ledger entry ${entryId}`, now);
    return null;
  }

  withdraw(accountId: number, walletAddress: string, amount: Fixed, clientId: string | null = null): Settlement | Rejection {
    if (amount <= 0n) return reject('VALIDATION_ERROR', 'amount must be positive');
    const duplicate = this.duplicate(accountId, clientId);
    if (duplicate !== null) return duplicate;
    const available = this.ctx.transferable(accountId, 'wallet');
    if (amount > available) return insufficient('wallet', amount, available);
    const now = this.ctx.now();
    const settlement = this.newSettlement('withdraw', accountId, walletAddress, amount, null, now);
    const asset = this.config.settlementAsset;
    this.ctx.ledger.move(
      'withdrawal',
      userAccount(accountId, 'wallet', asset),
      systemAccount('withdrawals_pending', asset),
      amount,
      now,
      { ref: settlement.id },
    );
    this.addPending(accountId, amount);
    if (clientId !== null) this.movementIds.record(accountId, clientId, `withdrawal ${settlement.id}`, now);
    this.ctx.emitSettlement(settlement);
    return settlement;
  }

  /** Time passes: forgets movement ids past their retention (hourly). */
  onTick(now: number): void {
    if (now - this.lastMovementIdPrune < MOVEMENT_ID_PRUNE_MS) return;
    this.lastMovementIdPrune = now;
    this.movementIds.prune(now);
  }

  private duplicate(accountId: number, clientId: string | null): Rejection | null {
    if (clientId === null) return null;
    const used = this.movementIds.used(accountId, clientId, this.ctx.now());
    if (used === null) return null;
    return reject('CONFLICT', `clientTransferId ${clientId} was already used by ${used.what} at ${new Date(used.at).toISOString()}; nothing was moved again`);
  }

  /**
   * The chain adapter saw a deposit transaction with `confirmations` blocks on top of it (1 =
   * just mined). Credits the wallet once, when confirmations reach the configured number.
   * Repeated observations of the same transaction only update the count, to what the chain shows
   * now: a reorg that keeps the transaction's block lowers it.
   */
  observeDeposit(obs: { txHash: string; accountId: number; walletAddress: string; amount: Fixed; confirmations: number }): Settlement {
    const now = this.ctx.now();
    let settlement = this.depositsByTx.get(obs.txHash);
    if (settlement === undefined) {
      settlement = this.newSettlement('deposit', obs.accountId, obs.walletAddress, obs.amount, obs.txHash, now);
      this.depositsByTx.set(obs.txHash, settlement);
    }
    if (TERMINAL.has(settlement.status)) return settlement;
    settlement.confirmations = obs.confirmations;
    settlement.updatedAt = now;
    if (settlement.confirmations >= this.config.depositConfirmations) {
      const asset = this.config.settlementAsset;
      this.ctx.ledger.move(
        'deposit',
        systemAccount('chain', asset),
        userAccount(settlement.accountId, 'wallet', asset),
        settlement.amount,
        now,
        { ref: settlement.id, txHash: settlement.txHash },
      );
      settlement.status = 'confirmed';
    }
    this.ctx.emitSettlement(settlement);
    return settlement;
  }

  /** The transaction left the canonical chain. A pending deposit fails; a credited one alarms. */
  depositReorged(txHash: string): Settlement | null {
    const settlement = this.depositsByTx.get(txHash);
    if (settlement === undefined) return null;
    if (settlement.status === 'confirmed') {
      // Past the confirmation depth the credit stands (it may have been spent): the operator acts.
      if (!this.reorgedAfterCredit.has(txHash)) {
        this.reorgedAfterCredit.add(txHash);
        this.ctx.emitAlarm('deposit_reorged_after_credit', `deposit ${settlement.id} (${txHash}) was reorged after credit`);
      }
      return settlement;
    }
    if (settlement.status === 'failed') return settlement;
    settlement.status = 'failed';
    settlement.failureReason = 'reorged';
    settlement.updatedAt = this.ctx.now();
    this.ctx.emitSettlement(settlement);
    return settlement;
  }

  /** Withdrawal lifecycle moves reported by the payout processor. */
  withdrawalMove(id: string, move: WithdrawalMove): Settlement | Rejection {
    const s = this.settlements.get(id);
    if (s === undefined || s.kind !== 'withdraw') return reject('NOT_FOUND', `withdrawal ${id} not found`);
    if (TERMINAL.has(s.status)) return reject('CONFLICT', `withdrawal ${id} is already ${s.status}`);
    const allowed = WITHDRAWAL_MOVES[move.to];
    if (!allowed.includes(s.status)) return reject('CONFLICT', `withdrawal ${id} cannot go ${s.status} -> ${move.to}`);
    s.updatedAt = this.ctx.now();
    if (move.to === 'sent') s.txHash = move.txHash ?? null;
    if (move.to === 'confirmed') this.finishWithdrawal(s, move.confirmations ?? 0);
    else if (move.to === 'insufficient_liquidity') this.shortOfLiquidity(s);
    else if (move.to === 'failed') this.failWithdrawal(s, move.reason ?? 'failed');
    else s.status = move.to;
    this.ctx.emitSettlement(s);
    return s;
  }

  get(id: string): Settlement | undefined {
    return this.settlements.get(id);
  }

  depositByTx(txHash: string): Settlement | undefined {
    return this.depositsByTx.get(txHash);
  }

  pendingWithdrawalTotal(accountId: number): Fixed {
    return this.pendingWithdrawals.get(accountId) ?? 0n;
  }

  /** Withdrawals that still need the payout processor (pending, processing, short of liquidity, sent). */
  openWithdrawals(): Settlement[] {
    const out: Settlement[] = [];
    for (const s of this.settlements.values()) if (s.kind === 'withdraw' && !TERMINAL.has(s.status)) out.push(s);
    return out;
  }

  /** Whether a credited deposit was already reported reorged (its alarm raised). */
  reorgReported(txHash: string): boolean {
    return this.reorgedAfterCredit.has(txHash);
  }

  /** Up to `limit` of the newest confirmed deposits and withdrawals with a transaction, oldest first (a walk of all: read once, at start). */
  recentlyConfirmed(limit: number): Settlement[] {
    const out: Settlement[] = [];
    for (const s of this.settlements.values()) if (s.status === 'confirmed' && s.txHash !== null) out.push(s);
    return out.slice(Math.max(0, out.length - limit));
  }

  /** Deposits seen but not yet credited or failed. */
  openDeposits(): Settlement[] {
    const out: Settlement[] = [];
    for (const s of this.depositsByTx.values()) if (!TERMINAL.has(s.status)) out.push(s);
    return out;
  }

  private finishWithdrawal(s: Settlement, confirmations: number): void {
    const asset = this.config.settlementAsset;
    this.ctx.ledger.move(
      'withdrawal',
      systemAccount('withdrawals_pending', asset),
      systemAccount('chain', asset),
      s.amount,
      this.ctx.now(),
      { ref: s.id, txHash: s.txHash },
    );
    s.confirmations = confirmations;
    s.status = 'confirmed';
    this.addPending(s.accountId, -s.amount);
  }

  private shortOfLiquidity(s: Settlement): void {
    s.attempts++;
    if (s.attempts >= this.config.withdrawalMaxAttempts) this.failWithdrawal(s, 'insufficient_liquidity');
    else s.status = 'insufficient_liquidity';
  }

  private failWithdrawal(s: Settlement, reason: string): void {
    const asset = this.config.settlementAsset;
    this.ctx.ledger.move(
      'withdrawal_refund',
      systemAccount('withdrawals_pending', asset),
      userAccount(s.accountId, 'wallet', asset),
      s.amount,
      this.ctx.now(),
      { ref: s.id },
    );
    s.status = 'failed';
    s.failureReason = reason;
    this.addPending(s.accountId, -s.amount);
  }

  private addPending(accountId: number, delta: Fixed): void {
    const next = (this.pendingWithdrawals.get(accountId) ?? 0n) + delta;
    if (next < 0n) fail(`pending withdrawals of account ${accountId} went negative`);
    if (next === 0n) this.pendingWithdrawals.delete(accountId);
    else this.pendingWithdrawals.set(accountId, next);
  }

  private newSettlement(
    kind: SettlementKind,
    accountId: number,
    walletAddress: string,
    amount: Fixed,
    txHash: string | null,
    now: number,
  ): Settlement {
    const id = kind === 'deposit' ? `dep_${this.nextDeposit++}` : `wd_${this.nextWithdrawal++}`;
    const settlement: Settlement = {
      id,
      accountId,
      kind,
      status: 'pending',
      amount,
      asset: this.config.settlementAsset,
      walletAddress,
      txHash,
      confirmations: 0,
      attempts: 0,
      failureReason: null,
      createdAt: now,
      updatedAt: now,
    };
    this.settlements.set(id, settlement);
    return settlement;
  }
}

export type WithdrawalMove =
  | { to: 'processing' }
  | { to: 'sent'; txHash: string }
  | { to: 'confirmed'; confirmations: number }
  | { to: 'insufficient_liquidity' }
  | { to: 'failed'; reason: string };

/** For each target status, the statuses a withdrawal may come from. */
const WITHDRAWAL_MOVES: Record<WithdrawalMove['to'], readonly SettlementStatus[]> = {
  processing: ['pending', 'insufficient_liquidity', 'sent'],
  sent: ['processing'],
  confirmed: ['sent'],
  insufficient_liquidity: ['processing'],
  failed: ['pending', 'processing', 'insufficient_liquidity', 'sent'],
};

function insufficient(bucket: Bucket, wanted: Fixed, available: Fixed): Rejection {
  return reject(
    'INSUFFICIENT_BALANCE',
    `insufficient ${bucket} balance: requested ${formatDecimal(wanted)}, available ${formatDecimal(available)}`,
  );
}
