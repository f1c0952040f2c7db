/**
 * Margin arithmetic of the linear engine (research/mechanics.md 1.4–1.6). All values in USDC,
 * exact; positions are valued at the mark.
 *
 *   crossCollateral = perps balance − isolated margin allocations
 *   crossEquity     = crossCollateral + Σ unrealised PnL of cross positions
 *   positionIM      = Σ tiered initial margin of cross positions at mark
 *   orderIM         = Σ over (market, mode) of the margin resting orders would add at worst:
 *                     max(IM(|pos + buys|), IM(|pos − sells|)) − IM(|pos|), order legs valued at
 *                     max(their price, mark), plus the open loss of buys above / sells below mark
 *   free            = crossEquity − positionIM − orderIM
 * Isolated orders reserve from the cross pool until they fill; a fill moves the position's tiered
 * initial margin into the isolated allocation.
 *
 * The gate: an order that does not add margin (its orderIM delta ≤ 0, e.g. a pure reduction) is
 * always allowed; otherwise free after the order, minus its worst-case taker fee, must stay ≥ 0.
 */
import { max, type Fixed } from '../money.ts';
import type { MarginMode } from '../records.ts';
import type { LinearAccount, OrderTotals } from './account.ts';
import type { LinearMarket } from './market.ts';
import type { Position } from './position.ts';

export interface AccountRisk {
  readonly balance: Fixed;
  readonly isolatedAllocated: Fixed;
  readonly crossEquity: Fixed;
  readonly crossUnrealized: Fixed;
  readonly positionIM: Fixed;
  readonly positionMM: Fixed;
  readonly orderIM: Fixed;
  readonly free: Fixed;
}

const SCALE = 10n ** 18n;

/** Mark used for risk: the fresh mark, or the last one while the index is briefly stale. */
export function riskMark(market: LinearMarket): Fixed | null {
  return market.mark ?? market.riskMark;
}

function notionalAt(lots: number, market: LinearMarket, mark: Fixed): Fixed {
  return (BigInt(lots) * market.units.step * mark) / SCALE;
}

/** Extra initial margin the resting orders of one (market, mode) need beyond the position's own. */
export function ordersMargin(market: LinearMarket, positionLots: number, totals: OrderTotals, mark: Fixed): Fixed {
  if (totals.isEmpty()) return 0n;
  const posNotional = notionalAt(positionLots, market, mark); // signed
  const buyValue = max(totals.buyNotional, notionalAt(totals.buyLots, market, mark));
  const sellValue = max(totals.sellNotional, notionalAt(totals.sellLots, market, mark));
  const worstLong = abs(posNotional + buyValue);
  const worstShort = abs(posNotional - sellValue);
  const schedule = market.margin;
  const worst = max(schedule.initial(worstLong), schedule.initial(worstShort));
  const extra = worst - schedule.initial(abs(posNotional));
  const openLossBuys = max(0n, totals.buyNotional - notionalAt(totals.buyLots, market, mark));
  const openLossSells = max(0n, notionalAt(totals.sellLots, market, mark) - totals.sellNotional);
  return max(0n, extra) + openLossBuys + openLossSells;
}

export function accountRisk(account: LinearAccount, balance: Fixed): AccountRisk {
  let isolatedAllocated = 0n;
  let crossUnrealized = 0n;
  let positionIM = 0n;
  let positionMM = 0n;
  for (const p of account.positions.values()) {
    const mark = riskMark(p.market);
    if (p.marginMode === 'isolated') {
      isolatedAllocated += p.isolatedMargin;
      continue;
    }
    if (mark === null || p.size === 0) continue;
    const notional = p.notional(mark);
    crossUnrealized += p.unrealized(mark);
    positionIM += p.market.margin.initial(notional);
    positionMM += p.market.margin.maintenance(notional);
  }
  let orderIM = 0n;
  for (const [key, totals] of account.totals) {
    if (totals.isEmpty()) continue;
    const p = account.positions.get(key);
    const market = totals.market;
    const mark = riskMark(market);
    if (mark === null) continue;
    orderIM += ordersMargin(market, p?.size ?? 0, totals, mark);
  }
  const crossEquity = balance - isolatedAllocated + crossUnrealized;
  return {
    balance,
    isolatedAllocated,
    crossEquity,
    crossUnrealized,
    positionIM,
    positionMM,
    orderIM,
    free: crossEquity - positionIM - orderIM,
  };
}

/** Maintenance check of one isolated position: equity (allocation + uPnL) against its MM. */
export function isolatedHealth(p: Position): { equity: Fixed; maintenance: Fixed } | null {
  const mark = riskMark(p.market);
  if (mark === null || p.size === 0) return null;
  return { equity: p.isolatedMargin + p.unrealized(mark), maintenance: p.market.margin.maintenance(p.notional(mark)) };
}

/** The initial margin an isolated position of `lots` needs at `mark`. */
export function isolatedInitial(market: LinearMarket, lots: number, mark: Fixed): Fixed {
  return market.margin.initial(abs(notionalAt(lots, market, mark)));
}

export function modeKey(marketId: string, mode: MarginMode): string {
  return `${marketId}|${mode}`;
}

function abs(a: Fixed): Fixed {
  return a < 0n ? -a : a;
}
