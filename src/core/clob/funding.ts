/**
 * The figures of an order that passed the cheap checks (research/mechanics.md 3.6, 5 and 6): its
 * book limit, the notional it trades (at the limit, or for an immediate order what the book would
 * fill now), the fee role, rate and estimate, and what it holds or the margin it adds:
 *
 *   spot sell          holds the base: quantity, released per lot.
 *   resting buy        holds per lot: limit notional + fee at the highest rate (spot) or at the
 *                      premium cap (options), each rounded up; released per filled lot.
 *   immediate buy      holds what its sweep can cost now (cost + fee bound + rounding room),
 *                      released exactly as fills pay.
 *   option sell        holds nothing; needs the initial margin its lots add to the worst-case
 *                      short of its instrument alone (option-margin.ts: each instrument's margin
 *                      is rounded on its own), with an immediate sell counted for what it can fill.
 * Used by checks.ts (live orders and previews) and strategy.ts (legs). Tested through the engine
 * tests (spot.test.ts, options.test.ts).
 */
import { BUY, MARKET_BUY_LIMIT, MARKET_SELL_LIMIT } from '../book/order-book.ts';
import type { OrderRequest } from '../linear/order.ts';
import { divRound, type Fixed } from '../money.ts';
import type { FeeRole } from '../risk/fees.ts';
import type { ClobAccount } from './account.ts';
import type { ClobEnv, ClobPlan } from './checks.ts';
import type { ClobMarket } from './market.ts';
import { marginAdded } from './option-margin.ts';
import { buyReservePerLot, immediateBuyBound, times } from './risk.ts';

const SCALE = 10n ** 18n;

/** An order under check: the venue, the account, the market, the request and the time. */
export interface Subject {
  readonly e: ClobEnv;
  readonly a: ClobAccount;
  readonly m: ClobMarket;
  readonly r: OrderRequest;
  readonly now: number;
}

type Funding = Pick<ClobPlan, 'reserve' | 'reservePerLot' | 'reserveAsset' | 'marginRequired'>;
/** What an immediate order would take from the book now (lots, exact cost); all lots otherwise. */
type Sweep = { lots: number; cost: Fixed };

/** Band edges in ticks for this side: the highest buy / lowest sell price accepted; null = none. */
export function bandEdge(e: ClobEnv, m: ClobMarket, side: 0 | 1, now: number): number | null {
  const tick = m.units.tick;
  if (m.option !== null) {
    const upper = m.option.type === 'put' ? m.option.strike : e.riskSpot(m.underlying, now);
    if (upper === null) return null;
    return side === BUY ? m.units.edgeTicks(upper / tick) : null;
  }
  const index = e.freshIndex(m.underlying, now);
  if (index === null) return null;
  const band = (index * BigInt(m.spec.priceBandBps)) / 10_000n;
  if (side === BUY) return m.units.edgeTicks((index + band) / tick);
  const ticks = (index - band + tick - 1n) / tick;
  return m.units.edgeTicks(ticks < 1n ? 1n : ticks);
}

/**
 * How far a market order sweeps: to the band edge, or to its price when it carries one inside it (the
 * contract has every options and spot order carry a price; on a market order it is the worst accepted).
 */
function marketOrderLimit(side: 0 | 1, priceTicks: number, bandLimit: number): number {
  if (priceTicks === 0) return bandLimit;
  return side === BUY ? Math.min(priceTicks, bandLimit) : Math.max(priceTicks, bandLimit);
}

/** The order's figures, or null when an option sell's margin cannot be computed (no index). */
export function planOrder(s: Subject, lots: number): ClobPlan | null {
  const { e, a, m, r, now } = s;
  const priceTicks = r.price === null ? 0 : m.units.ticks(r.price);
  const marketLimit = bandEdge(e, m, r.side, now) ?? (r.side === BUY ? MARKET_BUY_LIMIT : MARKET_SELL_LIMIT);
  const limitTicks = r.type === 'limit' ? priceTicks : marketOrderLimit(r.side, priceTicks, marketLimit);
  const immediate = r.type === 'market' || r.timeInForce !== 'gtc';
  const sweep: Sweep = { lots, cost: 0n };
  let notional = m.units.notional(priceTicks, lots);
  if (immediate) {
    sweep.lots = m.book.fillableLots(r.side, limitTicks, lots, a.id, r.selfTradePrevention);
    sweep.cost = BigInt(m.book.lastFillableCost) * m.units.notionalUnit;
    notional = sweep.cost; // what fills now: an immediate order's remainder never rests
  }
  const takes = !r.postOnly && (immediate ? sweep.lots > 0 : m.book.wouldCross(r.side, priceTicks));
  const feeRole: FeeRole = takes ? 'taker' : 'maker';
  const funding = m.isOption ? optionFunding(s, lots, sweep, immediate) : spotFunding(s, lots, sweep);
  if (funding === null) return null;
  const fees = feeFigures(s, feeRole, notional, immediate ? sweep.lots : lots);
  // Field by field: object spread costs microseconds per order on this V8.
  return {
    lots, limitTicks, priceTicks, notional,
    reserve: funding.reserve, reservePerLot: funding.reservePerLot, reserveAsset: funding.reserveAsset,
    marginRequired: funding.marginRequired,
    feeRole, feeBps: fees.feeBps, estFee: fees.estFee, volume30d: fees.volume30d,
  };
}

function feeFigures(s: Subject, role: FeeRole, notional: Fixed, lots: number) {
  const { e, a, m, now } = s;
  if (!m.isOption) {
    const volume30d = e.spotVolume(a.id, now);
    const feeBps = e.spotFees.rateFor(volume30d, role);
    return { feeBps, estFee: e.spotFees.fee(notional, feeBps), volume30d };
  }
  const volume30d = e.optionVolume(a.id, now);
  const contracts = m.units.size(lots);
  const price = contracts === 0n ? 0n : divRound(notional * SCALE, contracts, 'ceil');
  const fee = e.optionFees.feeFor(volume30d, role, contracts, price, e.riskSpot(m.underlying, now) ?? 0n);
  return { feeBps: fee.bps, estFee: fee.fee, volume30d };
}

function spotFunding(s: Subject, lots: number, sweep: Sweep): Funding {
  if (s.r.side === BUY) return buyFunding(s, lots, sweep, s.e.spotMaxBps / 10_000n);
  const perLot = s.m.units.step;
  const reserve = perLot * BigInt(lots);
  return { reserve, reservePerLot: perLot, reserveAsset: s.m.baseAsset, marginRequired: reserve };
}

/**
 * A resting (gtc) buy holds per lot at its limit; an immediate buy holds what its sweep can cost
 * now, released exactly as fills pay (nothing of it rests).
 */
function buyFunding(s: Subject, lots: number, sweep: Sweep, fraction: Fixed): Funding {
  const { e, m, r } = s;
  const asset = e.settlementAsset;
  if (r.type === 'limit' && r.timeInForce === 'gtc') {
    const perLot = buyReservePerLot(m, m.units.ticks(r.price!), fraction, e.settlementDecimals);
    const reserve = perLot * BigInt(lots);
    return { reserve, reservePerLot: perLot, reserveAsset: asset, marginRequired: reserve };
  }
  const bound = immediateBuyReserve(e, m, sweep.cost, sweep.lots, s.now);
  return { reserve: bound, reservePerLot: null, reserveAsset: asset, marginRequired: bound };
}

/**
 * What an immediate buy of `lots` costing `cost` can pay with fees. Spot: the fee at the highest
 * rate. Options: the fee at the highest rate on the index, capped by the premium cap (a sum of
 * per-fill minimums is at most the minimum of the sums).
 */
export function immediateBuyReserve(
  e: ClobEnv, m: ClobMarket, cost: Fixed, lots: number, now: number,
): Fixed {
  if (lots === 0) return 0n;
  let feeBound: Fixed;
  if (m.isOption) {
    const underlying = times(m.units.size(lots), e.riskSpot(m.underlying, now) ?? 0n);
    const byIndex = times(underlying, e.optionFees.maxBps / 10_000n);
    const byCap = times(cost, e.optionFees.maxCapPct / 100n);
    feeBound = byIndex < byCap ? byIndex : byCap;
  } else {
    feeBound = times(cost, e.spotMaxBps / 10_000n);
  }
  return immediateBuyBound(cost, lots, feeBound, e.settlementDecimals);
}

function optionFunding(s: Subject, lots: number, sweep: Sweep, immediate: boolean): Funding | null {
  const { e, a, m, now } = s;
  if (s.r.side === BUY) return buyFunding(s, lots, sweep, e.optionFees.maxCapPct / 100n);
  const delta = marginAdded(e, a, m, now, 0, immediate ? sweep.lots : lots);
  // No margin without a spot (risk.ts marginPerContract is null exactly then).
  if (delta > 0n && e.riskSpot(m.underlying, now) === null) return null;
  const marginRequired = delta > 0n ? delta : 0n;
  return { reserve: 0n, reservePerLot: null, reserveAsset: e.settlementAsset, marginRequired };
}
