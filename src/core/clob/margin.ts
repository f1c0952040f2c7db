/**
 * Standard per-position option margin (research/mechanics.md 3.6, bit.com / Deribit USD form), per
 * contract of one underlying unit, with S the underlying index, OTM the out-of-the-money amount
 * (call max(K - S, 0), put max(S - K, 0)) and `mark` the option's risk price:
 *     short call  IM = max(imBase·S − OTM, imFloor·S) + mark          MM = mm·S + mark
 *     short put   IM = max(max(imBase·S − OTM, imFloor·S) + mark, MM)  MM = max(mm·S, mm·mark) + mark
 * Long options need no margin: their premium (and fee) is paid up front.
 *
 * The risk price of an option is its mark when the pricing layer supplies one. Without a fresh
 * mark it is valued, for risk only and never displayed as a mark, at max(intrinsic, the last mark
 * the pricing layer fitted for it), or, for an option it never marked, max(intrinsic, best bid).
 * Never at the last trade nor, once marked, at a bid: a wash print or a small bid far from value
 * would set the margin of every short on the instrument at its author's cost of two fees (audit
 * defect 4). Intrinsic at the current S is the floor, as for an empty book. S is the fresh index,
 * or while the index is stale the last price any input gave (an option listed once had an index).
 * Amounts for a number of lots are rounded once, up, to the settlement asset's precision. Tested
 * in options.test.ts.
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

/**
 * The risk price of an option when no fresh mark is served: max(intrinsic, `held`), the last mark
 * the pricing layer fitted, or max(intrinsic, best bid) for an option it never marked. The last
 * trade never counts: two colluding accounts print one at any price for two fees.
 */
export function fallbackRiskPrice(market: ClobMarket, spot: Fixed, held: Fixed | null): Fixed {
  const floor = intrinsic(market.option!, spot);
  const input = held ?? market.bestBid();
  return input !== null && input > floor ? input : floor;
}
