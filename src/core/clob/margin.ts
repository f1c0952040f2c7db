/**
 * Standard per-position option margin (research/mechanics.md 3.6, bit.com / Deribit USD form), per
 * contract of one underlying unit, with S the underlying index, OTM the out-of-the-money amount
 * (call max(K - S, 0), put max(S - K, 0)) and `mark` the option's risk price:
 *     short call  IM = max(imBase·S − OTM, imFloor·S) + mark          MM = mm·S + mark
 *     short put   IM = max(max(imBase·S − OTM, imFloor·S) + mark, MM)  MM = max(mm·S, mm·mark) + mark
 * Long options need no margin: their premium (and fee) is paid up front.
 *
 * The risk price of an option is its mark when the pricing layer supplies one; without a mark it
 * is valued, for risk only and never displayed as a mark, at max(intrinsic, best bid, last trade),
 * which can only overstate what a short must hold. S is the fresh index, or while the index is
 * stale the last price any input gave (an option listed once had an index). Amounts for a number
 * of lots are rounded once, up, to the settlement asset's precision. Tested in options.test.ts.
 */
import { divRound, mul, unitOf, type Fixed } from '../money.ts';
import type { ClobMarket, OptionTerms } from './market.ts';

const SCALE = 10n ** 18n;

const max = (a: Fixed, b: Fixed): Fixed => (a > b ? a : b);

export function intrinsic(o: OptionTerms, spot: Fixed): Fixed {
  return o.type === 'call' ? max(spot - o.strike, 0n) : max(o.strike - spot, 0n);
}

function outOfTheMoney(o: OptionTerms, spot: Fixed): Fixed {
  return o.type === 'call' ? max(o.strike - spot, 0n) : max(spot - o.strike, 0n);
}

/** Maintenance margin of one short contract. */
export function maintenancePerContract(o: OptionTerms, spot: Fixed, mark: Fixed): Fixed {
  const p = o.params.margin;
  if (o.type === 'call') return mul(p.mm, spot, 'ceil') + mark;
  return max(mul(p.mm, spot, 'ceil'), mul(p.mm, mark, 'ceil')) + mark;
}

/** Initial margin of one short contract. */
export function initialPerContract(o: OptionTerms, spot: Fixed, mark: Fixed): Fixed {
  const p = o.params.margin;
  const base = max(mul(p.imBase, spot, 'ceil') - outOfTheMoney(o, spot), mul(p.imFloor, spot, 'ceil')) + mark;
  return o.type === 'call' ? base : max(base, maintenancePerContract(o, spot, mark));
}

/** `perContract` x the contracts in `lots`, rounded up to the settlement precision. */
export function forLots(market: ClobMarket, perContract: Fixed, lots: number, decimals: number): Fixed {
  if (lots <= 0 || perContract <= 0n) return 0n;
  const unit = unitOf(decimals);
  return divRound(perContract * market.units.size(lots), SCALE * unit, 'ceil') * unit;
}

/** The risk price of an option when no mark is available: max(intrinsic, best bid, last trade). */
export function fallbackRiskPrice(market: ClobMarket, spot: Fixed): Fixed {
  let v = intrinsic(market.option!, spot);
  const bid = market.bestBid();
  if (bid !== null && bid > v) v = bid;
  const last = market.lastTrade?.price ?? null;
  if (last !== null && last > v) v = last;
  return v;
}
