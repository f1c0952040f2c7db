/**
 * The cash side of the linear engine: what its trades realise and charge, posted to the ledger as
 * balanced transactions, and the rules that keep every user's perps cash whole.
 *
 * While an order executes, its fills only queue their realised PnL and fees (`realized`, `fee`):
 * the maker checks read a maker's cash with what is queued (`pendingOf`), and `post` then writes
 * one ledger transaction for the PnL (against the market's clearing account) and one each for the
 * fees and the rebates (against the fee account). After posting:
 * - opening isolated positions take their initial margin and opening fees from the cross cash;
 *   where that cash is short, cross profit is realised to pay it, and what is still short comes
 *   back out of the new allocation (`settleOpeningCharges`);
 * - a position whose loss went past the collateral behind it is made whole by the insurance fund
 *   (`coverShortfall`, `coverIsolated`), so no user bucket ends a command negative.
 *
 * Invariants: the cross cash (the perps bucket less the isolated allocations in it) never ends a
 * command below zero; the fund pays in whole units of the settlement asset, rounded up, and profit
 * is realised in whole units, rounded down.
 */
import { fail } from '../assert.ts';
import { postFees } from '../ledger/fee-postings.ts';
import { systemAccount, type Ledger, type LedgerAccount, type LedgerLine } from '../ledger/ledger.ts';
import { roundTo, type Fixed } from '../money.ts';
import { PendingSums, TouchedSet } from '../touched.ts';
import type { LinearAccount } from './account.ts';
import { FUND_ACCOUNT } from './lifecycle.ts';
import { crossCashOf } from './margin.ts';
import type { LinearMarket } from './market.ts';
import type { Position } from './position.ts';

export interface CashDeps {
  readonly ledger: Ledger;
  readonly settlementAsset: string;
  readonly settlementDecimals: number;
  now(): number;
  /** The engine's account `id` (created on first use). */
  account(id: number): LinearAccount;
  /** The market's mark at `now` while its index is fresh, else null. */
  markAt(market: LinearMarket, now: number): Fixed | null;
  /** A position changed outside a fill (realised profit moved its cost basis): it gets a snapshot. */
  positionChanged(p: Position): void;
}

export class LinearCash {
  /** Realised PnL per account of the order being executed (all in one market). */
  private readonly pnl = new PendingSums<number>();
  private pnlMarket: LinearMarket | null = null;
  /** Fees per account of the order being executed (negative: a rebate). */
  private readonly fees = new PendingSums<number>();
  /** Positions whose collateral the execution may have left short (coverShortfall). */
  private readonly moved = new TouchedSet<Position>();
  /** What opening isolated positions took from the cross pool: initial margin and fees (settleOpeningCharges). */
  private readonly openingCharges = new PendingSums<Position>();

  constructor(private readonly deps: CashDeps) {}

  realized(accountId: number, market: LinearMarket, amount: Fixed): void {
    this.pnlMarket = market;
    this.pnl.add(accountId, amount);
  }

  fee(accountId: number, amount: Fixed): void {
    this.fees.add(accountId, amount);
  }

  /** A position moved (or was paid): its collateral is checked once the execution posts. */
  positionMoved(p: Position): void {
    this.moved.add(p);
  }

  openingCharge(p: Position, amount: Fixed): void {
    this.openingCharges.add(p, amount);
  }

  /** What the execution realised for `accountId` less what it charged, not posted yet. */
  pendingOf(accountId: number): Fixed {
    return this.pnl.sumOf(accountId) - this.fees.sumOf(accountId);
  }

  /**
   * Posts the realised PnL (against the market's clearing account) and the fees (to the fee
   * account; rebates from it) of the order just executed, one ledger transaction each, then covers
   * any shortfall it left. Called after every execution, so later checks in the same command see
   * the balances.
   */
  post(type: 'realized_pnl' | 'settlement'): void {
    const at = this.deps.now();
    const pnl = this.pnl;
    if (pnl.size > 0) {
      const market = this.pnlMarket!;
      const lines = [];
      let clearing = 0n;
      for (let i = 0; i < pnl.size; i++) {
        lines.push({ account: this.deps.account(pnl.keyAt(i)).perpsLedger, delta: pnl.sumAt(i) });
        clearing -= pnl.sumAt(i);
      }
      lines.push({ account: this.clearingOf(market), delta: clearing });
      this.deps.ledger.post(type, lines, at, { ref: market.spec.id });
      pnl.reset();
    }
    if (this.fees.size > 0) this.postFees(at);
    this.settleOpeningCharges();
    // coverShortfall may touch further positions: the loop reads the size afresh each time.
    const moved = this.moved;
    for (let i = 0; i < moved.size; i++) this.coverShortfall(moved.at(i));
    moved.reset();
  }

  private postFees(at: number): void {
    const fees = this.fees;
    const lines: LedgerLine[] = [];
    for (let i = 0; i < fees.size; i++) lines.push({ account: this.deps.account(fees.keyAt(i)).perpsLedger, delta: -fees.sumAt(i) });
    postFees(this.deps.ledger, this.deps.settlementAsset, lines, at);
    fees.reset();
  }

  /**
   * What opening isolated positions took from the cross pool in this command: the initial margin
   * of the opened lots (now in the allocation) and the opening fees (now posted to the bucket). The
   * margin gate admitted them against free collateral, which counts cross profit, and the cash may
   * have left since a resting order was placed (a post-only order reserves no fee): where the cross
   * cash (bucket − isolated allocations) is now short, cross profit is realised to pay it
   * (settleProfit), and what that cannot pay comes back out of the new allocation. The cross pool
   * never goes negative to fund an allocation, and the fund never pays for one.
   */
  private settleOpeningCharges(): void {
    const charges = this.openingCharges;
    for (let i = 0; i < charges.size; i++) {
      const p = charges.keyAt(i);
      const account = this.deps.account(p.accountId);
      let cash = this.crossCash(account);
      if (cash >= 0n) continue;
      cash += this.settleProfit(account, this.unitsUp(-cash), this.deps.now());
      if (cash >= 0n) continue;
      p.isolatedMargin -= charges.sumAt(i) < -cash ? charges.sumAt(i) : -cash;
      if (p.isolatedMargin < 0n) this.coverIsolated(p);
    }
    charges.reset();
  }

  /** The market's clearing account: the counterparty of every realised PnL and settlement. */
  private clearingOf(market: LinearMarket): LedgerAccount {
    return (market.clearingLedger ??= systemAccount(`clearing:${market.spec.id}`, this.deps.settlementAsset));
  }

  /**
   * The account's cross cash: its perps bucket less the isolated allocations inside it. Exact to 18
   * digits (allocations are); never negative at the end of a command (coverShortfall).
   */
  crossCash(account: LinearAccount): Fixed {
    return crossCashOf(account, this.deps.ledger.balance(account.perpsLedger));
  }

  /**
   * A loss larger than the collateral behind it is paid by the insurance fund now, so no user
   * bucket ends a command negative (liquidation keeps this rare). An isolated position's
   * collateral is its allocation; a cross position's is the cross cash, the bucket less every
   * allocation in it, so a cross loss never draws on isolated margin even while the bucket itself
   * stays positive. Cross cash below zero is not yet a deficit while the account's cross positions
   * carry unrealised profit: that profit is realised first (settleProfit), and the fund pays only
   * what it cannot cover, in whole units rounded up (the cross cash ends at or just above zero).
   *
   * The payment is not checked against the fund's balance here: no user bucket may end a command
   * negative, so the bound lies with the paths that realise such a loss. Liquidation takes a
   * position over only while the fund can carry it, else deleverages it (lifecycle.ts
   * fundCanCarry); expiry does the same before it settles (deleverageSettlementDeficits); user and
   * maker fills stop at the bankruptcy price (closeBoundTicks). What is left unbounded is small:
   * rounding dust of trades at a bankruptcy price, and a funding payment or an ADL fill that takes
   * an account past its cash between two liquidation checks.
   */
  private coverShortfall(position: Position): void {
    if (position.accountId === FUND_ACCOUNT) return; // the fund's own balance is what pays shortfalls
    const at = this.deps.now();
    const account = this.deps.account(position.accountId);
    if (position.marginMode === 'isolated' && position.isolatedMargin < 0n) this.coverIsolated(position);
    let cash = this.crossCash(account);
    if (cash < 0n) cash += this.settleProfit(account, this.unitsUp(-cash), at);
    if (cash < 0n) {
      const insurance = systemAccount('insurance', this.deps.settlementAsset);
      this.deps.ledger.move('insurance_fund', insurance, account.perpsLedger, this.unitsUp(-cash), at, { ref: 'shortfall' });
    }
  }

  /**
   * Realises up to `gap` of the unrealised profit of the account's cross positions at their marks,
   * into its perps cash against each market's clearing account (the counterparties' open losses,
   * which they pay when they close), and returns what it realised. The position keeps its size; its
   * cost basis takes the realised amount, so its entry price moves by it and its equity does not
   * change. Whole units of the settlement asset, rounded down (money paid out rounds down). Only at
   * a fresh mark of an open market: profit at a stale mark (the index down, an expired future not
   * yet settled) may no longer exist, and once realised it is cash that can leave.
   */
  settleProfit(account: LinearAccount, gap: Fixed, at: number): Fixed {
    let settled = 0n;
    for (const p of account.positions.values()) {
      if (settled === gap) break;
      if (p.marginMode !== 'cross' || p.size === 0 || p.market.status !== 'open') continue;
      const mark = this.deps.markAt(p.market, at);
      if (mark === null) continue;
      const profit = this.unitsDown(p.unrealized(mark));
      const take = profit < gap - settled ? profit : gap - settled;
      if (take <= 0n) continue;
      p.cost += take;
      p.cachedVersion = -1;
      p.realizedPnl += take;
      p.updatedAt = at;
      this.deps.positionChanged(p);
      this.deps.ledger.move('realized_pnl', this.clearingOf(p.market), account.perpsLedger, take, at, { ref: `pnl_settlement:${p.market.spec.id}` });
      settled += take;
    }
    return settled;
  }

  /**
   * Empties the clearing account of a market settlement has left flat into the insurance fund, as
   * the funding residue goes there: what it still holds is the rounding of the PnL posted against
   * it (each fill's PnL floored to the unit, settleProfit's takes rounded down), never negative
   * (the exact PnL of a flat market sums to zero, and what was posted is at most that).
   */
  sweepClearing(market: LinearMarket): void {
    if (market.clearingLedger === null) return;
    const rest = this.deps.ledger.balance(market.clearingLedger);
    if (rest < 0n) fail(`clearing:${market.spec.id} settled at ${rest}: PnL paid out that no one lost`);
    const insurance = systemAccount('insurance', this.deps.settlementAsset);
    // The ledger type and ref of the options' settlement residue (clob/money-moves.ts postSettlement).
    if (rest > 0n) this.deps.ledger.move('insurance_fund', market.clearingLedger, insurance, rest, this.deps.now(), { ref: `settlement:${market.spec.id}` });
  }

  /**
   * The insurance fund pays an isolated position's negative margin into its owner's bucket, in whole
   * units rounded up; the sub-unit rest stays in the allocation, so no part of the isolated deficit
   * falls on the cross cash. Not checked against the fund's balance, for coverShortfall's reasons.
   */
  coverIsolated(position: Position): void {
    const gap = this.unitsUp(-position.isolatedMargin);
    position.isolatedMargin += gap;
    const insurance = systemAccount('insurance', this.deps.settlementAsset);
    const user = this.deps.account(position.accountId).perpsLedger;
    this.deps.ledger.move('insurance_fund', insurance, user, gap, this.deps.now(), { ref: `shortfall:${position.market.spec.id}` });
  }

  /**
   * Charges a liquidation fee the lifecycle capped by the equity behind the position. An open
   * isolated position's fee comes out of its allocation; a closed one has released its allocation
   * to the cross cash, and the lifecycle capped the fee by what it released, so it is charged as a
   * cross fee is: out of the cross collateral, realising profit of the account's other cross
   * positions where the cash is short (settleProfit). What neither covers (at most a rounding unit
   * per position) is not charged.
   */
  chargeLiquidationFee(p: Position, amount: Fixed): void {
    const account = this.deps.account(p.accountId);
    const at = this.deps.now();
    let charged = amount;
    if (p.marginMode === 'isolated' && p.size !== 0) {
      p.isolatedMargin -= amount;
    } else {
      let cash = this.crossCash(account);
      if (cash < amount) cash += this.settleProfit(account, this.unitsUp(amount - (cash > 0n ? cash : 0n)), at);
      if (cash < charged) charged = cash > 0n ? cash : 0n;
    }
    if (charged === 0n) return;
    const insurance = systemAccount('insurance', this.deps.settlementAsset);
    this.deps.ledger.move('liquidation', account.perpsLedger, insurance, charged, at, { ref: p.market.spec.id });
  }

  /**
   * An amount exact to 18 digits as the whole units of the settlement asset paid out for it
   * (rounded down: money given rounds down).
   */
  unitsDown(amount: Fixed): Fixed {
    return roundTo(amount, this.deps.settlementDecimals, 'floor');
  }

  /** A deficit exact to 18 digits as the whole units that make it good (rounded up). */
  unitsUp(amount: Fixed): Fixed {
    return roundTo(amount, this.deps.settlementDecimals, 'ceil');
  }
}
