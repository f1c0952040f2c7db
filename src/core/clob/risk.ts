/**
 * Funds and margin of the CLOB venue (research/mechanics.md 3.6 and 5), as pure functions of the
 * engine's state:
 *
 *   spot      available(asset) = spot balance − held by open orders. A limit buy holds
 *             quantity x limit plus the fee at the schedule's highest rate; a sell holds the base.
 *   options   available = options balance − held by buy orders (premium + fee at the premium cap)
 *             − initial margin of the worst-case short per instrument, max(0, resting sells − pos),
 *             valued now. Long options add no collateral (conservative).
 *
 * `optionFunds` revalues every instrument the account is short or sells: the engine's checks read
 * the figures option-margin.ts keeps instead, and this full recomputation is their oracle (the
 * engine audit, the tests, and the engine's `fullRevaluation` mode).
 *
 * Per-lot reserves make every hold linear in the remaining lots, so a fill releases exactly
 * filledLots x reservePerLot and the hold of an order is always remaining x reservePerLot. The
 * per-lot figure rounds each part up to the settlement precision, which bounds what any fill at or
 * inside the limit can cost (ceil(k·x) <= k·ceil(x)); over-reservation is at most two smallest
 * units per lot. Tested in spot.test.ts and options.test.ts.
 */
import { divRound, unitOf, type Fixed } from '../money.ts';
import type { ClobAccount } from './account.ts';
import { fallbackRiskPrice, forLots, initialPerContract, maintenancePerContract } from './margin.ts';
import type { ClobMarket } from './market.ts';

const SCALE = 10n ** 18n;

/** What the risk functions read from the engine. */
export interface RiskSource {
  readonly settlementAsset: string;
  readonly settlementDecimals: number;
  userBalance(accountId: number, bucket: 'spot' | 'options', asset: string): Fixed;
  /** The fresh index, else the last price any input gave; null when never priced. */
  riskSpot(underlying: string, now: number): Fixed | null;
  optionMark(instrumentId: string, now: number): Fixed | null;
  heldMark(instrumentId: string): Fixed | null;
}

export interface OptionFunds {
  readonly balance: Fixed;
  /** Held by resting option buy orders (premium and fee). */
  readonly reserved: Fixed;
  /** Initial margin of the worst-case shorts (positions and resting sells). */
  readonly initialMargin: Fixed;
  /** Maintenance margin of the short positions alone. */
  readonly maintenanceMargin: Fixed;
  readonly available: Fixed;
}

/** `amount` rounded up to `decimals` places. */
export function ceilAt(amount: Fixed, decimals: number): Fixed {
  const unit = unitOf(decimals);
  return divRound(amount, unit, 'ceil') * unit;
}

/** `amount` x `fraction`, rounded up at 18 digits. */
export function times(amount: Fixed, fraction: Fixed): Fixed {
  return divRound(amount * fraction, SCALE, 'ceil');
}

/** Hold per lot of a limit buy at `priceTicks`: premium/notional and worst fee, each rounded up. */
export function buyReservePerLot(
  market: ClobMarket, priceTicks: number, feeFraction: Fixed, decimals: number,
): Fixed {
  const lot = market.units.notional(priceTicks, 1);
  return ceilAt(lot, decimals) + ceilAt(times(lot, feeFraction), decimals);
}

/**
 * Upper bound of what an immediate buy costing `cost` over `lots` lots pays: the cost and the fee
 * bound rounded up, plus one smallest unit per lot for each (every fill rounds its amount and its
 * fee up once, and a fill takes at least one lot).
 */
export function immediateBuyBound(cost: Fixed, lots: number, feeBound: Fixed, decimals: number): Fixed {
  const unit = unitOf(decimals);
  return ceilAt(cost, decimals) + ceilAt(feeBound, decimals) + 2n * BigInt(lots) * unit;
}

/** The option's risk price now (mark, else the fallback of margin.ts); null without any spot. */
export function optionRiskPrice(src: RiskSource, market: ClobMarket, now: number): Fixed | null {
  const spot = src.riskSpot(market.underlying, now);
  if (spot === null) return null;
  const id = market.spec.id;
  return src.optionMark(id, now) ?? fallbackRiskPrice(market, spot, src.heldMark(id));
}

/** Initial and maintenance margin per short contract now; null without any spot. */
export function marginPerContract(
  src: RiskSource, market: ClobMarket, now: number,
): { im: Fixed; mm: Fixed } | null {
  const spot = src.riskSpot(market.underlying, now);
  const price = optionRiskPrice(src, market, now);
  if (spot === null || price === null) return null;
  const o = market.option!;
  return { im: initialPerContract(o, spot, price), mm: maintenancePerContract(o, spot, price) };
}

/** Worst-case short lots of an instrument: every resting sell fills, no buy does. */
export function shortExposure(
  account: ClobAccount, market: ClobMarket, positionDelta = 0, sellDelta = 0,
): number {
  const pos = (account.position(market)?.size ?? 0) + positionDelta;
  return Math.max(0, account.sellLots(market) + sellDelta - pos);
}

/**
 * The account's option funds now. `deltas` (strategy and amend checks) overrides, per instrument,
 * the position and resting sell lots by the given amounts before margin is computed.
 */
export function optionFunds(
  src: RiskSource,
  account: ClobAccount,
  now: number,
  deltas?: ReadonlyMap<ClobMarket, { position: number; sells: number }>,
): OptionFunds {
  const balance = src.userBalance(account.id, 'options', src.settlementAsset);
  const reserved = account.held('options', src.settlementAsset);
  const markets = new Set<ClobMarket>(account.sellMarkets());
  for (const p of account.positions.values()) if (p.size < 0) markets.add(p.market);
  if (deltas !== undefined) for (const m of deltas.keys()) markets.add(m);
  let im = 0n;
  let mm = 0n;
  for (const market of markets) {
    const d = deltas?.get(market);
    const lots = shortExposure(account, market, d?.position ?? 0, d?.sells ?? 0);
    const shortLots = Math.max(0, -((account.position(market)?.size ?? 0) + (d?.position ?? 0)));
    if (lots === 0 && shortLots === 0) continue;
    const per = marginPerContract(src, market, now);
    if (per === null) continue;
    im += forLots(market, per.im, lots, src.settlementDecimals);
    mm += forLots(market, per.mm, shortLots, src.settlementDecimals);
  }
  return { balance, reserved, initialMargin: im, maintenanceMargin: mm, available: balance - reserved - im };
}
