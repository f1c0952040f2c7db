/**
 * A position in one market under one margin mode. Size is signed lots (long > 0). The cost basis
 * is the exact signed sum of entry notional (price x size) of the open lots, so the entry price is
 * cost / size and nothing is lost to averaging: reducing by part of the size releases the same
 * fraction of the cost (rounded toward zero, the remainder staying in the basis), and closing the
 * whole position releases the rest, so the PnL realised over a position's life is exact.
 *
 * Isolated positions carry their own margin (`isolatedMargin`, an allocation inside the perps
 * bucket): realised PnL of the position is added to it and what is left returns to the free
 * collateral when the position closes.
 */
import { divRound, SCALE, type Fixed } from '../money.ts';
import type { MarginMode, PositionRecord, PositionSide, PositionStatus } from '../records.ts';
import type { LinearMarket } from './market.ts';

export interface FillEffect {
  /** Realised PnL of the lots this fill closed (exact, before rounding to the ledger). */
  readonly realized: Fixed;
  /** Lots of the fill that reduced the position (0..|fill|). */
  readonly closedLots: number;
}

export class Position {
  /** Signed lots. */
  size = 0;
  /** The side of the open lots; a closed position keeps the side it had (its records show it). */
  side: PositionSide = 'long';
  /** Signed entry notional of the open lots. */
  cost: Fixed = 0n;
  /** Realised PnL posted to the ledger over this position's life (rounded as posted). */
  realizedPnl: Fixed = 0n;
  isolatedMargin: Fixed = 0n;
  status: PositionStatus = 'open';
  /** Cumulative funding index the position last settled at (perps). */
  fundingIndex: Fixed = 0n;
  /** Funding received (positive) or paid (negative) over this position's life. */
  funding: Fixed = 0n;
  /**
   * Lots of this position's reduce-only orders resting in the book (engine.ts countResting). While
   * they fit inside the position, a fill that shrinks it has nothing to trim. Audited (engine.audit).
   */
  restingReduceOnlyLots = 0;
  /** When the last liquidation chunk was sent (the partial-liquidation cooldown). */
  lastLiquidationAt = 0;
  updatedAt: number;
  /** The last snapshot taken (records.ts positionRecord) and the size and cost it was taken at. */
  lastRecord: PositionRecord | null = null;
  lastRecordSize = 0;
  lastRecordCost: Fixed = 0n;
  /** Valuation at the market's risk mark, cached for mark version `cachedVersion` (-1: stale). */
  cachedVersion = -1;
  cachedNotional: Fixed = 0n;
  cachedUnrealized: Fixed = 0n;
  cachedIM: Fixed = 0n;
  cachedMM: Fixed = 0n;

  constructor(
    readonly id: string,
    readonly accountId: number,
    readonly market: LinearMarket,
    readonly marginMode: MarginMode,
    readonly openedAt: number,
  ) {
    this.updatedAt = openedAt;
  }

  /** Applies a fill of `lots` (signed: + buy, - sell) at `priceTicks`. */
  applyFill(lots: number, priceTicks: number, now: number): FillEffect {
    const units = this.market.units;
    this.updatedAt = now;
    this.cachedVersion = -1;
    const size = this.size;
    if (size === 0 || Math.sign(size) === Math.sign(lots)) {
      if (size === 0) this.side = lots < 0 ? 'short' : 'long';
      this.size = size + lots;
      this.cost += signedNotional(units.notional(priceTicks, Math.abs(lots)), lots);
      return { realized: 0n, closedLots: 0 };
    }
    const closing = Math.min(Math.abs(lots), Math.abs(size));
    const closedCost = closing === Math.abs(size) ? this.cost : divRound(this.cost * BigInt(closing), BigInt(Math.abs(size)), 'trunc');
    const exitValue = signedNotional(units.notional(priceTicks, closing), size);
    // long: exit value - entry cost; short: entry cost (negative) - exit value (negative)
    const realized = exitValue - closedCost;
    this.cost -= closedCost;
    this.size = size + Math.sign(lots) * closing;
    const opening = Math.abs(lots) - closing;
    if (opening > 0) {
      this.side = lots < 0 ? 'short' : 'long';
      this.size = Math.sign(lots) * opening;
      this.cost = signedNotional(units.notional(priceTicks, opening), lots);
    }
    return { realized, closedLots: closing };
  }

  /**
   * A detached copy of what a fill changes (size, entry cost, allocation), for a prediction that
   * plays fills forward without touching the position (checks.ts fokFillableLots).
   */
  scratchCopy(): Position {
    const copy = new Position(this.id, this.accountId, this.market, this.marginMode, this.openedAt);
    copy.size = this.size;
    copy.side = this.side;
    copy.cost = this.cost;
    copy.isolatedMargin = this.isolatedMargin;
    return copy;
  }

  /**
   * An isolated position gives back the allocation share of `closedLots` (of the `before` it held)
   * with their realised PnL to the cross pool, but never a negative amount: a loss beyond that
   * share stays with (and eats into) the rest of the allocation, so no part of an isolated loss
   * ever leaks onto the cross collateral. A full close keeps no allocation; what is left below zero
   * is the insurance fund's (cash.ts coverIsolated).
   */
  releaseClosedShare(before: number, closedLots: number, realized: Fixed): void {
    const share = (this.isolatedMargin * BigInt(closedLots)) / BigInt(Math.abs(before));
    const released = share + realized;
    this.isolatedMargin -= share;
    if (released < 0n) this.isolatedMargin += released;
    if (Math.abs(before) === closedLots && this.isolatedMargin > 0n) this.isolatedMargin = 0n;
  }

  entryPrice(): Fixed | null {
    if (this.size === 0) return null;
    return divRound(this.cost * SCALE, this.market.units.size(this.size), 'halfUp');
  }

  /** Unrealised PnL at `mark`: size x mark - cost. */
  unrealized(mark: Fixed): Fixed {
    if (this.size === 0) return 0n;
    return divRound(mark * this.market.units.size(this.size), SCALE, 'floor') - this.cost;
  }

  /** Absolute notional at `mark`. */
  notional(mark: Fixed): Fixed {
    const n = divRound(mark * this.market.units.size(Math.abs(this.size)), SCALE, 'ceil');
    return n;
  }
}

function signedNotional(notional: Fixed, signOf: number): Fixed {
  return signOf < 0 ? -notional : notional;
}
