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
import { BUY } from '../book/order-book.ts';
import { divRound, SCALE, type Fixed } from '../money.ts';
import type { MarginMode } from '../records.ts';
import type { LinearAccount, OrderTotals } from './account.ts';
import type { LinearMarket } from './market.ts';
import type { LinearOrder } from './order.ts';
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

/** Mark used for risk: the fresh mark, or the last one while the index is briefly stale. */
export function riskMark(market: LinearMarket): Fixed | null {
  return market.mark ?? market.riskMark;
}

/** Value of `lots` at `mark`; uses the market's precomputed lot value when `mark` is its risk mark. */
export function notionalAt(lots: number, market: LinearMarket, mark: Fixed): Fixed {
  const perLot = mark === market.riskMark ? market.riskLotValue : (market.units.step * mark) / SCALE;
  return BigInt(lots) * perLot;
}

/** Extra initial margin the resting orders of one (market, mode) need beyond the position's own. */
export function ordersMargin(market: LinearMarket, positionLots: number, totals: OrderSums, mark: Fixed): Fixed {
  if (totals.buyLots === 0 && totals.sellLots === 0) return 0n;
  // Every order pays this on every check: zero legs cost no bigint arithmetic.
  const posNotional = positionLots === 0 ? 0n : notionalAt(positionLots, market, mark); // signed
  const buyAtMark = totals.buyLots === 0 ? 0n : notionalAt(totals.buyLots, market, mark);
  const sellAtMark = totals.sellLots === 0 ? 0n : notionalAt(totals.sellLots, market, mark);
  const buyValue = totals.buyNotional > buyAtMark ? totals.buyNotional : buyAtMark;
  const sellValue = totals.sellNotional > sellAtMark ? totals.sellNotional : sellAtMark;
  const schedule = market.margin;
  const own = posNotional === 0n ? 0n : schedule.initial(abs(posNotional));
  // Most accounts quote one side of a market: the empty side's worst case is the position itself.
  const worstLong = buyValue === 0n ? own : schedule.initial(abs(posNotional + buyValue));
  const worstShort = sellValue === 0n ? own : schedule.initial(abs(posNotional - sellValue));
  const extra = (worstLong > worstShort ? worstLong : worstShort) - own;
  let margin = extra > 0n ? extra : 0n;
  if (totals.buyNotional > buyAtMark) margin += totals.buyNotional - buyAtMark; // bids above the mark
  if (sellAtMark > totals.sellNotional) margin += sellAtMark - totals.sellNotional; // asks below it
  return margin;
}

/** The lots and notional sums ordersMargin reads (OrderTotals, or a probe with one order added). */
export interface OrderSums {
  readonly buyLots: number;
  readonly buyNotional: Fixed;
  readonly sellLots: number;
  readonly sellNotional: Fixed;
}

/**
 * The cached margin of one (market, mode)'s resting orders by the tiers, recomputed when stale
 * (what isolated orders that chose a leverage hold beyond it is OrderTotals.leverageSurcharge).
 */
export function cachedOrdersMargin(totals: OrderTotals, positionLots: number): Fixed {
  const market = totals.market;
  if (totals.cachedVersion === market.markVersion) return totals.cachedIM;
  const mark = riskMark(market);
  totals.cachedIM = mark === null ? 0n : ordersMargin(market, positionLots, totals, mark);
  totals.cachedVersion = market.markVersion;
  return totals.cachedIM;
}

/**
 * An isolated order's chosen leverage (`leverage`, fixed-point; undefined: the tiers') asks
 * notional / leverage of margin, never less than the tiers' initial margin: what it asks beyond the
 * initial margin of `notional` on its own. The tiers' margin of an order's fills, as they add to a
 * position, is at least that of the order alone (the rate only grows with the notional), so a
 * reservation of the tiers' margin plus this covers what its fills post (leveragedOpening).
 */
export function leverageSurcharge(market: LinearMarket, notional: Fixed, leverage: Fixed | undefined): Fixed {
  if (leverage === undefined || notional === 0n) return 0n;
  const chosen = divRound(notional * SCALE, leverage, 'ceil');
  const tiers = market.margin.initial(notional);
  return chosen > tiers ? chosen - tiers : 0n;
}

/**
 * What `lots` opened at `price` post to an isolated position holding `heldLots` on their side: the
 * tiers' increment (isolatedOpening), or notional / leverage when the order chose a leverage and
 * that is more.
 */
export function leveragedOpening(market: LinearMarket, heldLots: number, lots: number, price: Fixed, leverage: Fixed | undefined): Fixed {
  const tiers = isolatedOpening(market, heldLots, lots, price);
  if (leverage === undefined) return tiers;
  const chosen = divRound(market.units.size(lots) * price, leverage, 'ceil');
  return chosen > tiers ? chosen : tiers;
}

/** A cross position's valuation at the risk mark, cached per mark version. */
function valuation(p: Position): boolean {
  const market = p.market;
  if (p.cachedVersion === market.markVersion) return true;
  const mark = riskMark(market);
  if (mark === null) return false;
  const signed = notionalAt(p.size, market, mark);
  const notional = abs(signed);
  p.cachedNotional = notional;
  p.cachedUnrealized = signed - p.cost;
  p.cachedIM = market.margin.initial(notional);
  p.cachedMM = market.margin.maintenance(notional);
  p.cachedVersion = market.markVersion;
  return true;
}

/** The sums accountRisk reports, accumulated in one reused object (the margin gate runs on every order). */
const sums = { isolatedAllocated: 0n, crossUnrealized: 0n, positionIM: 0n, positionMM: 0n, orderIM: 0n };

function sumRisk(account: LinearAccount): typeof sums {
  let isolatedAllocated = 0n;
  let crossUnrealized = 0n;
  let positionIM = 0n;
  let positionMM = 0n;
  for (const p of account.positions.values()) {
    if (p.marginMode === 'isolated') {
      isolatedAllocated += p.isolatedMargin;
      continue;
    }
    if (p.size === 0 || !valuation(p)) continue;
    crossUnrealized += p.cachedUnrealized;
    positionIM += p.cachedIM;
    positionMM += p.cachedMM;
  }
  let orderIM = 0n;
  for (const totals of account.totals.values()) {
    if (totals.isEmpty()) continue;
    orderIM += cachedOrdersMargin(totals, account.position(totals.market, totals.mode)?.size ?? 0);
    if (totals.leverageSurcharge !== 0n) orderIM += totals.leverageSurcharge;
  }
  sums.isolatedAllocated = isolatedAllocated;
  sums.crossUnrealized = crossUnrealized;
  sums.positionIM = positionIM;
  sums.positionMM = positionMM;
  sums.orderIM = orderIM;
  return sums;
}

export function accountRisk(account: LinearAccount, balance: Fixed): AccountRisk {
  const { isolatedAllocated, crossUnrealized, positionIM, positionMM, orderIM } = sumRisk(account);
  const crossEquity = balance - isolatedAllocated + crossUnrealized;
  return {
    balance,
    isolatedAllocated,
    crossEquity,
    crossUnrealized,
    positionIM,
    positionMM,
    orderIM,
    free: crossEquity - positionIM - orderIM - reduceOnlyOpenLoss(account),
  };
}

/** accountRisk(account, balance).free, without building the report (the margin gate's question). */
export function freeCollateral(account: LinearAccount, balance: Fixed): Fixed {
  const s = sumRisk(account);
  return balance - s.isolatedAllocated + s.crossUnrealized - s.positionIM - s.orderIM - reduceOnlyOpenLoss(account);
}

/**
 * The account's cross pool, summed into one reused object (the maker check runs at fills):
 * - `equity`: its perps balance less the isolated allocations inside it, plus the unrealised PnL of
 *   its cross positions at their risk marks, profit only where `realisable`. What a fill that opens
 *   may take (maker-checks.ts `opensWithinEquity`): a cross loss comes out of it, and so does an isolated
 *   opening's allocation, which the cross pool funds;
 * - `available`: that cash plus the realisable profit, what an isolated opening's allocation can be
 *   drawn from (cash.ts `settleOpeningCharges` realises the profit if it must).
 */
export function crossPool(account: LinearAccount, balance: Fixed, realisable: Realisable | null): { equity: Fixed; available: Fixed } {
  let cash = balance;
  let pnl = 0n;
  let profit = 0n;
  for (const p of account.positions.values()) {
    if (p.marginMode === 'isolated') cash -= p.isolatedMargin;
    else if (p.size !== 0 && valuation(p)) {
      const u = p.cachedUnrealized;
      if (u <= 0n) pnl += u;
      else if (realisable === null || realisable(p.market)) {
        pnl += u;
        profit += u;
      }
    }
  }
  pool.equity = cash + pnl;
  pool.available = cash + profit;
  return pool;
}

const pool = { equity: 0n, available: 0n };

/**
 * Whether a cross position's unrealised profit in `market` can be realised now (cash.ts
 * `settleProfit`: an open market at a fresh mark). Where equity bounds what a fill may lose, profit
 * at a stale mark does not count: the fill's loss would leave the cash short, the profit could not
 * pay it, and the insurance fund would, while the profit stayed with the account.
 */
export type Realisable = (market: LinearMarket) => boolean;

/**
 * What `lots` of resting order `o` lose at `mark` when they fill at its price: a buy above the
 * mark, a sell below it; else 0. Valued as the positions are (the lot value at the mark), so a fill
 * takes exactly this out of the cross equity.
 */
export function fillLossAt(o: LinearOrder, lots: number, mark: Fixed): Fixed {
  const atMark = notionalAt(lots, o.market, mark);
  const notional = o.market.units.notional(o.priceTicks, lots);
  const loss = o.side === BUY ? notional - atMark : atMark - notional;
  return loss > 0n ? loss : 0n;
}

/**
 * The account's cross cash: its perps balance less the isolated allocations inside it. What an
 * isolated position is funded from (unrealised cross profit is not cash until it is realised).
 */
export function crossCashOf(account: LinearAccount, balance: Fixed): Fixed {
  let allocated = 0n;
  for (const p of account.positions.values()) if (p.marginMode === 'isolated') allocated += p.isolatedMargin;
  return balance - allocated;
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

/**
 * What `lots` opened at `price` add to the initial margin of an isolated position holding `heldLots`
 * on their side: IM(held + lots) − IM(held), both at `price`. The tiers are by position notional, so
 * a position built from many small fills is allocated what one fill of its whole size would be
 * (the differences telescope), never each fill's own tier: that would fund a position past a
 * tier's end at the lower tier's rate, below its maintenance margin.
 */
export function isolatedOpening(market: LinearMarket, heldLots: number, lots: number, price: Fixed): Fixed {
  const after = isolatedInitial(market, heldLots + lots, price);
  return heldLots === 0 ? after : after - isolatedInitial(market, heldLots, price);
}

/**
 * The price (ticks) at which `equity` behind position `p` would be gone: mark − equity / size,
 * rounded against the position, never beyond the book's price range. The liquidation ladder's
 * limit, and the bound of every user order that reduces the position (checks.ts): a fill beyond it
 * is a loss the insurance fund would pay and the counterparty would keep.
 */
export function bankruptcyTicks(p: Position, equity: Fixed, mark: Fixed, lots = Math.abs(p.size)): number {
  const size = p.market.units.size(p.size > 0 ? lots : -lots);
  const price = mark - divRound(equity * SCALE, size, 'trunc');
  const tick = p.market.units.tick;
  const ticks = p.size > 0 ? divRound(price, tick, 'ceil') : divRound(price, tick, 'floor');
  return p.market.units.edgeTicks(ticks < 1n ? 1n : ticks);
}

/**
 * What closing all of `p` can be worth, for the fee set aside in its bound: its value at the mark
 * grown by the price band (a short closes above the mark, at most the band away).
 */
export function closingNotional(p: Position, mark: Fixed): Fixed {
  const bps = BigInt(p.market.spec.priceBandBps);
  return (p.notional(mark) * (10_000n + bps) + 9_999n) / 10_000n;
}

/**
 * The bound of a user order that reduces `p`: its bankruptcy price once the fee of closing it all
 * (`fee`: the taker rate on `closingNotional`, what any order may pay) is set aside, so the fill's
 * fee is paid by the equity too. `newLots` are the order's lots; `resting` is the order itself when
 * it already rests (checked again as a maker), so that it is not counted as one of the others.
 */
export function closeBoundTicks(
  p: Position, account: LinearAccount, balance: Fixed, fee: Fixed, mark: Fixed, newLots: number,
  resting: LinearOrder | null = null, realisable: Realisable | null = null,
): number {
  let equity = equityBehind(p, account, balance, mark, realisable);
  let lots = Math.abs(p.size);
  if (p.marginMode === 'cross' && account.liveReduceOnly > 0) {
    // The position's own resting reduce-only orders: equityBehind kept their loss out along with the
    // other positions'. Those the new order leaves standing (trimmed to what remains of the position)
    // are taken as filled already, their loss and their lots; the rest will be trimmed away. Counting
    // them against the whole position as well would refuse a stop-loss that closes it all.
    const own = ownReduceOnly(account.reduceOnlyLosses.sumsOf(account), p, mark, resting);
    const kept = Math.min(own.lots, Math.max(0, lots - newLots));
    if (kept === 0) equity += own.loss;
    else lots -= kept;
    if (resting !== null && isReduceOnlyResting(resting)) equity += openLossOf(resting, mark); // its own loss is the bound's to cover
  }
  return bankruptcyTicks(p, fee > 0n ? equity - fee : equity, mark, lots);
}

/**
 * The account's resting cross reduce-only orders summed: their open loss at the marks, and per
 * market their lots and loss. Kept with the account (reduce-only-losses.ts); `reduceOnlySums`
 * walks the orders afresh (the keeper's audit).
 */
export interface ReduceOnlySums {
  crossLoss: Fixed;
  readonly byMarket: Map<LinearMarket, { lots: number; loss: Fixed }>;
}

export function reduceOnlySums(account: LinearAccount): ReduceOnlySums {
  const sums: ReduceOnlySums = { crossLoss: 0n, byMarket: new Map() };
  if (account.liveReduceOnly === 0) return sums;
  for (const o of account.orders.values()) addOrderToReduceOnlySums(sums, o);
  return sums;
}

/** The sums as text, markets with nothing in them left out (to compare two of them). */
export function reduceOnlySumsText(sums: ReduceOnlySums): string {
  const markets = [...sums.byMarket].filter(([, own]) => own.lots !== 0 || own.loss !== 0n);
  return [`loss ${sums.crossLoss}`, ...markets.map(([m, own]) => `${m.spec.id} ${own.lots} ${own.loss}`).sort()].join('; ');
}

/** Adds one order's share of the sums. */
function addOrderToReduceOnlySums(sums: ReduceOnlySums, o: LinearOrder): void {
  if (countsInReduceOnlySums(o)) addToReduceOnlySums(sums, o.market, o.remainingLots, reduceOnlyLossOf(o));
}

/** Whether an order has a share in ReduceOnlySums: a resting cross reduce-only order. */
export function countsInReduceOnlySums(o: LinearOrder): boolean {
  return isReduceOnlyResting(o) && o.request.marginMode === 'cross';
}

/** An order's loss share in ReduceOnlySums: its open loss at its market's risk mark (0 without one). */
export function reduceOnlyLossOf(o: LinearOrder): Fixed {
  const mark = riskMark(o.market);
  return mark === null ? 0n : openLossOf(o, mark);
}

/** Adds signed lots and loss of `market` to the sums. */
export function addToReduceOnlySums(sums: ReduceOnlySums, market: LinearMarket, lots: number, loss: Fixed): void {
  sums.crossLoss += loss;
  let own = sums.byMarket.get(market);
  if (own === undefined) sums.byMarket.set(market, (own = { lots: 0, loss: 0n }));
  own.lots += lots;
  own.loss += loss;
}

const NO_REDUCE_ONLY = Object.freeze({ lots: 0, loss: 0n });

/**
 * Lots and open loss at `mark` (the market's risk mark, as the sums took it) of the resting
 * reduce-only orders that reduce the cross position `p`, `except` one.
 */
function ownReduceOnly(sums: ReduceOnlySums, p: Position, mark: Fixed, except: LinearOrder | null): { lots: number; loss: Fixed } {
  const own = sums.byMarket.get(p.market) ?? NO_REDUCE_ONLY;
  if (except === null || !countsInReduceOnlySums(except) || except.market !== p.market) return own;
  return { lots: own.lots - except.remainingLots, loss: own.loss - openLossOf(except, mark) };
}

function isReduceOnlyResting(o: LinearOrder): boolean {
  return o.request.reduceOnly && o.level !== null;
}

/**
 * The equity behind a position at `mark`: an isolated position's allocation plus its unrealised
 * PnL; for a cross position, the account's cross equity (its cross positions at their risk marks,
 * profit only where `realisable`) less what its resting reduce-only orders would lose at the mark,
 * which that equity must keep.
 */
export function equityBehind(
  p: Position, account: LinearAccount, balance: Fixed, mark: Fixed, realisable: Realisable | null = null,
): Fixed {
  if (p.marginMode === 'isolated') return p.isolatedMargin + p.unrealized(mark);
  return crossPool(account, balance, realisable).equity - reduceOnlyOpenLoss(account);
}

/** The open loss at the risk mark of the resting reduce-only orders that reduce the cross position `p`. */
export function ownReduceOnlyLoss(p: Position, account: LinearAccount): Fixed {
  const mark = riskMark(p.market);
  if (mark === null || account.liveReduceOnly === 0) return 0n;
  return ownReduceOnly(account.reduceOnlyLosses.sumsOf(account), p, mark, null).loss;
}

/** Whether an order on `side` reduces a position of `size` (signed lots). */
export function reduces(size: number, side: 0 | 1): boolean {
  return size !== 0 && (size > 0) !== (side === BUY);
}

/** What a position of signed `size` holds on `side` (the base of an isolated opening's margin): 0 when flat or opposite. */
export function heldOnSide(size: number, side: 0 | 1): number {
  return size === 0 || reduces(size, side) ? 0 : Math.abs(size);
}

/**
 * The open loss at the mark of the account's resting cross reduce-only orders (a sell below it, a
 * buy above it). They reserve no margin, and their bound is checked only when they are placed: so
 * what the user does afterwards must leave it covered, or the equity behind the position would fall
 * short of it and a fill there, an accomplice's, would be the fund's loss. Free collateral (so new
 * orders and withdrawals), isolated allocations and the bounds of other reducing orders keep it
 * (other resting orders reserve their open loss in the margin already; an isolated order's
 * allocation bounds it). Read from the sums kept with the account (reduce-only-losses.ts).
 */
export function reduceOnlyOpenLoss(account: LinearAccount): Fixed {
  return account.liveReduceOnly === 0 ? 0n : account.reduceOnlyLosses.sumsOf(account).crossLoss;
}

/** What a resting order would lose at `mark` if it filled. */
function openLossOf(o: LinearOrder, mark: Fixed): Fixed {
  return openLossAt(o.market, o.side === BUY, o.market.units.price(o.priceTicks), o.remainingLots, mark);
}

/** What `lots` bought (or sold) at `price` lose at `mark`: a buy above it, a sell below it; else 0. */
export function openLossAt(market: LinearMarket, buy: boolean, price: Fixed, lots: number, mark: Fixed): Fixed {
  const worse = buy ? price - mark : mark - price;
  return worse > 0n ? divRound(worse * market.units.size(lots), SCALE, 'ceil') : 0n;
}

export function modeKey(marketId: string, mode: MarginMode): string {
  return `${marketId}|${mode}`;
}

function abs(a: Fixed): Fixed {
  return a < 0n ? -a : a;
}

/**
 * Discrepancies between an account's cached order margin and a fresh computation, and (with
 * `recount`, a walk of every live order) between its resting-order totals and its resting orders.
 * The margin gate trusts both caches; the simulation calls this after every command. Empty when
 * all agree.
 */
export function marginAudit(account: LinearAccount, recount: boolean): string[] {
  const errors: string[] = [];
  for (const totals of account.totals.values()) {
    const { market, mode } = totals;
    const where = `account ${account.id} ${market.spec.id} ${mode}`;
    const mark = riskMark(market);
    if (totals.cachedVersion === market.markVersion && mark !== null) {
      const fresh = ordersMargin(market, account.position(market, mode)?.size ?? 0, totals, mark);
      if (fresh !== totals.cachedIM) errors.push(`${where}: cached order margin ${totals.cachedIM} ≠ ${fresh}`);
    }
    if (!recount) continue;
    const sums = { buyLots: 0, buyNotional: 0n, sellLots: 0, sellNotional: 0n };
    for (const o of account.orders.values()) {
      if (o.market !== market || o.request.marginMode !== mode || o.reservedLots === 0) continue;
      const notional = market.units.notional(o.priceTicks, o.reservedLots);
      if (o.side === BUY) {
        sums.buyLots += o.reservedLots;
        sums.buyNotional += notional;
      } else {
        sums.sellLots += o.reservedLots;
        sums.sellNotional += notional;
      }
    }
    if (sums.buyLots !== totals.buyLots || sums.buyNotional !== totals.buyNotional || sums.sellLots !== totals.sellLots || sums.sellNotional !== totals.sellNotional) {
      errors.push(`${where}: resting totals differ from the resting orders`);
    }
    let surcharge = 0n;
    for (const o of account.orders.values()) {
      if (o.market !== market || o.request.marginMode !== mode || o.reservedLots === 0) continue;
      const fresh = leverageSurcharge(market, market.units.notional(o.priceTicks, o.reservedLots), o.request.leverage);
      if (fresh !== o.reservedSurcharge) errors.push(`order ${o.id}: leverage surcharge ${o.reservedSurcharge} ≠ ${fresh}`);
      surcharge += fresh;
    }
    if (surcharge !== totals.leverageSurcharge) errors.push(`${where}: leverage surcharge ${totals.leverageSurcharge} ≠ ${surcharge}`);
  }
  return errors;
}
