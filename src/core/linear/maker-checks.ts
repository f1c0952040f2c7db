/**
 * Whether a resting order may fill at its price now, without its owner going bankrupt on the
 * fill: the insurance fund would pay the loss and the taker would keep it. The margin gate
 * reserved for the order when it was placed, but funding, fees, marks and the owner's other
 * orders and positions have moved since. Two bounds, both at the fill's price:
 * - an order that reduces a position stays within the position's bankruptcy price (`bound`);
 * - an order that opens (or flips) must leave the cross equity, less what the account's resting
 *   reduce-only orders would lose, at or above zero after what its fill takes from the cross
 *   pool: its loss at the mark and its fee, and for an isolated order the new allocation
 *   (`opensWithinEquity`).
 * A refused order is cancelled instead (INSUFFICIENT_MARGIN). Asked before each maker fill (the
 * engine is the book's MatchSink and answers its `admits` from here), by the checks that predict
 * a match (fill-or-kill, liquidity, the sweep estimate), and by the sweep after a mark move
 * (engine.ts `cancelRefusedMakers`). The cash read includes the realised PnL and fees the current
 * execution has not posted yet (cash.ts `pendingOf`), so it matches the positions.
 */
import { BUY } from '../book/order-book.ts';
import { roundTo, type Fixed } from '../money.ts';
import type { FeeRole, FeeSchedule, VolumeTracker } from '../risk/fees.ts';
import type { LinearAccount } from './account.ts';
import {
  closeBoundTicks, closingNotional, crossPool, fillLossAt, leveragedOpening, notionalAt, openLossAt, ownReduceOnlyLoss,
  heldOnSide, reduceOnlyOpenLoss, reduces, riskMark, type Realisable,
} from './margin.ts';
import type { LinearMarket } from './market.ts';
import type { LinearOrder } from './order.ts';
import type { Position } from './position.ts';

export interface MakerCheckDeps {
  readonly fees: FeeSchedule;
  readonly volumes: VolumeTracker;
  readonly settlementDecimals: number;
  now(): number;
  findAccount(id: number): LinearAccount | undefined;
  /** The account's perps cash with what the current execution realised and charged but has not posted. */
  cashOf(accountId: number): Fixed;
  /** The market's mark at `now` while its index is fresh, else null. */
  markAt(market: LinearMarket, now: number): Fixed | null;
}

export class MakerChecks {
  constructor(private readonly deps: MakerCheckDeps) {}

  /** Whether cross profit in `market` can be realised now (cash.ts settleProfit's test; margin.ts Realisable). */
  readonly realisable: Realisable = (market) => market.status === 'open' && this.deps.markAt(market, this.deps.now()) !== null;

  /**
   * Whether `maker` may fill now (above). `spent` is what a prediction's earlier fills of the same
   * owner took from its equity (fillCost), `played` its isolated position after those that reduced
   * it (playIsolatedFill), and `heldLots` what its position holds on the order's side after all of
   * them (isolatedOpening's base); a real fill asks with none.
   */
  admits(maker: LinearOrder, spent: Fixed = 0n, played: Position | undefined = undefined, heldLots?: number): boolean {
    const account = this.deps.findAccount(maker.owner);
    if (account === undefined) return true;
    const p = played ?? account.position(maker.market, maker.request.marginMode);
    return fillsWithin(maker, this.bound(maker, account, p, spent)) && this.opensWithinEquity(maker, account, p, spent, heldLots);
  }

  /**
   * The bound of a resting order that reduces its owner's position, or null when it has none (it
   * does not reduce a position, or no mark). `p`: the owner's position in the order's market and mode.
   */
  bound(maker: LinearOrder, account: LinearAccount, p: Position | undefined, spent: Fixed): number | null {
    if (p === undefined || !reduces(p.size, maker.side)) return null;
    const mark = riskMark(maker.market);
    if (mark === null) return null;
    const fee = this.deps.fees.fee(closingNotional(p, mark), this.feeRate(maker.owner, 'taker'));
    return closeBoundTicks(p, account, this.deps.cashOf(maker.owner) - spent, fee, mark, maker.remainingLots, maker, this.realisable);
  }

  /**
   * Whether the lots of a resting order that open a position (all of it, or what exceeds the
   * position it reduces) can fill at its price without leaving its owner bankrupt. The cross
   * equity (profit only where realisable), less the open loss its resting reduce-only orders keep
   * (a flip's own position's are left out: its fill cancels them) and `spent`, must pay:
   * - for a cross order, the fill's loss at the mark and its fee (fillCost);
   * - for an isolated one, what the fill moves from the cross pool into the new allocation: its
   *   initial margin, open loss and fee (and a flip's closing fee), as far as the cross cash and
   *   realisable profit hold it (cash.ts settleOpeningCharges); what they cannot, the allocation
   *   goes without, which must still leave it the open loss and the fees.
   */
  opensWithinEquity(maker: LinearOrder, account: LinearAccount, p: Position | undefined, spent: Fixed, heldLots?: number): boolean {
    const mode = maker.request.marginMode;
    const flips = p !== undefined && reduces(p.size, maker.side);
    const opening = flips ? maker.remainingLots - Math.abs(p.size) : maker.remainingLots;
    if (opening <= 0) return true;
    const held = heldLots ?? heldOnSide(p?.size ?? 0, maker.side);
    let cost = mode === 'cross' ? this.fillCost(maker, maker.remainingLots, held) : this.fillCost(maker, opening, held);
    if (mode === 'isolated' && flips) cost += this.makerFee(maker, maker.remainingLots - opening);
    if (cost === 0n && spent === 0n) return true; // at or better than the mark, no fee: nothing to cover
    let reserved = reduceOnlyOpenLoss(account);
    if (flips && mode === 'cross') reserved -= ownReduceOnlyLoss(p, account);
    const pool = crossPool(account, this.deps.cashOf(maker.owner), this.realisable);
    const equity = pool.equity - reserved - spent;
    if (mode === 'cross') return equity >= cost;
    const available = pool.available - spent;
    const moved = cost < available ? cost : available;
    const margin = leveragedOpening(maker.market, held, opening, maker.market.units.price(maker.priceTicks), maker.request.leverage);
    return moved <= equity && moved >= cost - margin;
  }

  /**
   * A sufficient test, for the sweep, that every cross order of the account passes
   * opensWithinEquity now: the cross equity, less every reduce-only loss it keeps, covers the
   * worst any one of them could cost, bounded by all of them together (a bid cannot lose more than
   * its notional, an ask more than its lots at the mark, and the maker fee grows with the notional).
   * One comparison per account instead of a loss and a fee per order; when it fails, each order is
   * asked. Cancelling orders only lowers the bound and the reduce-only losses, so an answer of true
   * holds for the rest of a sweep.
   */
  crossOpeningsCovered(account: LinearAccount): boolean {
    const rate = this.feeRate(account.id, 'maker');
    let worst = 0n;
    for (const t of account.totals.values()) {
      if (t.mode !== 'cross' || t.isEmpty()) continue;
      const mark = riskMark(t.market);
      if (mark === null) continue; // fillCost is 0 without a mark
      const notional = t.buyNotional + t.sellNotional;
      worst += t.buyNotional + (t.sellLots === 0 ? 0n : notionalAt(t.sellLots, t.market, mark));
      if (rate > 0n) worst += this.deps.fees.fee(notional, rate);
    }
    if (worst === 0n) return true;
    const equity = crossPool(account, this.deps.cashOf(account.id), this.realisable).equity - reduceOnlyOpenLoss(account);
    return equity >= worst;
  }

  /**
   * What filling `lots` of a resting order takes from its owner's cross pool: for a cross order,
   * their loss at the risk mark and the maker fee; for an isolated one, which opens (or adds to) its
   * position with them, the allocation the cross pool funds (their initial margin at the price and
   * their open loss at the mark, engine.ts adjustIsolated) and the fee. A rebate counts as nothing.
   * 0 without a mark (no order that adds risk trades then). `heldLots`: what the maker's position
   * holds on the order's side before the fill (0 when it holds nothing there or the fill flips it).
   */
  fillCost(maker: LinearOrder, lots: number, heldLots: number): Fixed {
    const mark = riskMark(maker.market);
    if (mark === null) return 0n;
    const fee = this.makerFee(maker, lots);
    if (maker.request.marginMode === 'cross') return fillLossAt(maker, lots, mark) + fee;
    const market = maker.market;
    const price = market.units.price(maker.priceTicks);
    return leveragedOpening(market, heldLots, lots, price, maker.request.leverage) + openLossAt(market, maker.side === BUY, price, lots, mark) + fee;
  }

  /**
   * At least what filling `lots` of a resting order takes from its owner's equity, for a
   * prediction: fillCost, and for a fill that reduces the maker's position the settlement unit its
   * PnL may lose to rounding down (so the fill-or-kill walk never admits a maker the match then refuses).
   */
  predictedCost(maker: LinearOrder, lots: number, heldLots: number): Fixed {
    const size = this.deps.findAccount(maker.owner)?.position(maker.market, maker.request.marginMode)?.size ?? 0;
    return this.fillCost(maker, lots, heldLots) + (reduces(size, maker.side) ? roundTo(1n, this.deps.settlementDecimals, 'ceil') : 0n);
  }

  /**
   * Plays a maker fill that reduces an isolated position forward on a scratch copy of it
   * (Position.scratchCopy), as the match would apply it: the fee out of the allocation (engine.ts
   * settleSide), the fill (movePosition, its PnL rounded as posted) and the closed share given back
   * (adjustIsolated). The fill-or-kill walk asks the position's next order against the result.
   */
  playIsolatedFill(scratch: Position, maker: LinearOrder, lots: number): void {
    const signed = maker.side === BUY ? lots : -lots;
    if (reducedOnly(scratch.size, signed)) {
      scratch.isolatedMargin -= this.deps.fees.fee(maker.market.units.notional(maker.priceTicks, lots), this.feeRate(maker.owner, 'maker'));
    }
    const before = scratch.size;
    const effect = scratch.applyFill(signed, maker.priceTicks, this.deps.now());
    const realized = roundTo(effect.realized, this.deps.settlementDecimals, 'floor');
    if (effect.closedLots > 0) scratch.releaseClosedShare(before, effect.closedLots, realized);
  }

  /** An account's fee rate in `role` now, from its rolling 30-day volume. */
  feeRate(owner: number, role: FeeRole): Fixed {
    return this.deps.fees.rateFor(this.deps.volumes.volume30d(owner, this.deps.now()), role);
  }

  /** The maker fee of `lots` of a resting order at its price, 0 for a rebate. */
  private makerFee(maker: LinearOrder, lots: number): Fixed {
    const bps = this.feeRate(maker.owner, 'maker');
    return bps > 0n && lots > 0 ? this.deps.fees.fee(maker.market.units.notional(maker.priceTicks, lots), bps) : 0n;
  }
}

/** Whether `o` may fill at its own price under `bound` (null: it has none). */
export function fillsWithin(o: LinearOrder, bound: number | null): boolean {
  return bound === null || (o.side === BUY ? o.priceTicks <= bound : o.priceTicks >= bound);
}

/** Whether a signed trade of `lots` against a position of `size` only reduces it (no open, no flip). */
export function reducedOnly(size: number, lots: number): boolean {
  return size !== 0 && Math.sign(size) !== Math.sign(lots) && Math.abs(lots) <= Math.abs(size);
}
