/**
 * Time-driven life of the linear markets, run on every clock tick (and liquidation checks also on
 * every mark move): perpetual funding (funding.ts), liquidation with the insurance fund and
 * auto-deleveraging, and dated-future expiry. research/mechanics.md 1.3, 1.7 and 2.
 *
 * Liquidation, per account (cross) or per position (isolated), when equity < maintenance margin at
 * a fresh mark (a cross account's equity counting profit only where it can be realised now):
 *   1. cancel the account's orders (frees order margin);
 *   2. send a reduce-only IOC order into the book for the position — 20 % chunks for positions above
 *      `partialAboveNotional`, one chunk per `cooldownMs` — priced no worse than the bankruptcy price
 *      (the price at which the collateral behind the position is exhausted); a liquidation fee of
 *      `feeBps` of the filled notional (never more than the equity left) goes to the insurance fund;
 *   3. if the book could not absorb the chunk, or equity is below 2/3 of maintenance, the insurance
 *      fund takes the position over at the mark (it is an account of its own whose cash is the
 *      `insurance` ledger account) and pays any deficit the account is left with;
 *   4. if the fund cannot carry it (its equity — cash plus the unrealised PnL of what it holds —
 *      after paying that deficit is below the maintenance margin of all it would then hold), the
 *      position is deleveraged instead: closed at the bankruptcy price against opposite positions,
 *      most profitable (unrealised PnL over cost) first, the account's own opposite position last.
 * The fund unwinds positions it took over by reduce-only IOC orders at the mark or better; when its
 * equity falls below the maintenance margin of what it holds, those positions are deleveraged (at
 * the mark, or where its equity is zero if it is negative).
 *
 * Expiry: at the expiry time trading stops, open orders become `expired`, and once the 30-minute
 * index TWAP before expiry is known every position is closed at it (rounded to the tick) against
 * the market's clearing account (ledger type `settlement`); the market leaves the listings at once.
 * Without index history for the window, settlement waits for the next tick: never an invented price.
 * A loss at the settlement price past the cash behind a position is the fund's while it can carry
 * it, else the position is first deleveraged at its bankruptcy price (as in step 4 above). The
 * rounding rest left in the flat market's clearing account then goes to the insurance fund.
 */
import { BUY, SELL } from '../book/order-book.ts';
import type { Ledger } from '../ledger/ledger.ts';
import { divRound, unitOf, type Fixed } from '../money.ts';
import type { IndexBoard } from '../prices/index-board.ts';
import type { MarginMode } from '../records.ts';
import type { LinearAccount } from './account.ts';
import type { LinearEngine } from './engine.ts';
import { FundingState, intervalRate, nextFundingTime, samplePremium, type FundingSettings } from './funding.ts';
import { accountRisk, bankruptcyTicks, crossPool, isolatedHealth, riskMark, type Realisable } from './margin.ts';
import { MARK_SETTINGS, type LinearMarket } from './market.ts';

/** The funding state of an interval not sampled yet (never written: intervalRate only reads). */
const UNSAMPLED = new FundingState();
import type { Position } from './position.ts';

export interface LiquidationSettings {
  readonly partialAboveNotional: Fixed;
  readonly partialBps: number;
  readonly cooldownMs: number;
  readonly feeBps: number;
}

export interface LifecycleSettings {
  readonly funding: FundingSettings;
  readonly liquidation: LiquidationSettings;
}

export interface LifecycleDeps {
  readonly ledger: Ledger;
  readonly index: IndexBoard;
  readonly settlementAsset: string;
  readonly settlementDecimals: number;
  now(): number;
}

/** The insurance fund trades as account 0 (user accounts start at 1). */
export const FUND_ACCOUNT = 0;

const SCALE = 10n ** 18n;

export class LinearLifecycle {
  private readonly funding = new Map<LinearMarket, FundingState>();

  constructor(
    private readonly engine: LinearEngine,
    private readonly deps: LifecycleDeps,
    readonly settings: LifecycleSettings,
  ) {}

  /** After `expireDue`, on every clock tick: funding, liquidations, the fund's unwinding. */
  onTick(now: number): void {
    for (const market of this.engine.markets.values()) {
      if (market.isPerp && market.status === 'open') this.fundingTick(market, now);
    }
    this.checkLiquidations(null);
    this.unwindFund();
    this.engine.pruneClientIds(now);
  }

  // ---- funding ----

  /**
   * Pays the interval that just ended, on the first tick past its funding time, to the positions
   * held then, from its own premium samples: an interval without samples (the index stale
   * throughout) pays the interest rate alone, as market stats predicted, never an earlier
   * interval's premium. No fresh index at that tick (after a restart the clock ticks before the
   * feed is back), no payment on an invented price: it waits for the index, as long as no position
   * of the market has changed since the funding time (it is owed by the positions held then) and
   * until the next funding time at the latest; otherwise it is dropped. A funding time the venue did
   * not tick through (down for more than an interval) is skipped: nothing sampled the intervals it
   * was down for, and nobody could trade out of a position meanwhile.
   */
  private fundingTick(market: LinearMarket, now: number): void {
    const state = this.stateOf(market);
    const interval = this.settings.funding.intervalMs;
    const boundary = Math.floor(now / interval) * interval;
    if (state.lastFundingAt === 0) state.lastFundingAt = boundary;
    else if (boundary > state.lastFundingAt) {
      const missed = boundary - state.lastFundingAt > interval;
      state.unpaidFundingAt = missed ? null : boundary;
      state.positionMovesAtFunding = market.positionMoves;
      state.lastFundingAt = boundary;
    }
    if (market.positionMoves !== state.positionMovesAtFunding) state.unpaidFundingAt = null;
    const index = this.deps.index.index(market.spec.underlying, now);
    if (index === null) return;
    const due = state.unpaidFundingAt;
    if (due !== null) {
      // Paid before this tick's sample, which would start the next interval's.
      this.payFunding(market, state.intervalStart === due - interval ? state : UNSAMPLED, index.price, due);
      state.unpaidFundingAt = null;
    }
    samplePremium(state, market, index.price, now, this.settings.funding);
  }

  /** Pays one interval: index += rate × index price; each position settles −size × Δindex. */
  private payFunding(market: LinearMarket, samples: FundingState, indexPrice: Fixed, at: number): void {
    const rate = intervalRate(samples, market, this.settings.funding);
    if (rate === 0n) return;
    const delta = divRound(rate * indexPrice, SCALE, 'halfUp');
    market.fundingIndex += delta;
    const payments: { position: Position; amount: Fixed }[] = [];
    for (const p of market.positions) {
      if (p.size === 0) continue;
      const owed = -divRound((market.fundingIndex - p.fundingIndex) * market.units.size(p.size), SCALE, 'trunc');
      p.fundingIndex = market.fundingIndex;
      const amount = this.roundDown(owed);
      if (amount !== 0n) payments.push({ position: p, amount });
    }
    this.engine.postFunding(market, payments, at);
  }

  /**
   * Funding figures for market stats: the predicted rate of the running interval, null while the
   * index is stale (no fresh input, no figure). Samples of an earlier interval say nothing of this
   * one: until it is sampled the prediction is the interest rate alone.
   */
  fundingInfo(market: LinearMarket, now: number): { rate: Fixed | null; nextFundingAt: number } | null {
    if (!market.isPerp) return null;
    const s = this.settings.funding;
    const nextFundingAt = nextFundingTime(now, s.intervalMs);
    if (this.deps.index.index(market.spec.underlying, now) === null) return { rate: null, nextFundingAt };
    const state = this.stateOf(market);
    const sampled = state.intervalStart === nextFundingAt - s.intervalMs ? state : UNSAMPLED;
    return { rate: intervalRate(sampled, market, s), nextFundingAt };
  }

  private stateOf(market: LinearMarket): FundingState {
    let state = this.funding.get(market);
    if (state === undefined) this.funding.set(market, (state = new FundingState()));
    return state;
  }

  /** Rounds to the settlement unit toward −∞: payers pay up, receivers receive down. */
  private roundDown(amount: Fixed): Fixed {
    const unit = unitOf(this.deps.settlementDecimals);
    return divRound(amount, unit, 'floor') * unit;
  }

  // ---- liquidation ----

  /**
   * Checks every account with a position or a resting order in markets of `underlying` (all when
   * null): their marks value the positions, and price the loss a resting order would take on a
   * fill (maker-checks.ts admits), even for an account with no position yet.
   */
  checkLiquidations(underlying: string | null): void {
    const accounts = new Set<number>();
    for (const market of this.engine.markets.values()) {
      if (market.mark === null || market.status !== 'open') continue;
      if (underlying !== null && market.spec.underlying !== underlying) continue;
      for (const p of market.positions) if (p.accountId !== FUND_ACCOUNT) accounts.add(p.accountId);
      for (const id of market.accountsWithOrders) if (id !== FUND_ACCOUNT) accounts.add(id);
    }
    for (const id of [...accounts].sort((a, b) => a - b)) this.checkAccount(id);
  }

  /**
   * Liquidates what is below maintenance, then takes out of the book the account's resting orders
   * that could no longer fill inside their position's bound (engine.cancelRefusedMakers): the
   * marks that just moved are what moves that bound.
   */
  private checkAccount(accountId: number): void {
    const account = this.engine.findAccount(accountId);
    if (account === undefined) return;
    const cross = this.crossHealth(account);
    if (cross.maintenance > 0n && cross.equity < cross.maintenance) this.liquidateCross(accountId);
    for (const p of [...account.positions.values()]) {
      if (p.marginMode !== 'isolated' || p.size === 0) continue;
      const health = isolatedHealth(p);
      if (health !== null && health.equity < health.maintenance) this.liquidateIsolated(p);
    }
    this.engine.cancelRefusedMakers(accountId);
  }

  private liquidateCross(accountId: number): void {
    this.engine.cancelAccountOrders(accountId, null);
    const account = this.engine.findAccount(accountId)!;
    let target: Position | null = null;
    for (const p of account.positions.values()) {
      if (p.marginMode !== 'cross' || p.size === 0 || p.market.mark === null) continue;
      if (target === null || p.cachedMM > target.cachedMM) target = p;
    }
    if (target === null) return;
    this.liquidatePosition(target, () => this.crossHealth(account));
  }

  /**
   * A cross account's health: its equity with profit only where it can be realised now (an open
   * market at a fresh mark, cash.ts settleProfit), against the maintenance margin of all its cross
   * positions, and its cross cash. Profit at a stale mark (the index down, an expired future not
   * yet settled) cannot pay a loss: counted, it would keep a losing position open past the cash and
   * the fund would pay the loss while the profit stayed with the account. Losses count at any mark.
   * An account solvent only through such profit is therefore liquidated (its positions with a
   * fresh mark); it keeps that profit.
   */
  private crossHealth(account: LinearAccount): { equity: Fixed; maintenance: Fixed; cash: Fixed } {
    const risk = accountRisk(account, this.engine.balance(account.id));
    const equity = crossPool(account, risk.balance, this.engine.makers.realisable).equity;
    return { equity, maintenance: risk.positionMM, cash: risk.balance - risk.isolatedAllocated };
  }

  private liquidateIsolated(p: Position): void {
    this.engine.cancelAccountOrders(p.accountId, { market: p.market, mode: 'isolated' });
    this.liquidatePosition(p, () => {
      const h = isolatedHealth(p);
      return { equity: h?.equity ?? 0n, maintenance: h?.maintenance ?? 0n, cash: p.isolatedMargin };
    });
  }

  /**
   * The liquidation ladder for one position; `health` re-reads the equity, maintenance margin and
   * the cash behind the position (cross collateral or the isolated allocation) after each step.
   */
  private liquidatePosition(p: Position, health: () => { equity: Fixed; maintenance: Fixed; cash: Fixed }): void {
    const now = this.deps.now();
    const market = p.market;
    const mark = market.mark;
    if (mark === null) return;
    let h = health();
    if (h.equity >= h.maintenance) return;
    const severe = h.equity * 3n < h.maintenance * 2n;
    const lots = this.chunkLots(p, mark, now, severe);
    let unfilled = false;
    if (lots > 0) {
      const side = p.size > 0 ? SELL : BUY;
      const limit = bankruptcyTicks(p, h.equity, mark);
      const account = this.engine.account(p.accountId);
      const crossCashBefore = this.engine.cash.crossCash(account);
      const order = this.engine.liquidationOrder(p.accountId, market, p.marginMode, side, lots, limit);
      p.lastLiquidationAt = now;
      const after = health();
      // Cross: the equity pays (the engine realises profit where the cash is short). Isolated: the
      // allocation is all the position has; closed in full, it has already released what was left
      // of it (allocation + PnL − fill fees, never below zero) to the cross cash: that pays.
      let payable = p.marginMode === 'cross' || after.equity < after.cash ? after.equity : after.cash;
      if (p.marginMode === 'isolated' && p.size === 0) payable = this.engine.cash.crossCash(account) - crossCashBefore;
      this.chargeLiquidationFee(p, order.filledNotional, payable);
      if (p.size === 0) p.status = 'liquidated';
      unfilled = order.filledLots < lots;
      h = health();
    }
    if (p.size !== 0 && h.equity < h.maintenance && (severe || unfilled)) this.backstop(p, h.cash, mark);
  }

  /** Lots to send now: 20 % chunks above the partial threshold, one per cooldown, all when severe. */
  private chunkLots(p: Position, mark: Fixed, now: number, severe: boolean): number {
    const size = Math.abs(p.size);
    const l = this.settings.liquidation;
    if (severe || p.notional(mark) <= l.partialAboveNotional) return size;
    if (now - p.lastLiquidationAt < l.cooldownMs) return 0;
    return Math.min(size, Math.max(1, Math.ceil((size * l.partialBps) / 10_000)));
  }

  /**
   * The liquidation fee, capped at what the position's side can pay now (`payable`: a cross
   * account's equity, an isolated position's lesser of equity and allocation): never out of a
   * deficit. A cross account whose cash is short pays out of its realised profit (engine
   * settleProfit), never out of cash the fund has put in.
   */
  private chargeLiquidationFee(p: Position, filledNotional: Fixed, payable: Fixed): void {
    if (filledNotional === 0n || payable <= 0n) return;
    const unit = unitOf(this.deps.settlementDecimals);
    const fee = divRound(filledNotional * BigInt(this.settings.liquidation.feeBps), 10_000n * unit, 'ceil') * unit;
    const charged = fee < payable ? fee : payable - (payable % unit);
    if (charged > 0n) this.engine.cash.chargeLiquidationFee(p, charged);
  }

  /**
   * The insurance fund takes the rest of the position at the mark and pays the account's deficit;
   * when the fund cannot pay it, the position is deleveraged at the bankruptcy price instead.
   */
  private backstop(p: Position, cash: Fixed, mark: Fixed): void {
    const deficit = -(cash + p.unrealized(mark));
    if (!this.fundCanCarry(p, deficit > 0n ? deficit : 0n, mark)) {
      this.deleverage(p, cash);
      return;
    }
    const ticks = Number(divRound(mark, p.market.units.tick, 'halfUp'));
    this.engine.transferPosition(p, FUND_ACCOUNT, 'cross', Math.abs(p.size), ticks, 'backstop');
    if (p.size === 0) p.status = 'liquidated';
  }

  /**
   * Whether the fund can take `p` over: its equity (cash plus the unrealised PnL of the positions
   * it already holds), after paying `deficit`, must still cover the maintenance margin of all it
   * would then hold. Cash alone is not enough: an empty fund, or one sitting on losses in a crash,
   * would keep taking positions it cannot carry, and their losses would drive it below zero.
   */
  private fundCanCarry(p: Position, deficit: Fixed, mark: Fixed): boolean {
    const fund = this.engine.account(FUND_ACCOUNT);
    const risk = accountRisk(fund, this.deps.ledger.balance(fund.perpsLedger));
    const maintenance = risk.positionMM + p.market.margin.maintenance(p.notional(mark));
    return risk.crossEquity - deficit >= maintenance;
  }

  /**
   * Closes `p` against the most profitable opposite positions (valued at `mark`) at the price where
   * its cash is zero. The account's own opposite position in the market (its other margin mode)
   * comes last: it absorbs what other accounts do not hold, so `p` always closes in full (longs
   * equal shorts). Between two positions of one account the trade moves no money out of it: what
   * one loses at that price the other gains, the bankrupt side's loss stopping at its cash.
   */
  private deleverage(p: Position, cash: Fixed, mark: Fixed = p.market.mark!): void {
    const market = p.market;
    const size = market.units.size(p.size);
    const bankrupt = divRound((p.cost - cash) * SCALE, size, p.size > 0 ? 'ceil' : 'floor');
    const ticks = Number(divRound(bankrupt, market.units.tick, p.size > 0 ? 'ceil' : 'floor'));
    const own = (q: Position) => (q.accountId === p.accountId ? 1 : 0);
    const candidates = [...market.positions]
      .filter((q) => q !== p && q.size !== 0 && Math.sign(q.size) !== Math.sign(p.size))
      .map((q) => ({ q, score: q.cost === 0n ? 0n : divRound(q.unrealized(mark) * SCALE, abs(q.cost), 'trunc') }))
      .sort((a, b) => own(a.q) - own(b.q) ||
        (b.score > a.score ? 1 : b.score < a.score ? -1 : Math.abs(b.q.size) - Math.abs(a.q.size) || a.q.accountId - b.q.accountId));
    for (const { q } of candidates) {
      if (p.size === 0) break;
      const lots = Math.min(Math.abs(q.size), Math.abs(p.size));
      this.engine.adlTrade(p, q, lots, Math.max(1, ticks));
    }
    if (p.size === 0) p.status = 'liquidated'; // never while it stays open
  }

  /** The fund closes what it took over, only at the mark or better, as the book allows. */
  private unwindFund(): void {
    const fund = this.engine.findAccount(FUND_ACCOUNT);
    if (fund === undefined) return;
    for (const p of [...fund.positions.values()]) {
      const mark = p.market.mark;
      if (p.size === 0 || mark === null || p.market.status !== 'open') continue;
      const ticks = Number(divRound(mark, p.market.units.tick, p.size > 0 ? 'ceil' : 'floor'));
      this.engine.liquidationOrder(FUND_ACCOUNT, p.market, p.marginMode, p.size > 0 ? SELL : BUY, Math.abs(p.size), ticks);
    }
    this.deleverageFund(fund);
  }

  /**
   * A fund whose equity falls below the maintenance margin of what it holds cannot carry it: its
   * positions are deleveraged against the most profitable opposite positions, at the mark while
   * its equity is positive and at the price where its equity is zero otherwise, so its losses stop
   * where its money does (the fund is exempt from the liquidation checks, mechanics.md 1.7 (5)).
   */
  private deleverageFund(fund: LinearAccount): void {
    for (const p of [...fund.positions.values()]) {
      const mark = p.market.mark;
      if (p.size === 0 || mark === null || p.market.status !== 'open') continue;
      const risk = accountRisk(fund, this.deps.ledger.balance(fund.perpsLedger));
      if (risk.crossEquity >= risk.positionMM) return;
      // The cash behind p for deleverage(): closes p at the mark, or where the fund's equity is zero.
      const equity = risk.crossEquity < 0n ? risk.crossEquity : 0n;
      this.deleverage(p, equity - p.unrealized(mark));
    }
  }

  // ---- expiry ----

  /**
   * Expires the dated futures whose expiry time has come, and settles those whose settlement price
   * is known. Run first by every command that moves marks (clock ticks and index inputs): between
   * the expiry instant and the next tick a mark move would otherwise re-mark the market, fire its
   * stop orders and liquidate into its book after trading stopped.
   */
  expireDue(now: number): void {
    for (const market of this.engine.markets.values()) {
      if (market.spec.expiry !== null && now >= market.spec.expiry && !market.settled) this.expire(market, now);
    }
  }

  private expire(market: LinearMarket, now: number): void {
    if (market.status === 'open') {
      market.status = 'expired';
      this.engine.cancelMarketOrders(market, 'expired');
    }
    const expiry = market.spec.expiry!;
    if (now < expiry) return;
    // The settlement price is the index TWAP of the final window; a window without one fresh index
    // (the feed was down throughout) settles at the first fresh index after expiry instead, so a
    // market never stays unsettled with its positions locked.
    const underlying = market.spec.underlying;
    const price = this.deps.index.twap(underlying, expiry - MARK_SETTINGS.settlementWindowMs, expiry)
      ?? this.deps.index.index(underlying, now)?.price ?? null;
    if (price === null) return;
    const ticks = Number(divRound(price, market.units.tick, 'halfUp'));
    market.settlementPrice = market.units.price(ticks);
    this.deleverageSettlementDeficits(market, market.settlementPrice);
    this.engine.settleMarket(market, ticks);
    this.engine.cash.sweepClearing(market);
    market.settled = true;
  }

  /**
   * The settlement price may lie past a position's bankruptcy price (a final window without a fresh
   * index settles at the first index after expiry, however far from the last mark). Such a deficit
   * is the insurance fund's only while the fund can carry it, by fundCanCarry's rule (its equity
   * after paying still covers the maintenance margin of what it holds, its own position here valued
   * at the settlement price); settleMarket then has the fund pay it (coverShortfall). A deficit it
   * cannot carry is socialised as in liquidation: the position is closed at its bankruptcy price
   * against the winning side, most profitable first (deleverage), and they settle the rest at the
   * settlement price. Invariant: the fund never pays more than it holds (up to rounding dust).
   */
  private deleverageSettlementDeficits(market: LinearMarket, price: Fixed): void {
    const realisable = this.engine.makers.realisable;
    let fund = this.fundAt(market, price);
    const own = this.engine.account(FUND_ACCOUNT).position(market, 'cross');
    if (own !== undefined && own.size !== 0 && fund.equity < 0n && own.unrealized(price) < 0n) {
      // The fund's own position loses past its equity: closed where that equity is zero (as
      // deleverageFund does), its cash behind it being the equity without it.
      this.deleverage(own, fund.equity - own.unrealized(price), price);
      fund = this.fundAt(market, price);
    }
    let room = fund.equity - fund.maintenance;
    for (const p of [...market.positions]) {
      if (p.size === 0 || p.accountId === FUND_ACCOUNT) continue;
      const cash = this.engine.cash.unitsDown(this.settlementCash(p, price, realisable));
      const deficit = this.engine.cash.unitsUp(-(cash + p.unrealized(price)));
      if (deficit <= 0n) continue;
      if (deficit <= room) room -= deficit;
      else this.deleverage(p, cash, price);
    }
  }

  /**
   * The fund at settlement: its equity (cash plus unrealised PnL at the risk marks, its position in
   * the settling `market` at `price`) and the maintenance margin of what it holds elsewhere (what
   * it must still carry after paying; fundCanCarry's rule).
   */
  private fundAt(market: LinearMarket, price: Fixed): { equity: Fixed; maintenance: Fixed } {
    const fund = this.engine.account(FUND_ACCOUNT);
    const risk = accountRisk(fund, this.deps.ledger.balance(fund.perpsLedger));
    let equity = risk.crossEquity;
    let maintenance = risk.positionMM;
    const own = fund.position(market, 'cross');
    const mark = riskMark(market);
    if (own !== undefined && own.size !== 0 && mark !== null) {
      equity += own.unrealized(price) - own.unrealized(mark);
      maintenance -= market.margin.maintenance(own.notional(mark));
    }
    return { equity, maintenance };
  }

  /**
   * The cash that pays `p`'s settlement loss (what settleMarket's coverShortfall draws on before the
   * fund): an isolated position's allocation; for a cross position the cross cash, the profit
   * settleProfit can realise, and what the account's isolated position here releases as it settles.
   */
  private settlementCash(p: Position, price: Fixed, realisable: Realisable): Fixed {
    if (p.marginMode === 'isolated') return p.isolatedMargin;
    const account = this.engine.account(p.accountId);
    let cash = crossPool(account, this.engine.balance(p.accountId), realisable).available;
    const isolated = account.position(p.market, 'isolated');
    const released = isolated === undefined || isolated.size === 0 ? 0n : isolated.isolatedMargin + isolated.unrealized(price);
    if (released > 0n) cash += released;
    return cash;
  }
}

function abs(a: Fixed): Fixed {
  return a < 0n ? -a : a;
}

export type { MarginMode };
