/**
 * How a position stands at a mark (unrealised PnL, leverage, liquidation price): the position as it
 * is, for GET /perps/positions (views.ts), and as an order would leave it, for POST
 * /perps/orders/preview (engine.ts preview). One formula serves both, so the price a preview
 * estimates is the price the position view shows once the order has filled as assumed.
 *
 * Liquidation price: the mark at which the position's equity would meet its maintenance margin,
 * with every other position held at its current mark and the position's own tier rate (the
 * Hyperliquid-style estimate, docs/architecture.md "Linear engine"):
 *   isolated: m = (cost − isolatedMargin) / (size − |size|·mmr)
 *   cross:    m = (MM_others − crossEquity + size·mark) / (size − |size|·mmr)
 * (size and cost signed, in base units and USDC), rounded to the tick. Null when no such positive
 * price exists (a flat position, or one the mark cannot take to its maintenance margin).
 *
 * The order's estimate: its position after the order fills in full at one price, its expected
 * average fill rounded to the tick (the plan's notional over the lots it values: a resting or
 * conditional limit order's own price, a market or ioc order's walk of the book for what it can
 * take now, a stop-market's mark), with the plan's fee. The fill is played on a scratch copy of the
 * position as the engine plays a fill (engine.ts settleSide, movePosition, adjustIsolated): the fee
 * of a fill that only reduces an isolated position comes out of its allocation, the realised PnL
 * (rounded down to the settlement unit) and the closed share are released, opened lots bring their
 * initial margin and open loss at the mark. A cross position is valued with the account's cross
 * equity and maintenance margin as its cached risk figures hold them (margin.ts accountRisk), this
 * position's old valuation swapped for its new one, the realised PnL added and the fee taken.
 * Nothing else is revalued. An order that fills at several prices leaves a position a little off
 * the estimate (each fill's margin and rounding are its own); one that fills at the assumed price
 * leaves exactly the estimated one (test/api/perps-preview-estimate.test.ts).
 */
import { BUY } from '../book/order-book.ts';
import { divRound, roundTo, SCALE, type Fixed } from '../money.ts';
import type { MarginMode } from '../records.ts';
import type { LinearAccount } from './account.ts';
import { reducedOnly } from './maker-checks.ts';
import { accountRisk, leveragedOpening, notionalAt, openLossAt, type AccountRisk } from './margin.ts';
import type { LinearMarket } from './market.ts';
import { Position } from './position.ts';

/** The account's cross figures a cross position is valued with, this position included at the mark. */
export type CrossFigures = Pick<AccountRisk, 'crossEquity' | 'positionMM'>;

export interface Standing {
  /** Absolute notional at the mark. */
  readonly notional: Fixed;
  readonly unrealized: Fixed;
  readonly liquidationPrice: Fixed | null;
  /** Notional over the equity behind the position (null without equity). */
  readonly leverage: Fixed | null;
}

/** How `p` stands at `mark`; `cross` is read for a cross position only. */
export function standing(p: Position, mark: Fixed, cross: CrossFigures): Standing {
  const notional = p.notional(mark);
  const unrealized = p.unrealized(mark);
  const equity = p.marginMode === 'isolated' ? p.isolatedMargin + unrealized : cross.crossEquity;
  return {
    notional,
    unrealized,
    liquidationPrice: liquidationPrice(p, mark, notional, cross),
    leverage: equity > 0n ? divRound(notional * SCALE, equity, 'halfUp') : null,
  };
}

function liquidationPrice(p: Position, mark: Fixed, notional: Fixed, cross: CrossFigures): Fixed | null {
  const market = p.market;
  const size = market.units.size(p.size); // signed base units
  const mmr = market.margin.maintenanceRate(notional);
  const denominator = size - divRound((size < 0n ? -size : size) * mmr, SCALE, 'trunc');
  if (denominator === 0n) return null;
  const numerator = p.marginMode === 'isolated'
    ? p.cost - p.isolatedMargin
    : cross.positionMM - market.margin.maintenance(notional) - cross.crossEquity + divRound(size * mark, SCALE, 'trunc');
  const liq = divRound(numerator * SCALE, denominator, 'halfUp');
  const tick = market.units.tick;
  return liq > 0n ? tick * divRound(liq, tick, 'halfUp') : null;
}

/** One fill of the order, as the estimate assumes it: `lots` on `side` at `priceTicks`, paying `fee`. */
export interface AssumedFill {
  readonly side: 0 | 1;
  readonly lots: number;
  readonly priceTicks: number;
  readonly fee: Fixed;
  /** The order's chosen leverage (isolated; undefined: the tiers' margin), margin.ts leveragedOpening. */
  readonly leverage?: Fixed;
}

/** The order's position once it has filled as assumed, valued at the mark. */
export interface PositionEstimate {
  /** Signed base units (long > 0); 0 when the fill leaves the position flat. */
  readonly size: Fixed;
  readonly entryPrice: Fixed | null;
  readonly liquidationPrice: Fixed | null;
  readonly leverage: Fixed | null;
}

/**
 * The expected average fill of an order whose plan values `lots` at `notional` (checks.ts
 * OrderPlan), in whole ticks (rounded half up); null when it fills nothing.
 */
export function averageFillTicks(market: LinearMarket, lots: number, notional: Fixed): number | null {
  if (lots === 0) return null;
  return Number(divRound(notional, market.units.notionalUnit * BigInt(lots), 'halfUp'));
}

export function estimateAfterFill(
  account: LinearAccount, balance: Fixed, market: LinearMarket, mode: MarginMode, fill: AssumedFill, mark: Fixed,
  settlementDecimals: number, now: number,
): PositionEstimate {
  const held = account.position(market, mode);
  const p = held?.scratchCopy() ?? new Position('estimate', account.id, market, mode, now);
  const signed = fill.side === BUY ? fill.lots : -fill.lots;
  const before = p.size;
  if (mode === 'isolated' && fill.fee !== 0n && reducedOnly(before, signed)) p.isolatedMargin -= fill.fee;
  coverIsolated(p, settlementDecimals);
  const effect = fill.lots === 0 ? { realized: 0n, closedLots: 0 } : p.applyFill(signed, fill.priceTicks, now);
  const realized = roundTo(effect.realized, settlementDecimals, 'floor');
  if (mode === 'isolated') {
    if (effect.closedLots > 0) p.releaseClosedShare(before, effect.closedLots, realized);
    if (p.size === 0) p.isolatedMargin = 0n;
    coverIsolated(p, settlementDecimals);
    const opened = fill.lots - effect.closedLots;
    if (opened > 0) {
      const price = market.units.price(fill.priceTicks);
      const heldLots = effect.closedLots > 0 ? 0 : Math.abs(before); // a flip opens from nothing
      p.isolatedMargin += leveragedOpening(market, heldLots, opened, price, fill.leverage) + openLossAt(market, p.size > 0, price, opened, mark);
    }
  }
  if (p.size === 0) return FLAT;
  const cross = mode === 'cross' ? crossAfterFill(account, balance, held, p, mark, realized - fill.fee) : NO_CROSS;
  const s = standing(p, mark, cross);
  return { size: market.units.size(p.size), entryPrice: p.entryPrice(), liquidationPrice: s.liquidationPrice, leverage: s.leverage };
}

const FLAT: PositionEstimate = Object.freeze({ size: 0n, entryPrice: null, liquidationPrice: null, leverage: null });
const NO_CROSS: CrossFigures = Object.freeze({ crossEquity: 0n, positionMM: 0n });

/**
 * The account's cross equity and maintenance margin once the fill has moved position `held` to
 * `after` and `cash` (realised PnL less fee) has been posted: the cached risk figures with the
 * position's valuation (as margin.ts values it) swapped.
 */
function crossAfterFill(account: LinearAccount, balance: Fixed, held: Position | undefined, after: Position, mark: Fixed, cash: Fixed): CrossFigures {
  const risk = accountRisk(account, balance);
  const old = crossValuation(held, mark);
  const next = crossValuation(after, mark);
  return {
    crossEquity: risk.crossEquity - old.unrealized + next.unrealized + cash,
    positionMM: risk.positionMM - old.maintenance + next.maintenance,
  };
}

function crossValuation(p: Position | undefined, mark: Fixed): { unrealized: Fixed; maintenance: Fixed } {
  if (p === undefined || p.size === 0) return { unrealized: 0n, maintenance: 0n };
  const signed = notionalAt(p.size, p.market, mark);
  return { unrealized: signed - p.cost, maintenance: p.market.margin.maintenance(signed < 0n ? -signed : signed) };
}

/** The insurance fund makes a negative allocation good in whole units (cash.ts coverIsolated). */
function coverIsolated(p: Position, settlementDecimals: number): void {
  if (p.isolatedMargin < 0n) p.isolatedMargin += roundTo(-p.isolatedMargin, settlementDecimals, 'ceil');
}
