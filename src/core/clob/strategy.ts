/**
 * Multi-leg strategies (`POST /orders/strategy`): 2 to 8 legs `{ market, side, quantity, price }`
 * on distinct spot or option markets, executed as one command, all or nothing:
 *
 *  1. every leg passes the order checks up to the funding gate (market, state, tick, step, size,
 *     band, open-order limits), as a fill-or-kill limit order at its price;
 *  2. every leg can fill completely at its limit now (book.fillableLots, the caller's own resting
 *     orders skipped as self-trade prevention cancel_maker would skip them); else
 *     STRATEGY_NOT_FILLED;
 *  3. the combined result passes the gate: options margin on the post-trade positions and cash
 *     (premiums and fee bounds) may not leave free collateral negative unless it improves it
 *     (INSUFFICIENT_MARGIN); spot legs must be funded by the spot bucket, counting what the
 *     strategy's own sells bring in (INSUFFICIENT_BALANCE);
 *  4. only then all legs execute (sells first, so proceeds arrive before payments); each fills in
 *     full at the makers' prices. Market-maker protection trips caused by the legs are applied
 *     after the last leg, so they cannot cancel liquidity a later leg was promised.
 * Fillability is exact on this venue (makers are never reduce-only and nothing else changes a book
 * mid-command), and the engine asserts every leg filled: a strategy can never be half executed.
 * `allOrNone` false is refused (VALIDATION_ERROR); `cancelOnFailure` is a no-op because nothing
 * ever rests; per-leg time in force does not exist. Tested in strategy.test.ts and over HTTP.
 */
import { fail } from '../assert.ts';
import { BUY, type Side } from '../book/order-book.ts';
import { reject, type Rejection } from '../errors.ts';
import { PLAIN_ORDER, type OrderRequest } from '../linear/order.ts';
import { formatDecimal, unitOf, type Fixed } from '../money.ts';
import type { FillRecord } from '../records.ts';
import { ClobAccount } from './account.ts';
import { evaluateOrder, type ClobPlan } from './checks.ts';
import { immediateBuyReserve } from './funding.ts';
import type { ClobEngine } from './engine.ts';
import type { ClobMarket } from './market.ts';
import type { ClobOrder } from './order.ts';
import { roundAt } from './money-moves.ts';
import { availableNow, marginAddedBy } from './option-margin.ts';
import { ceilAt, times } from './risk.ts';

export interface StrategyLeg {
  readonly marketId: string;
  readonly side: Side;
  readonly quantity: Fixed;
  readonly price: Fixed;
}

export interface StrategyRequest {
  readonly name: string | null;
  readonly allOrNone: boolean;
  readonly cancelOnFailure: boolean;
  readonly legs: readonly StrategyLeg[];
}

export interface StrategyResult {
  readonly strategyId: string;
  readonly name: string | null;
  readonly fullyFilled: boolean;
  readonly legs: { orderId: string; marketId: string; fills: FillRecord[] }[];
}

export interface LegFigures {
  readonly marketId: string;
  readonly side: Side;
  readonly quantity: Fixed;
  readonly price: Fixed;
  readonly fillableQuantity: Fixed;
  /** Premium or quote notional of what would fill now, at the makers' prices. */
  readonly notional: Fixed;
  readonly estFee: Fixed;
  readonly feeBps: Fixed;
}

export interface StrategyEvaluation {
  readonly legs: LegFigures[];
  readonly rejection: Rejection | null;
}

interface Leg {
  readonly market: ClobMarket;
  readonly request: OrderRequest;
  readonly plan: ClobPlan;
  readonly fillable: number;
  readonly cost: Fixed;
}

export function previewStrategy(
  e: ClobEngine, accountId: number, s: StrategyRequest, now: number,
): StrategyEvaluation {
  const account = e.findAccount(accountId) ?? new ClobAccount(accountId);
  const { legs, rejection } = evaluate(e, account, s, now);
  return { legs: legs.map(figures), rejection };
}

export function runStrategy(
  e: ClobEngine, accountId: number, s: StrategyRequest,
): StrategyResult | Rejection {
  const account = e.findAccount(accountId) ?? new ClobAccount(accountId);
  const { legs, rejection } = evaluate(e, account, s, e.deps.now());
  if (rejection !== null) return rejection;
  const orders = new Map<Leg, ClobOrder>();
  const sells = legs.filter((l) => l.request.side !== BUY);
  const sellsFirst = [...sells, ...legs.filter((l) => l.request.side === BUY)];
  for (const leg of sellsFirst) {
    const order = e.open(account, leg.market, leg.request, leg.plan, false);
    if (order.status !== 'filled') fail(`strategy leg ${leg.market.spec.id} did not fill after its check`);
    orders.set(leg, order);
  }
  const leg = (l: Leg) => {
    const order = orders.get(l)!;
    return { orderId: String(order.id), marketId: l.market.spec.id, fills: e.fillsOf(order) };
  };
  return { strategyId: `S${e.nextStrategyId++}`, name: s.name, fullyFilled: true, legs: legs.map(leg) };
}

type Evaluated = { legs: Leg[]; rejection: Rejection | null };

function evaluate(e: ClobEngine, account: ClobAccount, s: StrategyRequest, now: number): Evaluated {
  const refuse = (legs: Leg[], rejection: Rejection): Evaluated => ({ legs, rejection });
  const lim = e.limits;
  if (s.legs.length < lim.minStrategyLegs || s.legs.length > lim.maxStrategyLegs) {
    const count = `${lim.minStrategyLegs} to ${lim.maxStrategyLegs}`;
    return refuse([], reject('VALIDATION_ERROR', `a strategy has ${count} legs`));
  }
  if (!s.allOrNone) {
    const message = 'only all-or-none strategies are supported (allOrNone must be true)';
    return refuse([], reject('VALIDATION_ERROR', message));
  }
  if (new Set(s.legs.map((l) => l.marketId)).size !== s.legs.length) {
    return refuse([], reject('VALIDATION_ERROR', 'each leg must be on a different market'));
  }
  const legs: Leg[] = [];
  for (const l of s.legs) {
    const market = e.markets.get(l.marketId);
    if (market === undefined || market.status === 'expired') {
      return refuse(legs, reject('NOT_FOUND', `market ${l.marketId} not found`));
    }
    const request = legRequest(l);
    const { plan, rejection } = evaluateOrder(e, account, market, request, now, 'leg');
    if (rejection !== null || plan === null) return refuse(legs, rejection ?? reject('INTERNAL', 'no plan'));
    const fillable = market.book.fillableLots(l.side, plan.limitTicks, plan.lots, account.id, 'cancel_maker');
    const cost = BigInt(market.book.lastFillableCost) * market.units.notionalUnit;
    legs.push({ market, request, plan, fillable, cost });
  }
  const short = legs.find((l) => l.fillable < l.plan.lots);
  if (short !== undefined) {
    const message = `leg ${short.market.spec.id} cannot fill in full at its price now; nothing was executed`;
    return refuse(legs, reject('STRATEGY_NOT_FILLED', message));
  }
  return { legs, rejection: gate(e, account, legs, now) };
}

function legRequest(l: StrategyLeg): OrderRequest {
  return {
    marketId: l.marketId,
    side: l.side,
    type: 'limit',
    quantity: l.quantity,
    price: l.price,
    timeInForce: 'fok',
    postOnly: false,
    reduceOnly: false,
    marginMode: 'cross',
    ...PLAIN_ORDER,
  };
}

/** The least an immediate sell of `cost` over `lots` lots brings in after fees. */
function sellNetMin(cost: Fixed, lots: number, fraction: Fixed, decimals: number): Fixed {
  const rounding = 2n * BigInt(lots) * unitOf(decimals);
  const net = roundAt(cost, decimals, 'floor') - ceilAt(times(cost, fraction), decimals) - rounding;
  return net > 0n ? net : 0n;
}

/** The combined funding gate on the post-trade state (see the file comment, step 3). */
function gate(e: ClobEngine, account: ClobAccount, legs: Leg[], now: number): Rejection | null {
  return optionGate(e, account, legs.filter((l) => l.market.isOption), now)
    ?? spotGate(e, account, legs.filter((l) => !l.market.isOption), now);
}

function optionGate(e: ClobEngine, account: ClobAccount, legs: Leg[], now: number): Rejection | null {
  if (legs.length === 0) return null;
  const fraction = e.optionFees.maxCapPct / 100n;
  const deltas = new Map<ClobMarket, { position: number; sells: number }>();
  let cash = 0n;
  for (const l of legs) {
    const lots = l.plan.lots;
    if (l.request.side === BUY) {
      deltas.set(l.market, { position: lots, sells: 0 });
      cash -= immediateBuyReserve(e, l.market, l.cost, lots, now);
    } else {
      deltas.set(l.market, { position: -lots, sells: 0 });
      cash += sellNetMin(l.cost, lots, fraction, e.settlementDecimals);
    }
  }
  // Premiums and fees are paid in cash: whatever the margin figures say (a risk-reducing strategy
  // may pass with collateral already short), the bucket must hold them, beside what resting orders
  // reserve; a user bucket never ends a command negative.
  const asset = e.settlementAsset;
  const cashLeft = e.userBalance(account.id, 'options', asset) - account.held('options', asset) + cash;
  if (cashLeft < 0n) {
    return reject('INSUFFICIENT_MARGIN', `the strategy's premiums and fees exceed the options cash by ${formatDecimal(-cashLeft)} ${asset}`);
  }
  const before = availableNow(e, account, now);
  const after = before - marginAddedBy(e, account, now, deltas) + cash;
  if (after >= 0n || after >= before) return null;
  const message = 'the strategy would leave the options bucket short of collateral for premiums and margin';
  return reject('INSUFFICIENT_MARGIN', message);
}

function spotGate(e: ClobEngine, account: ClobAccount, legs: Leg[], now: number): Rejection | null {
  if (legs.length === 0) return null;
  const fraction = e.spotMaxBps / 10_000n;
  const free = (asset: string) => e.userBalance(account.id, 'spot', asset) - account.held('spot', asset);
  let out = 0n;
  let inflow = 0n;
  for (const l of legs) {
    if (l.request.side === BUY) {
      out += immediateBuyReserve(e, l.market, l.cost, l.plan.lots, now);
      continue;
    }
    inflow += sellNetMin(l.cost, l.plan.lots, fraction, e.settlementDecimals);
    const base = l.market.baseAsset;
    if (free(base) < l.plan.reserve) {
      return reject('INSUFFICIENT_BALANCE', `insufficient spot ${base} for leg ${l.market.spec.id}`);
    }
  }
  const asset = e.settlementAsset;
  if (out === 0n || free(asset) - out + inflow >= 0n) return null;
  return reject('INSUFFICIENT_BALANCE', `insufficient spot ${asset} for the strategy's buy legs`);
}

function figures(l: Leg): LegFigures {
  const units = l.market.units;
  return {
    marketId: l.market.spec.id,
    side: l.request.side,
    quantity: l.request.quantity,
    price: l.request.price!,
    fillableQuantity: units.size(l.fillable),
    notional: l.cost,
    estFee: l.plan.estFee,
    feeBps: l.plan.feeBps,
  };
}
