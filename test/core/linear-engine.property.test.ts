/**
 * Model-based property test of the linear engine (research/reliability.md 4 and 7.4), in-process:
 * fast-check generates command streams for 5 funded accounts - limit/market/ioc/fok/post-only/
 * reduce-only/isolated/stop/TP-SL orders on BTC-PERP around the mark (in and out of the 5 % band,
 * on and off tick, bad sizes, duplicate client ids, a few on ETH-PERP without an index and on an
 * unknown market), cancels of own, other accounts' and unknown ids, cancel-all with each filter,
 * bulk quotes with cancelAll / quoteId replace, position closes, index moves (sometimes gaps, and
 * time jumps that make the index stale) and clock ticks - and applies them to
 * `new Exchange(coreConfig(...))` at increasing times.
 *
 * The oracle is a deliberately naive model: NaiveBook (the book's own test oracle) driven with the
 * same accepted orders, plus signed position sizes, per-order lot accounting and the upkeep the
 * contract promises (reduce-only orders never add to a position: clipped on entry, trimmed as the
 * position shrinks, cancelled when it closes or flips; TP/SL exits sized to the lots the parent's
 * fills open, a new pair once none waits, one firing cancels the other). It predicts every rejection code except the margin gate (which
 * it only bounds: never for reduce-only orders), every fill (maker order, price, lots, in order),
 * every order status and size, the resting book level by level, and every position.
 *
 * After every command it also checks: ledger sums to zero per asset, no negative user bucket, the
 * engine's own audit (cached margins, the live reduce-only count), the
 * engine book's own invariants (never crossed), filled + remaining + cancelled = original for
 * every order, an accepted FOK fills completely, reduce-only fills never grow or flip a position,
 * sum of longs = sum of shorts = market open interest, the resting-order totals equal a
 * recomputation from the resting non-reduce-only orders, and a rejected command returns no events
 * and leaves a canonical dump (ledger, books, accounts' orders, positions, totals) unchanged. At
 * the end of each run the accepted commands, through the journal codec, are replayed into a fresh
 * Exchange at the same times: same dump, same event stream.
 *
 * Seeded: prints its seed; replay with SEED=<n> (NUM_RUNS=<n> to change the run count).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decode, encode } from '../../src/adapters/store/codec.ts';
import { coreConfig } from '../../src/config/core.ts';
import { NaiveBook } from '../../src/core/book/naive-book.ts';
import { BookOrder, BUY, MARKET_BUY_LIMIT, MARKET_SELL_LIMIT, SELL } from '../../src/core/book/order-book.ts';
import type { MakerCancel, MatchSink, SelfTradePrevention, Side } from '../../src/core/book/order-book.ts';
import type { Command } from '../../src/core/commands.ts';
import type { ExchangeEvent } from '../../src/core/events.ts';
import { Exchange, type Outcome, type ResultOf } from '../../src/core/exchange.ts';
import type { CancelFilter, PlaceResult, QuoteResult } from '../../src/core/linear/engine.ts';
import { FUND_ACCOUNT } from '../../src/core/linear/lifecycle.ts';
import { closeBoundTicks, closingNotional, reduceOnlySums, reduceOnlySumsText } from '../../src/core/linear/margin.ts';
import { ReduceOnlyLosses } from '../../src/core/linear/reduce-only-losses.ts';
import type { LinearAccount } from '../../src/core/linear/account.ts';
import type { LinearMarket } from '../../src/core/linear/market.ts';
import type { LinearOrder, OrderRequest } from '../../src/core/linear/order.ts';
import type { Position } from '../../src/core/linear/position.ts';
import type { MarketSpec } from '../../src/core/markets.ts';
import { fx, roundTo, type Fixed } from '../../src/core/money.ts';
import type {
  FillRecord, MarginMode, OrderRecord, OrderStatus, OrderType, TimeInForce,
} from '../../src/core/records.ts';

const SEED = process.env.SEED !== undefined ? Number(process.env.SEED) : Date.now() % 2 ** 31;
const NUM_RUNS = Number(process.env.NUM_RUNS ?? 300);
const T0 = Date.UTC(2026, 0, 6, 12);
const ADDRESSES = Array.from({ length: 5 }, (_, i) => `0x${(0xbeef0 + i).toString(16).padStart(40, '0')}`);
const FUNDS = ['300000', '80000', '25000', '6000', '1500'];
const BTC = 'BTC-PERP';
const ETH = 'ETH-PERP';
const UNKNOWN = 'XRP-PERP';
const CLIENT_IDS = ['c1', 'c2', 'c3'];
const QUOTE_IDS = ['q1', 'q2'];
const BASE_CONFIG = coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3_600_000 });
// Open-order limits low enough for random streams to reach them (with take-profit / stop-loss
// exits owed by resting parents), so the model's rule is checked against the engine's.
const CONFIG = {
  ...BASE_CONFIG,
  linear: {
    ...BASE_CONFIG.linear,
    limits: { ...BASE_CONFIG.linear.limits, maxOpenOrdersPerAccount: 14, maxOpenOrdersPerMarket: 9, maxTriggersPerMarket: 3 },
  },
};
const LIMITS = CONFIG.linear.limits;
const SPECS = new Map<string, MarketSpec>(CONFIG.linear.perps.map((s) => [s.id, s]));
const STALE_JUMP = 3_700_000;

// ---- generated steps (abstract; resolved against the current state when run) ----

type PriceSpec = { k: 'grid'; steps: number } | { k: 'pct'; bps: number } | { k: 'offTick'; steps: number };
type QtyKind = 'ok' | 'offStep' | 'zero' | 'huge';

interface OrderSpec {
  market: string;
  side: Side;
  type: OrderType;
  tif: TimeInForce;
  postOnly: boolean;
  reduceOnly: boolean;
  isolated: boolean;
  price: PriceSpec;
  withPrice: boolean;
  lots: number;
  qty: QtyKind;
  cid: number | null;
  stp: SelfTradePrevention;
  stop: number | null;
  tp: number | null;
  sl: number | null;
}

type Op =
  | { k: 'place'; acct: number; o: OrderSpec }
  | { k: 'cancel'; acct: number; who: 'own' | 'other' | 'unknown'; pick: number }
  | { k: 'cancelAll'; acct: number; filter: number; pick: number }
  | {
    k: 'quote'; acct: number; unknown: boolean; cancelAll: boolean; replace: boolean; qid: number;
    levels: OrderSpec[];
  }
  | {
    k: 'close'; acct: number; isolated: boolean; partial: number | null; limit: PriceSpec | null;
    ioc: boolean;
  }
  | { k: 'index'; bps: number }
  | { k: 'tick' };

const oneIn = (n: number) => fc.integer({ min: 0, max: n - 1 }).map((x) => x === 0);
const maybe = <T>(arb: fc.Arbitrary<T>, nullWeight: number, weight = 1) =>
  fc.oneof({ weight: nullWeight, arbitrary: fc.constant(null) }, { weight, arbitrary: arb });

const steps20 = fc.integer({ min: -20, max: 20 });
const priceArb: fc.Arbitrary<PriceSpec> = fc.oneof(
  { weight: 16, arbitrary: steps20.map((steps) => ({ k: 'grid' as const, steps })) },
  { weight: 3, arbitrary: fc.integer({ min: -800, max: 800 }).map((bps) => ({ k: 'pct' as const, bps })) },
  { weight: 1, arbitrary: steps20.map((steps) => ({ k: 'offTick' as const, steps })) },
);
const lotsArb = fc.oneof(
  fc.integer({ min: 1, max: 60 }),
  fc.integer({ min: 60, max: 3_000 }),
  fc.integer({ min: 3_000, max: 30_000 }),
);
const qtyArb = fc.oneof(
  { weight: 46, arbitrary: fc.constant<QtyKind>('ok') },
  { weight: 1, arbitrary: fc.constantFrom<QtyKind>('offStep', 'zero', 'huge') },
);
const stpArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant<SelfTradePrevention>('cancel_maker') },
  { weight: 2, arbitrary: fc.constantFrom<SelfTradePrevention>('cancel_taker', 'cancel_both') },
);
const marketArb = fc.oneof(
  { weight: 45, arbitrary: fc.constant(BTC) },
  { weight: 3, arbitrary: fc.constant(ETH) },
  { weight: 1, arbitrary: fc.constant(UNKNOWN) },
);

const orderArb: fc.Arbitrary<OrderSpec> = fc
  .record({
    market: marketArb,
    side: fc.constantFrom<Side>(BUY, SELL),
    typePick: fc.integer({ min: 0, max: 99 }),
    tifPick: fc.integer({ min: 0, max: 99 }),
    postOnly: fc.integer({ min: 0, max: 99 }).map((n) => n < 14),
    reduceOnly: fc.integer({ min: 0, max: 99 }).map((n) => n < 22),
    isolated: fc.integer({ min: 0, max: 99 }).map((n) => n < 15),
    price: priceArb,
    withPrice: fc.integer({ min: 0, max: 99 }).map((n) => n < 3),
    lots: lotsArb,
    qty: qtyArb,
    cid: maybe(fc.nat(CLIENT_IDS.length - 1), 6),
    stp: stpArb,
    stop: maybe(fc.integer({ min: -300, max: 300 }), 9),
    tp: maybe(fc.integer({ min: -100, max: 600 }), 7),
    sl: maybe(fc.integer({ min: -100, max: 600 }), 7),
  })
  .map((g) => {
    const type: OrderType = g.typePick < 75 ? 'limit' : 'market';
    const tif: TimeInForce = type === 'limit'
      ? (g.tifPick < 60 ? 'gtc' : g.tifPick < 85 ? 'ioc' : 'fok')
      : (g.tifPick < 70 ? 'ioc' : g.tifPick < 95 ? 'fok' : 'gtc');
    return {
      market: g.market, side: g.side, type, tif, postOnly: g.postOnly, reduceOnly: g.reduceOnly,
      isolated: g.isolated, price: g.price, withPrice: g.withPrice, lots: g.lots, qty: g.qty, cid: g.cid,
      stp: g.stp, stop: g.stop, tp: g.tp, sl: g.sl,
    };
  });

const levelArb: fc.Arbitrary<OrderSpec> = fc
  .record({
    side: fc.constantFrom<Side>(BUY, SELL),
    price: priceArb,
    lots: lotsArb,
    postOnly: fc.boolean(),
    ioc: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    reduceOnly: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    cid: maybe(fc.nat(CLIENT_IDS.length - 1), 8),
  })
  .map((g) => ({
    market: BTC, side: g.side, type: 'limit' as const, tif: g.ioc ? 'ioc' as const : 'gtc' as const,
    postOnly: g.postOnly, reduceOnly: g.reduceOnly, isolated: false, price: g.price, withPrice: true,
    lots: g.lots, qty: 'ok' as const, cid: g.cid, stp: 'cancel_maker' as const,
    stop: null, tp: null, sl: null,
  }));

const acctArb = fc.nat(ADDRESSES.length - 1);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 44, arbitrary: fc.record({ k: fc.constant('place' as const), acct: acctArb, o: orderArb }) },
  {
    weight: 9,
    arbitrary: fc.record({
      k: fc.constant('cancel' as const), acct: acctArb,
      who: fc.constantFrom('own', 'own', 'other', 'unknown'), pick: fc.nat(),
    }) as fc.Arbitrary<Op>,
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('cancelAll' as const), acct: acctArb, filter: fc.nat(5), pick: fc.nat(),
    }),
  },
  {
    weight: 9,
    arbitrary: fc.record({
      k: fc.constant('quote' as const), acct: acctArb, unknown: oneIn(30),
      cancelAll: fc.boolean(), replace: oneIn(5), qid: fc.nat(QUOTE_IDS.length),
      levels: fc.array(levelArb, { minLength: 1, maxLength: 4 }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      k: fc.constant('close' as const), acct: acctArb, isolated: oneIn(5),
      partial: maybe(fc.integer({ min: 1, max: 20_000 }), 1), limit: maybe(priceArb, 2), ioc: fc.boolean(),
    }),
  },
  {
    weight: 11,
    arbitrary: fc.record({
      k: fc.constant('index' as const),
      bps: fc.oneof(
        { weight: 9, arbitrary: fc.integer({ min: -250, max: 250 }) },
        { weight: 1, arbitrary: fc.integer({ min: -900, max: 900 }) },
      ),
    }),
  },
  { weight: 6, arbitrary: fc.record({ k: fc.constant('tick' as const) }) },
);
const stepsArb = fc.array(
  fc.record({
    op: opArb,
    dt: fc.oneof(
      { weight: 40, arbitrary: fc.integer({ min: 1, max: 4_000 }) },
      { weight: 1, arbitrary: fc.constant(STALE_JUMP) },
    ),
  }),
  { minLength: 1, maxLength: 200, size: 'max' },
);

// ---- units, band and price arithmetic (written from the market spec, not the engine's helpers) ----

const tickOf = (spec: MarketSpec) => 10n ** BigInt(18 - spec.priceDecimals);
const stepOf = (spec: MarketSpec) => 10n ** BigInt(18 - spec.sizeDecimals);
const bandOf = (spec: MarketSpec, mark: Fixed) => (mark * BigInt(spec.priceBandBps)) / 10_000n;

function inBand(spec: MarketSpec, side: Side, price: Fixed, mark: Fixed): boolean {
  const band = bandOf(spec, mark);
  return side === BUY ? price <= mark + band : price >= mark - band;
}

/**
 * Book limit of a market order: the band edge (in ticks) around the mark, around the last mark
 * while there is none, or anything when the market was never marked.
 */
function marketLimit(spec: MarketSpec, side: Side, fresh: Fixed | null, last: Fixed | null): number {
  const mark = fresh ?? last;
  if (mark === null) return side === BUY ? MARKET_BUY_LIMIT : MARKET_SELL_LIMIT;
  const tick = tickOf(spec);
  const band = bandOf(spec, mark);
  if (side === BUY) return Number((mark + band) / tick);
  const ticks = (mark - band + tick - 1n) / tick;
  return Number(ticks < 1n ? 1n : ticks);
}

function priceFrom(spec: MarketSpec, ref: Fixed, p: PriceSpec): Fixed {
  const tick = tickOf(spec);
  const grid = 50n * tick;
  const base = ((ref + grid / 2n) / grid) * grid;
  if (p.k === 'grid') return base + BigInt(p.steps) * grid;
  if (p.k === 'offTick') return base + BigInt(p.steps) * grid + tick / 2n;
  return ((ref * BigInt(10_000 + p.bps)) / 10_000n / tick) * tick;
}

/** `ref` moved by `bps` basis points, rounded down to the tick. */
const rel = (spec: MarketSpec, ref: Fixed, bps: number) =>
  ((ref * BigInt(10_000 + bps)) / 10_000n / tickOf(spec)) * tickOf(spec);

// ---- the model ----

interface MOrder {
  readonly id: number;
  readonly acct: number;
  readonly request: OrderRequest;
  readonly priceTicks: number;
  readonly isQuote: boolean;
  original: number;
  filled: number;
  cancelled: number;
  remaining: number;
  status: OrderStatus;
  trigger: { price: Fixed; dir: 1 | -1 } | null;
  exits: MOrder[] | null;
  sibling: MOrder | null;
  node: BookOrder | null;
  rejectReason: string | null;
}

interface Expectation {
  pre: string | null;
  post: string | null;
  lots: number;
  limitTicks: number;
  trigger: MOrder['trigger'];
}

const live = (o: MOrder) => o.status === 'open' || o.status === 'untriggered';
/** The order has a take-profit or stop-loss exit waiting (else a live one owes the exits it declares). */
const exitsWaiting = (o: MOrder) => o.exits !== null && o.exits.some((x) => x.status === 'untriggered');
const NO_BOUND = -1;

class Model implements MatchSink {
  readonly books = new Map<string, NaiveBook>([[BTC, new NaiveBook()], [ETH, new NaiveBook()]]);
  readonly orders = new Map<number, MOrder>();
  /** Live orders by id; ids only grow, so insertion order is the engine's account order. */
  live = new Map<number, MOrder>();
  readonly positions = new Map<string, number>();
  private readonly clientIds = new Map<string, number | null>();
  nextId = 1;
  now = 0;
  /** Fills of the current command: [maker id, taker id, price ticks, lots]. */
  fills: [number, number, number, number][] = [];
  private taker: MOrder | null = null;
  /** How often each interesting path ran (printed, and a few required to be reached). */
  readonly paths = new Map<string, number>();
  /** The market's last mark while it has no fresh one (the engine's, like the fresh mark the runner passes). */
  lastMark: (marketId: string) => Fixed | null = () => null;
  /**
   * The bankruptcy price (ticks) of the position an order would reduce, or NO_BOUND: money the
   * model does not track, so the Run reads it from the engine's state when the model predicts.
   */
  bound: (acct: number, r: OrderRequest, anchor: Fixed, lots: number) => number = () => NO_BOUND;
  /**
   * The matching limit the engine used for an order in the current command, if it executed it. A
   * conditional order fires inside a command whose end state the model reads, so for a fired order
   * the bound (money, at the state it fired in) is taken from the engine.
   */
  executedLimit: (orderId: number) => number | undefined = () => undefined;
  /**
   * Whether the engine would let a resting order fill at its price now (its bankruptcy bound, money
   * the model does not track): asked before a command, for the fill-or-kill and liquidity checks.
   */
  makerAdmits: (orderId: number) => boolean = () => true;
  /**
   * The fill-or-kill walk's money, the engine's figures (checks.ts fokFillableLots): whether a maker
   * may fill once earlier fills of its owner took `spent` and left its isolated position `played`;
   * what a fill takes from its owner; its isolated position after a fill (undefined: none to play).
   */
  makerAdmitsAfter: (orderId: number, spent: Fixed, played: Position | undefined, heldLots?: number) => boolean = () => true;
  makerFillCost: (orderId: number, lots: number, heldLots: number) => Fixed = () => 0n;
  playMakerFill: (orderId: number, lots: number, played: Position | undefined) => Position | undefined = () => undefined;
  /** Resting orders the engine refused at the match in the current command (cancelled, not filled). */
  readonly refused = new Set<number>();

  private hit(path: string): void {
    this.paths.set(path, (this.paths.get(path) ?? 0) + 1);
  }

  // -- reads --

  position(acct: number, marketId: string, mode: MarginMode): number {
    return this.positions.get(`${acct}|${marketId}|${mode}`) ?? 0;
  }

  liveOf(acct: number): MOrder[] {
    return [...this.live.values()].filter((o) => o.acct === acct);
  }

  release(acct: number, cid: string): void {
    this.clientIds.set(`${acct}|${cid}`, this.now);
  }

  /** A ladder replace frees, for its levels, the ids of the quotes it cancelled that they reuse. */
  handOver(acct: number, replaced: readonly MOrder[], levels: readonly OrderRequest[]): void {
    for (const l of levels) {
      const cid = l.clientOrderId;
      if (cid !== null && replaced.some((o) => o.request.clientOrderId === cid)) this.clientIds.delete(`${acct}|${cid}`);
    }
  }

  private cidInUse(acct: number, cid: string): boolean {
    const key = `${acct}|${cid}`;
    if (!this.clientIds.has(key)) return false;
    const releasedAt = this.clientIds.get(key)!;
    return releasedAt === null || releasedAt + LIMITS.clientIdRetentionMs > this.now;
  }

  // -- predictions --

  /** The checks up to (not including) the margin gate; null when they all pass. */
  predictPre(acct: number, r: OrderRequest, triggered: boolean, mark: Fixed | null): string | null {
    const spec = SPECS.get(r.marketId);
    if (spec === undefined) return 'NOT_FOUND';
    if (r.type === 'limit' && r.price === null) return 'VALIDATION_ERROR';
    if (r.type === 'market' && (r.price !== null || r.timeInForce === 'gtc')) return 'VALIDATION_ERROR';
    if (r.postOnly && (r.type !== 'limit' || r.timeInForce !== 'gtc')) return 'VALIDATION_ERROR';
    if (r.reduceOnly && (r.takeProfitPrice !== null || r.stopLossPrice !== null)) return 'VALIDATION_ERROR';
    const ref = r.price ?? r.stopPrice;
    if (ref !== null) {
      const up = r.side === BUY;
      const tp = r.takeProfitPrice;
      const sl = r.stopLossPrice;
      if (tp !== null && (up ? tp <= ref : tp >= ref)) return 'VALIDATION_ERROR';
      if (sl !== null && (up ? sl >= ref : sl <= ref)) return 'VALIDATION_ERROR';
    }
    const tick = tickOf(spec);
    if (r.price !== null && r.price % tick !== 0n) return 'INVALID_TICK';
    if (r.quantity % stepOf(spec) !== 0n) return 'INVALID_STEP';
    for (const v of [r.stopPrice, r.takeProfitPrice, r.stopLossPrice]) {
      if (v !== null && v % tick !== 0n) return 'INVALID_TICK';
    }
    if (r.quantity < spec.minSize || r.quantity > spec.maxSize) return 'SIZE_OUT_OF_RANGE';
    if (mark === null && !r.reduceOnly) return 'MARKET_CLOSED';
    if (mark !== null && r.price === null && r.stopPrice === null) {
      // a market order's exits are checked against the mark it fills near
      const up = r.side === BUY;
      const tp = r.takeProfitPrice;
      const sl = r.stopLossPrice;
      if (tp !== null && (up ? tp <= mark : tp >= mark)) return 'VALIDATION_ERROR';
      if (sl !== null && (up ? sl >= mark : sl <= mark)) return 'VALIDATION_ERROR';
    }
    const anchor = mark ?? this.lastMark(r.marketId); // the band holds around the last mark while there is none
    if (anchor !== null && r.price !== null && r.stopPrice === null && !inBand(spec, r.side, r.price, anchor)) {
      return 'PRICE_OUT_OF_BAND';
    }
    if (!triggered) {
      // Exits count from their parent's placement: a live order that has not filled yet still owes
      // the take-profit / stop-loss orders it declared.
      const declared = (o: { request: OrderRequest }) =>
        o.request.reduceOnly ? 0 : [o.request.takeProfitPrice, o.request.stopLossPrice].filter((p) => p !== null).length;
      const owed = (orders: MOrder[]) => orders.reduce((n, o) => n + (exitsWaiting(o) ? 0 : declared(o)), 0);
      const mine = this.liveOf(acct);
      const inMarket = mine.filter((o) => o.request.marketId === r.marketId);
      const conditional = r.stopPrice !== null;
      const exits = declared({ request: r });
      const leaves = (r.timeInForce === 'gtc' || conditional ? 1 : 0) + exits; // an order that cannot rest passes
      if (leaves > 0 && mine.length + owed(mine) + leaves > LIMITS.maxOpenOrdersPerAccount) return 'TOO_MANY_OPEN_ORDERS';
      if (leaves > 0 && inMarket.length + owed(inMarket) + leaves > LIMITS.maxOpenOrdersPerMarket) return 'TOO_MANY_OPEN_ORDERS';
      const triggers = inMarket.filter((o) => o.status === 'untriggered').length;
      const added = (conditional ? 1 : 0) + exits;
      if (added > 0 && triggers + owed(inMarket) + added > LIMITS.maxTriggersPerMarket) return 'TOO_MANY_OPEN_ORDERS';
      const cid = r.clientOrderId;
      if (cid !== null && this.cidInUse(acct, cid)) return 'DUPLICATE_CLIENT_ORDER_ID';
    }
    if (r.reduceOnly) {
      const pos = this.position(acct, r.marketId, r.marginMode);
      if (pos === 0 || (pos > 0) === (r.side === BUY)) return 'REDUCE_ONLY_REJECTED';
    }
    return null;
  }

  /** The liquidity checks that follow the margin gate (immediate orders only). */
  predictPost(acct: number, r: OrderRequest, lots: number, limitTicks: number): string | null {
    const book = this.books.get(r.marketId)!;
    const spec = SPECS.get(r.marketId)!;
    const priceTicks = r.price === null ? 0 : Number(r.price / tickOf(spec));
    if (r.postOnly && book.wouldCross(r.side, priceTicks)) return 'POST_ONLY_WOULD_CROSS';
    if (r.timeInForce === 'fok') {
      const fillable = this.fokFillable(acct, r, lots, limitTicks);
      const plain = book.fillableLots(r.side, limitTicks, lots, acct, r.selfTradePrevention, this.admitted);
      if (fillable < plain) this.hit('fok starved by upkeep');
      if (fillable < lots) return 'FOK_NOT_FILLED';
    } else if (r.timeInForce === 'ioc' || r.type === 'market') {
      if (book.fillableLots(r.side, limitTicks, 1, acct, r.selfTradePrevention, this.admitted) === 0) return 'NO_LIQUIDITY';
    }
    return null;
  }

  private readonly admitted = (node: BookOrder): boolean => {
    const ok = this.makerAdmits(node.id);
    if (!ok) this.hit('maker to be refused skipped by a prediction');
    return ok;
  };

  /**
   * Lots a fill-or-kill taker would get: a walk of the naive book that applies the reduce-only
   * upkeep each maker fill causes to that maker's other reduce-only orders, and asks each maker
   * with what its owner's earlier fills in the walk took (makerAdmitsAfter).
   */
  private fokFillable(acct: number, r: OrderRequest, lots: number, limitTicks: number): number {
    const makerSide = r.side === BUY ? SELL : BUY;
    const positions = new Map<string, number>();
    const remaining = new Map<number, number>();
    const spent = new Map<number, Fixed>();
    const played = new Map<number, Position>();
    let left = lots;
    let done = false;
    this.books.get(r.marketId)!.forEachResting((node) => {
      if (done || node.side !== makerSide) return;
      const beyond = r.side === BUY ? node.priceTicks > limitTicks : node.priceTicks < limitTicks;
      if (left === 0 || beyond) return void (done = true);
      if (node.owner === acct) return void (done = r.selfTradePrevention !== 'cancel_maker');
      if (!this.admitted(node)) return;
      const maker = this.orders.get(node.id)!;
      const mode = maker.request.marginMode;
      const key = `${maker.acct}|${mode}`;
      const before = positions.get(key) ?? this.position(maker.acct, r.marketId, mode);
      // What the maker's position holds on its order's side after the walk's earlier fills (the base of an isolated opening's margin).
      const held = before !== 0 && (before > 0) === (maker.request.side === BUY) ? Math.abs(before) : 0;
      const spentBefore = spent.get(node.owner) ?? 0n;
      if (!this.makerAdmitsAfter(node.id, spentBefore, played.get(node.owner), held)) return void this.hit('maker refused after its owner\'s earlier fills');
      const available = remaining.get(node.id) ?? node.remainingLots;
      const take = Math.min(available, left);
      if (take === 0) return;
      left -= take;
      remaining.set(node.id, available - take);
      spent.set(node.owner, spentBefore + this.makerFillCost(node.id, take, held));
      const next = this.playMakerFill(node.id, take, played.get(node.owner));
      if (next !== undefined) played.set(node.owner, next);
      const after = before + (maker.request.side === BUY ? take : -take);
      positions.set(key, after);
      const ended = after === 0 || (before !== 0 && Math.sign(after) !== Math.sign(before));
      if (!ended && Math.abs(after) >= Math.abs(before)) return;
      let room = ended ? 0 : Math.abs(after);
      for (const o of this.liveOf(maker.acct)) {
        const q = o.request;
        if (q.marketId !== r.marketId || q.marginMode !== mode || !q.reduceOnly || o.node === null) continue;
        const keep = Math.min(remaining.get(o.id) ?? o.remaining, room);
        room -= keep;
        remaining.set(o.id, keep);
      }
    });
    return lots - left;
  }

  expect(acct: number, r: OrderRequest, mark: Fixed | null, triggered = false): Expectation {
    const pre = this.predictPre(acct, r, triggered, mark);
    const e: Expectation = { pre, post: null, lots: 0, limitTicks: 0, trigger: null };
    if (e.pre !== null) return e;
    const spec = SPECS.get(r.marketId)!;
    e.lots = Number(r.quantity / stepOf(spec));
    if (r.stopPrice !== null) {
      const reference = mark ?? this.lastMark(r.marketId) ?? r.stopPrice;
      e.trigger = { price: r.stopPrice, dir: r.stopPrice >= reference ? 1 : -1 };
      return e;
    }
    if (r.reduceOnly) {
      const cap = Math.abs(this.position(acct, r.marketId, r.marginMode));
      if (e.lots > cap) {
        e.lots = cap;
        this.hit('reduce-only clipped on entry');
      }
    }
    e.limitTicks = r.type === 'market' ? marketLimit(spec, r.side, mark, this.lastMark(r.marketId)) : Number(r.price! / tickOf(spec));
    // A user order never trades a position beyond its bankruptcy price: a resting order priced past
    // it is refused, an immediate one matches no further than it.
    const anchor = mark ?? this.lastMark(r.marketId);
    const bound = anchor === null ? NO_BOUND : this.bound(acct, r, anchor, e.lots);
    const past = bound !== NO_BOUND && (r.side === BUY ? e.limitTicks > bound : e.limitTicks < bound);
    if (past && r.type === 'limit' && r.timeInForce === 'gtc') {
      this.hit('refused past the bankruptcy price');
      e.pre = 'INSUFFICIENT_MARGIN';
      return e;
    }
    if (past) {
      this.hit('bounded by the bankruptcy price');
      e.limitTicks = bound;
    }
    e.post = this.predictPost(acct, r, e.lots, e.limitTicks);
    return e;
  }

  // -- state changes --

  accept(acct: number, r: OrderRequest, e: Expectation, isQuote: boolean, engineId: string): MOrder {
    const spec = SPECS.get(r.marketId)!;
    const o: MOrder = {
      id: this.nextId++, acct, request: r, isQuote,
      priceTicks: r.price === null ? 0 : Number(r.price / tickOf(spec)),
      original: e.lots, filled: 0, cancelled: 0, remaining: e.lots,
      status: e.trigger === null ? 'open' : 'untriggered', trigger: e.trigger,
      exits: null, sibling: null, node: null, rejectReason: null,
    };
    assert.equal(engineId, String(o.id), 'order ids are assigned in command order');
    this.orders.set(o.id, o);
    this.live.set(o.id, o);
    if (r.clientOrderId !== null) this.clientIds.set(`${acct}|${r.clientOrderId}`, null);
    if (o.trigger === null) this.execute(o, e.limitTicks);
    return o;
  }

  private execute(o: MOrder, limitTicks: number): void {
    const r = o.request;
    const book = this.books.get(r.marketId)!;
    if (r.reduceOnly) this.clip(o);
    this.taker = o;
    if (o.remaining > 0) book.match(r.side, limitTicks, o.remaining, o.acct, r.selfTradePrevention, this);
    this.taker = null;
    const selfTradeStop = book.lastStopReason === 'self_trade';
    if (o.remaining === 0) this.end(o, 'filled');
    else if (r.type === 'limit' && r.timeInForce === 'gtc' && !selfTradeStop) this.rest(o);
    else this.end(o, 'cancelled');
  }

  private rest(o: MOrder): void {
    if (o.request.reduceOnly) {
      this.clip(o);
      if (o.remaining === 0) return this.end(o, 'cancelled');
    }
    o.node = new BookOrder(o.id, o.acct, o.request.side, o.priceTicks, o.remaining);
    this.books.get(o.request.marketId)!.rest(o.node);
    o.status = 'open';
  }

  private clip(o: MOrder): void {
    const pos = this.position(o.acct, o.request.marketId, o.request.marginMode);
    const reduces = pos !== 0 && (pos > 0) !== (o.request.side === BUY);
    const cap = reduces ? Math.abs(pos) : 0;
    if (o.remaining <= cap) return;
    o.cancelled += o.remaining - cap;
    o.remaining = cap;
  }

  private end(o: MOrder, status: OrderStatus): void {
    if (status === 'filled') assert.equal(o.remaining, 0);
    o.cancelled += o.remaining;
    o.remaining = 0;
    o.status = status;
    this.live.delete(o.id);
    if (o.request.clientOrderId !== null) this.release(o.acct, o.request.clientOrderId);
  }

  cancelOrder(o: MOrder): void {
    if (o.node !== null) {
      assert.ok(this.books.get(o.request.marketId)!.cancel(o.id) !== undefined);
      o.node = null;
    }
    this.end(o, 'cancelled');
  }

  /** A maker the engine refused at the match (checked as it refused it: Run's sink). */
  admits(node: BookOrder): boolean {
    return !this.refused.has(node.id);
  }

  onMakerCancelled(node: BookOrder, why: MakerCancel): void {
    this.hit(why === 'refused' ? 'maker refused at its bankruptcy bound' : 'self-trade maker cancel');
    const maker = this.orders.get(node.id)!;
    maker.node = null;
    if (why === 'refused') maker.rejectReason = 'INSUFFICIENT_MARGIN';
    this.end(maker, 'cancelled');
  }

  onFill(node: BookOrder, lots: number, priceTicks: number): void {
    const maker = this.orders.get(node.id)!;
    const taker = this.taker!;
    assert.equal(node.remainingLots, maker.remaining - lots);
    maker.remaining -= lots;
    maker.filled += lots;
    if (maker.remaining === 0) maker.node = null;
    taker.remaining -= lots;
    taker.filled += lots;
    this.fills.push([maker.id, taker.id, priceTicks, lots]);
    const makerOpened = this.settle(maker, lots);
    const takerOpened = this.settle(taker, lots);
    // the upkeep above may already have cancelled a partly filled reduce-only maker
    if (maker.remaining === 0 && live(maker)) this.end(maker, 'filled');
    this.attachExits(maker, makerOpened);
    this.attachExits(taker, takerOpened);
  }

  /** One side of a fill: position, then the promised reduce-only upkeep. Returns the lots it opened or added. */
  private settle(o: MOrder, lots: number): number {
    const r = o.request;
    const key = `${o.acct}|${r.marketId}|${r.marginMode}`;
    const before = this.positions.get(key) ?? 0;
    const after = before + (r.side === BUY ? lots : -lots);
    const closed = before !== 0 && (before > 0) !== (r.side === BUY) ? Math.min(Math.abs(before), lots) : 0;
    if (r.reduceOnly) {
      const what = `reduce-only order ${o.id} moved the position ${before} -> ${after}`;
      assert.ok(Math.abs(after) < Math.abs(before), `${what}: it grew`);
      assert.ok(after === 0 || Math.sign(after) === Math.sign(before), `${what}: it flipped`);
    }
    if (after === 0) this.positions.delete(key);
    else this.positions.set(key, after);
    const sameBook = (x: MOrder) =>
      x.request.marketId === r.marketId && x.request.marginMode === r.marginMode;
    if (after === 0 || (before !== 0 && Math.sign(after) !== Math.sign(before))) {
      if (after !== 0) this.hit('position flipped');
      for (const x of this.liveOf(o.acct)) {
        if (x === this.taker || x.remaining === 0 || !sameBook(x) || !x.request.reduceOnly) continue;
        this.hit(after === 0 ? 'reduce-only cancelled at close' : 'reduce-only cancelled at flip');
        this.cancelOrder(x);
      }
    } else if (Math.abs(after) < Math.abs(before)) {
      let room = Math.abs(after);
      for (const x of this.liveOf(o.acct)) {
        if (!sameBook(x) || !x.request.reduceOnly || x.node === null || x === this.taker) continue;
        if (x.remaining <= room) room -= x.remaining;
        else if (room > 0) {
          this.hit('reduce-only trimmed');
          this.books.get(r.marketId)!.reduce(x.id, room);
          x.cancelled += x.remaining - room;
          x.remaining = room;
          room = 0;
        } else this.cancelOrder(x);
      }
    }
    return lots - closed;
  }

  /** Exits protect the lots a fill opens: they grow the waiting pair, or start a new one when none waits. */
  private attachExits(parent: MOrder, lots: number): void {
    const r = parent.request;
    if (lots === 0 || r.reduceOnly || (r.takeProfitPrice === null && r.stopLossPrice === null)) return;
    if (exitsWaiting(parent)) {
      for (const x of parent.exits!) {
        if (x.status !== 'untriggered') continue;
        x.original += lots;
        x.remaining += lots;
      }
      return;
    }
    const up = r.side === BUY;
    const tp = r.takeProfitPrice === null ? null : this.exit(parent, r.takeProfitPrice, up ? 1 : -1, lots);
    const sl = r.stopLossPrice === null ? null : this.exit(parent, r.stopLossPrice, up ? -1 : 1, lots);
    if (tp !== null && sl !== null) {
      tp.sibling = sl;
      sl.sibling = tp;
    }
    parent.exits = [tp, sl].filter((x): x is MOrder => x !== null);
  }

  private exit(parent: MOrder, price: Fixed, dir: 1 | -1, lots: number): MOrder {
    const p = parent.request;
    const spec = SPECS.get(p.marketId)!;
    const request: OrderRequest = {
      marketId: p.marketId, side: p.side === BUY ? SELL : BUY, type: 'market',
      quantity: BigInt(lots) * stepOf(spec), price: null, timeInForce: 'ioc', postOnly: false,
      reduceOnly: true, marginMode: p.marginMode,
      clientOrderId: null, stopPrice: price, takeProfitPrice: null, stopLossPrice: null,
      selfTradePrevention: p.selfTradePrevention, quoteId: null,
    };
    const o: MOrder = {
      id: this.nextId++, acct: parent.acct, request, isQuote: false, priceTicks: 0,
      original: lots, filled: 0, cancelled: 0, remaining: lots, status: 'untriggered',
      trigger: { price, dir },
      exits: null, sibling: null, node: null, rejectReason: null,
    };
    this.orders.set(o.id, o);
    this.live.set(o.id, o);
    return o;
  }

  /**
   * Conditional orders due at the new mark fire in id order (the engine's rejection reasons are
   * judged). `lifecycleActed`: the venue then liquidated in the same command, so the engine state the
   * model reads the bankruptcy bound from is no longer the state the triggers fired in; the engine's
   * verdict on a fired order is then taken as it is (the model resyncs after the command).
   */
  fire(marketId: string, mark: Fixed, engineOrders: Map<string, OrderRecord>, lifecycleActed: boolean): void {
    const due = [...this.live.values()]
      .filter((o) => o.request.marketId === marketId && o.status === 'untriggered')
      .filter((o) => (o.trigger!.dir === 1 ? mark >= o.trigger!.price : mark <= o.trigger!.price));
    for (const o of due) {
      if (o.status !== 'untriggered') continue;
      o.status = 'open';
      o.trigger = null;
      if (o.sibling !== null && o.sibling.status === 'untriggered') this.cancelOrder(o.sibling);
      const spec = SPECS.get(marketId)!;
      const request = { ...o.request, stopPrice: null, quantity: BigInt(o.remaining) * stepOf(spec) };
      const e = this.expect(o.acct, request, mark, true);
      const limit = this.executedLimit(o.id);
      if (limit !== undefined && (e.pre === null || e.pre === 'INSUFFICIENT_MARGIN')) {
        if (limit !== e.limitTicks) this.hit('fired order bounded as the engine found it');
        e.pre = null;
        e.limitTicks = limit;
        e.post = this.predictPost(o.acct, request, e.lots, limit);
      }
      const reason = engineOrders.get(String(o.id))?.rejectReason ?? null;
      if (lifecycleActed && reason !== (e.pre ?? e.post)) {
        this.hit('trigger verdict taken from the engine (lifecycle acted)');
        e.pre = reason;
        e.post = null;
      }
      judge(reason, e, request, `trigger of order ${o.id}`);
      const exit = o.request.type === 'market' && o.request.reduceOnly && o.request.clientOrderId === null;
      this.hit(`${exit ? 'exit' : 'stop'} fired${reason === null ? '' : ' ' + reason}`);
      if (reason !== null) {
        o.rejectReason = reason;
        this.end(o, 'cancelled');
        continue;
      }
      o.cancelled += o.remaining - e.lots;
      o.remaining = e.lots;
      this.execute(o, e.limitTicks);
    }
  }
}

/**
 * The venue's own lifecycle (liquidation orders, the insurance fund's takeover and unwinding, ADL)
 * acted in this command. Those steps are the lifecycle tests' subject, not this model's: the model
 * adopts the engine's orders, positions and book as they now are and carries on predicting.
 */
function resync(model: Model, ex: Exchange, events: Map<string, OrderRecord>): void {
  const lotsIn = (rec: OrderRecord) =>
    [lotsOf(rec.marketId, rec.quantity), lotsOf(rec.marketId, rec.filledQuantity)];
  const adopt = (lo: LinearOrder): MOrder => {
    let m = model.orders.get(lo.id);
    if (m === undefined) {
      m = {
        id: lo.id, acct: lo.owner - 1, request: lo.request, priceTicks: lo.priceTicks, isQuote: lo.isQuote,
        original: 0, filled: 0, cancelled: 0, remaining: 0, status: lo.status, trigger: null, exits: null,
        sibling: null, node: null, rejectReason: lo.rejectReason,
      };
      model.orders.set(m.id, m);
    }
    return m;
  };
  const engineLive = new Map<number, LinearOrder>();
  for (const id of [FUND_ACCOUNT, ...ex.accounts.all().map((a) => a.id)]) {
    for (const lo of ex.linear.findAccount(id)?.orders.values() ?? []) engineLive.set(lo.id, lo);
  }
  // orders that ended in this command
  for (const [id, rec] of events) {
    const n = Number(id);
    model.nextId = Math.max(model.nextId, n + 1);
    if (engineLive.has(n)) continue;
    const m = model.orders.get(n) ?? {
      id: n, acct: rec.accountId - 1, request: null as unknown as OrderRequest, priceTicks: 0, isQuote: false,
      original: 0, filled: 0, cancelled: 0, remaining: 0, status: rec.status, trigger: null, exits: null,
      sibling: null, node: null, rejectReason: null,
    };
    model.orders.set(n, m);
    if (!live(m) && m.request !== null) continue;
    const [original = 0, filled = 0] = lotsIn(rec);
    Object.assign(m, { status: rec.status, original, filled, remaining: 0, cancelled: original - filled });
    m.rejectReason = rec.rejectReason;
    m.node = null;
    if (model.live.delete(n) && m.request.clientOrderId !== null) {
      model.release(m.acct, m.request.clientOrderId);
    }
  }
  // live orders as the engine holds them, links included
  for (const lo of engineLive.values()) {
    const m = adopt(lo);
    m.original = lo.originalLots;
    m.filled = lo.filledLots;
    m.remaining = lo.remainingLots;
    m.cancelled = m.original - m.filled - m.remaining;
    m.status = lo.status;
    m.trigger = lo.trigger === null ? null : { price: lo.trigger.price, dir: lo.trigger.direction };
    m.sibling = lo.sibling === null ? null : adopt(lo.sibling);
    m.exits = lo.exits === null ? null : lo.exits.map(adopt);
    model.live.set(m.id, m);
  }
  model.live = new Map([...model.live].filter(([id]) => engineLive.has(id)).sort((a, b) => a[0] - b[0]));
  // books and positions
  for (const [marketId, book] of model.books) {
    void book;
    const naive = new NaiveBook();
    ex.linear.markets.get(marketId)!.book.forEachResting((o) => {
      const m = model.orders.get(o.id)!;
      m.node = new BookOrder(o.id, o.owner - 1, o.side, o.priceTicks, o.remainingLots);
      naive.rest(m.node);
    });
    model.books.set(marketId, naive);
  }
  model.positions.clear();
  for (const id of [FUND_ACCOUNT, ...ex.accounts.all().map((a) => a.id)]) {
    for (const p of ex.linear.findAccount(id)?.positions.values() ?? []) {
      if (p.size !== 0) model.positions.set(`${id - 1}|${p.market.spec.id}|${p.marginMode}`, p.size);
    }
  }
}

/** Traces only the lifecycle leaves: liquidation fees, direct fills, venue orders, liquidated positions. */
/**
 * Resting orders a marks update cancelled because a fill would now take them past their position's
 * bound (engine.cancelRefusedMakers): cancelled with INSUFFICIENT_MARGIN while the model held them.
 */
function sweptPastBound(model: Model, events: readonly ExchangeEvent[]): OrderRecord[] {
  return events.flatMap((e) => e.type === 'order' && e.order.status === 'cancelled' && e.order.rejectReason === 'INSUFFICIENT_MARGIN'
    && model.orders.get(Number(e.order.id))?.status === 'open' ? [e.order] : []);
}

function lifecycleActed(ex: Exchange, model: Model, events: readonly ExchangeEvent[], now: number): boolean {
  const cooldown = CONFIG.linear.lifecycle.liquidation.cooldownMs;
  const liquidatedRecently = (accountId: number) =>
    [...(ex.linear.findAccount(accountId)?.positions.values() ?? [])]
      .some((p) => p.lastLiquidationAt > 0 && now - p.lastLiquidationAt < cooldown);
  return events.some((e) =>
    (e.type === 'ledger' && e.entry.type === 'liquidation')
    || (e.type === 'fill' && (e.fill.maker.orderId === '0' || e.fill.taker.orderId === '0'))
    || (e.type === 'position' && e.position.status === 'liquidated')
    || (e.type === 'order' && Number(e.order.id) >= model.nextId)
    || (e.type === 'order' && e.order.status === 'cancelled' && live(model.orders.get(Number(e.order.id))!)
      && liquidatedRecently(e.order.accountId)))
    || sweptPastBound(model, events).length > 0;
}

/** Compares the engine's verdict with the model's prediction (margin is only bounded). */
function judge(code: string | null, e: Expectation, r: OrderRequest, where: string): void {
  if (code === null) {
    assert.equal(e.pre ?? e.post, null, `${where}: accepted, model expected ${e.pre ?? e.post}`);
  } else if (code === 'INSUFFICIENT_MARGIN' && e.pre === 'INSUFFICIENT_MARGIN') {
    return; // priced past the bankruptcy price of the position it reduces (predicted exactly)
  } else if (code === 'INSUFFICIENT_MARGIN') {
    assert.equal(e.pre, null, `${where}: INSUFFICIENT_MARGIN, model expected ${e.pre} first`);
    assert.equal(r.reduceOnly, false, `${where}: a reduce-only order never fails the margin gate`);
  } else {
    assert.equal(code, e.pre ?? e.post, `${where}: rejected ${code}, model expected ${e.pre ?? e.post}`);
  }
}

// ---- the run ----

const lotsOf = (marketId: string, size: Fixed) => Number(size / stepOf(SPECS.get(marketId)!));

class Run {
  readonly ex = new Exchange(CONFIG);
  readonly model = new Model();
  readonly journal: { ts: number; text: string }[] = [];
  readonly events: ExchangeEvent[] = [];
  time = T0;
  index = fx('100000');
  private txs = 0;
  readonly stats = new Map<string, number>();
  /** The quote being applied: the mark its levels are judged at, and each level's bound taken at its check. */
  private ladder: { mark: Fixed | null; bounds: Map<OrderRequest, { anchor: Fixed; lots: number; bound: number }> } | null = null;
  /** Order id → the matching limit the engine executed it with, in the current command. */
  private readonly executedLimits = new Map<number, number>();

  constructor() {
    this.model.lastMark = (marketId) => this.ex.linear.markets.get(marketId)?.riskMark ?? null;
    // Record the matching limit of every order the engine executes (its private execute step).
    const engine = this.ex.linear as unknown as { execute(order: LinearOrder, limitTicks: number): void };
    const execute = engine.execute.bind(engine);
    engine.execute = (order, limitTicks) => {
      this.executedLimits.set(order.id, limitTicks);
      execute(order, limitTicks);
    };
    this.model.executedLimit = (id) => this.executedLimits.get(id);
    // Record the makers the engine refuses at the match, and ask it (before a command) which it would.
    const sink = this.ex.linear as unknown as { onMakerCancelled(maker: BookOrder, why: MakerCancel): void };
    const cancelled = sink.onMakerCancelled.bind(sink);
    sink.onMakerCancelled = (maker, why) => {
      if (why === 'refused') {
        this.model.refused.add(maker.id);
        this.checkRefused(maker as LinearOrder);
      }
      cancelled(maker, why);
    };
    countKeptSumsRead = () => this.count('kept reduce-only sums read');
    this.model.makerAdmits = (id) => this.model.makerAdmitsAfter(id, 0n, undefined);
    const engineOrder = (id: number): LinearOrder | undefined => {
      const m = this.model.orders.get(id);
      const account = m === undefined ? undefined : this.ex.linear.findAccount(this.ex.accounts.find(ADDRESSES[m.acct]!)!.id);
      return account?.orders.get(id);
    };
    const isolatedOf = (order: LinearOrder): Position | undefined =>
      order.request.marginMode === 'isolated' ? this.ex.linear.findAccount(order.owner)?.position(order.market, 'isolated') : undefined;
    this.model.makerAdmitsAfter = (id, spent, played, heldLots) => {
      if (this.model.refused.has(id)) return false;
      const order = engineOrder(id);
      return order === undefined || this.ex.linear.makers.admits(order, spent, order.request.marginMode === 'isolated' ? played : undefined, heldLots);
    };
    // The engine's fillCost, plus the settlement unit a fill that reduces may lose to rounding (maker-checks.ts predictedCost).
    const unit = roundTo(1n, this.ex.linear.deps.settlementDecimals, 'ceil');
    this.model.makerFillCost = (id, lots, heldLots) => {
      const order = engineOrder(id);
      if (order === undefined) return 0n;
      const size = this.ex.linear.findAccount(order.owner)?.position(order.market, order.request.marginMode)?.size ?? 0;
      return this.ex.linear.makers.fillCost(order, lots, heldLots) + (size !== 0 && (size > 0) !== (order.side === BUY) ? unit : 0n);
    };
    this.model.playMakerFill = (id, lots, played) => {
      const order = engineOrder(id);
      const isolated = order === undefined ? undefined : isolatedOf(order);
      if (order === undefined || isolated === undefined) return played;
      const current = played ?? isolated;
      if (current.size === 0 || (current.size > 0) === (order.side === BUY)) return played;
      const next = played ?? isolated.scratchCopy();
      this.ex.linear.makers.playIsolatedFill(next, order, lots);
      return next;
    };
    // A quote's levels are judged after the whole ladder ran, but each level's bound depends on the
    // engine state its check saw (earlier levels rest or fill first): taken at the check.
    const checks = this.ex.linear as unknown as {
      checkTaker(market: LinearMarket, r: OrderRequest, account: LinearAccount, triggered: boolean): unknown;
    };
    const checkTaker = checks.checkTaker.bind(checks);
    checks.checkTaker = (market, r, account, triggered) => {
      const ladder = this.ladder;
      const acct = ADDRESSES.findIndex((a) => this.ex.accounts.find(a)?.id === account.id);
      if (ladder !== null && !triggered && acct >= 0) {
        const anchor = ladder.mark ?? market.riskMark;
        const size = Math.abs(account.position(market, r.marginMode)?.size ?? 0);
        const lots = r.reduceOnly ? Math.min(lotsOf(r.marketId, r.quantity), size) : lotsOf(r.marketId, r.quantity);
        if (anchor !== null) ladder.bounds.set(r, { anchor, lots, bound: this.engineBound(acct, r, anchor, lots) });
      }
      return checkTaker(market, r, account, triggered);
    };
    this.model.bound = (acct, r, anchor, lots) => {
      const atCheck = this.ladder?.bounds.get(r);
      if (atCheck !== undefined && atCheck.anchor === anchor && atCheck.lots === lots) return atCheck.bound;
      return this.engineBound(acct, r, anchor, lots);
    };
    this.apply({ type: 'index.publish', underlying: 'BTC', price: this.index, sourceTs: this.time });
    ADDRESSES.forEach((account, i) => {
      const amount = fx(FUNDS[i]!);
      const txHash = `0x${(++this.txs).toString(16).padStart(64, '0')}`;
      this.apply({ type: 'chain.deposit_observed', txHash, account, amount, confirmations: 1 });
      this.apply({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount });
    });
  }

  /** The bound of a user order reducing a position, from the engine's state now (checks.ts reducingBound). */
  private engineBound(acct: number, r: OrderRequest, anchor: Fixed, lots: number): number {
    const id = this.ex.accounts.find(ADDRESSES[acct]!)?.id;
    const account = id === undefined ? undefined : this.ex.linear.findAccount(id);
    const p = account?.position(this.ex.linear.markets.get(r.marketId)!, r.marginMode);
    if (account === undefined || p === undefined || p.size === 0 || (p.size > 0) === (r.side === BUY)) return NO_BOUND;
    const { fees, volumes } = this.ex.linear.deps;
    const fee = fees.fee(closingNotional(p, anchor), fees.rateFor(volumes.volume30d(account.id, this.time), 'taker'));
    // Profit counts only where it can be realised at the command's time (margin.ts Realisable).
    const realisable = (m: LinearMarket) => m.status === 'open' && this.ex.linear.markAt(m, this.time) !== null;
    return closeBoundTicks(p, account, this.ex.linear.balance(account.id), fee, anchor, lots, null, realisable);
  }

  /**
   * A maker refused at the match either reduces its owner's position (its bound: the model's
   * `bound`) or opens at a cost a fill would take from the owner's equity (maker-checks.ts admits): never
   * one at or better than the mark with no fee to pay.
   */
  private checkRefused(maker: LinearOrder): void {
    const p = this.ex.linear.findAccount(maker.owner)?.position(maker.market, maker.request.marginMode);
    const size = p?.size ?? 0;
    if (size !== 0 && (size > 0) !== (maker.side === BUY)) return this.count('maker refused at its bankruptcy bound');
    const held = size !== 0 && (size > 0) === (maker.side === BUY) ? Math.abs(size) : 0;
    assert.ok(this.ex.linear.makers.fillCost(maker, maker.remainingLots, held) > 0n, `refused opening maker ${maker.id} costs nothing to fill`);
    this.count('opening maker refused at the match');
  }

  /**
   * An order the sweep cancelled that opens a position: its fill would cost more than its owner's
   * cross equity holds, recomputed here from the account's report, the mark and the fee tiers.
   * Skipped when the same sweep also cancelled one of the account's reduce-only orders (that
   * returned the open loss it held, after this order's check).
   */
  private checkSweptOpening(o: OrderRecord, swept: readonly OrderRecord[]): void {
    if (swept.some((x) => x.accountId === o.accountId && x.reduceOnly)) return this.count('opening order swept (not rechecked)');
    const markets = [...this.ex.linear.markets.values()];
    // Profit at a stale mark does not count in the engine's figure; the report here counts it.
    if (markets.some((m) => m.status === 'open' && this.ex.linear.markAt(m, this.time) === null)) return this.count('opening order swept (stale index, not rechecked)');
    const market = this.ex.linear.markets.get(o.marketId)!;
    const mark = this.ex.linear.riskMarkOf(market)!;
    const step = stepOf(market.spec);
    const lots = (o.quantity - o.filledQuantity) / step;
    const price = o.price!;
    const worse = o.side === 'buy' ? price - mark : mark - price;
    const loss = worse > 0n ? (worse * lots * step) / 10n ** 18n : 0n;
    const notional = (price * lots * step) / 10n ** 18n;
    const maxMakerFee = notional * fx('1') / fx('10000') + 1n;
    const initial = o.marginMode === 'isolated' ? market.margin.initial(notional) : 0n;
    const account = this.ex.linear.findAccount(o.accountId)!;
    let roLoss = 0n;
    for (const x of account.orders.values()) {
      if (!x.request.reduceOnly || x.level === null || x.request.marginMode !== 'cross') continue;
      const xPrice = x.market.units.price(x.priceTicks);
      const xWorse = x.side === BUY ? xPrice - mark : mark - xPrice;
      if (xWorse > 0n) roLoss += (xWorse * BigInt(x.remainingLots) * step) / 10n ** 18n + 1n;
    }
    const risk = this.ex.linear.risk(o.accountId);
    const equity = risk.crossEquity - roLoss;
    const cash = risk.balance - risk.isolatedAllocated;
    // Cross: its loss and fee exceed the equity. Isolated: the allocation it would draw exceeds the
    // equity, or the cash cannot give it even its open loss and fee (margin.ts crossPool).
    const past = loss + maxMakerFee + initial + 1n > equity || (o.marginMode === 'isolated' && cash < loss + maxMakerFee);
    assert.ok(past, `opening order ${o.id} swept with equity ${equity} covering its fill ${loss} + ${initial} + fee`);
    this.count('opening order swept past the cross equity');
  }

  private count(key: string): void {
    this.stats.set(key, (this.stats.get(key) ?? 0) + 1);
  }

  /** Executes at the current time; journals accepted commands; checks a rejection changed nothing. */
  apply<T extends Command['type']>(command: Extract<Command, { type: T }>): Outcome<ResultOf<T>> {
    const before = command.type.startsWith('perp.') ? dump(this.ex) : null;
    this.model.now = this.time;
    this.model.fills = [];
    this.model.refused.clear();
    this.executedLimits.clear();
    const outcome = this.ex.execute<T>(command, this.time);
    if (outcome.ok) {
      this.journal.push({ ts: this.ex.now(), text: encode(command) });
      this.events.push(...outcome.events);
    } else {
      assert.equal('events' in outcome, false, 'a rejection carries no events');
      assert.equal(dump(this.ex), before, `rejected ${command.type} (${outcome.code}) changed state`);
      this.count(`rejected ${outcome.code}`);
    }
    return outcome;
  }

  mark(marketId = BTC): Fixed | null {
    return this.ex.linear.markAt(this.ex.linear.markets.get(marketId)!, this.time);
  }

  ref(spec: MarketSpec): Fixed {
    if (spec.id === BTC) return this.mark() ?? this.index;
    return fx('3000');
  }

  request(o: OrderSpec, quoteId: string | null): OrderRequest {
    const spec = SPECS.get(o.market) ?? SPECS.get(BTC)!;
    const ref = this.ref(spec);
    const step = stepOf(spec);
    const quantity = o.qty === 'ok' ? BigInt(o.lots) * step
      : o.qty === 'offStep' ? BigInt(o.lots) * step + step / 2n
      : o.qty === 'zero' ? 0n : spec.maxSize + step;
    const price = o.type === 'limit' || o.withPrice ? priceFrom(spec, ref, o.price) : null;
    const stopPrice = o.stop === null ? null : rel(spec, ref, o.stop);
    const anchor = price ?? stopPrice ?? ref;
    const up = o.side === BUY ? 1 : -1;
    return {
      marketId: o.market, side: o.side, type: o.type, quantity, price, timeInForce: o.tif,
      postOnly: o.postOnly, reduceOnly: o.reduceOnly, marginMode: o.isolated ? 'isolated' : 'cross',
      clientOrderId: o.cid === null ? null : CLIENT_IDS[o.cid]!, stopPrice,
      takeProfitPrice: o.tp === null ? null : rel(spec, anchor, up * o.tp),
      stopLossPrice: o.sl === null ? null : rel(spec, anchor, -up * o.sl),
      selfTradePrevention: o.stp, quoteId,
    };
  }

  step(op: Op, dt: number, where: string): void {
    this.time += dt;
    this.ladder = null;
    switch (op.k) {
      case 'place': return this.place(op.acct, this.request(op.o, null), where);
      case 'cancel': return this.cancel(op, where);
      case 'cancelAll': return this.cancelAll(op, where);
      case 'quote': return this.quote(op, where);
      case 'close': return this.close(op, where);
      case 'index': {
        this.index = ((this.index * BigInt(10_000 + op.bps)) / 10_000n / fx('0.1')) * fx('0.1');
        const price = this.index;
        const out = this.apply({ type: 'index.publish', underlying: 'BTC', price, sourceTs: this.time });
        return this.afterMarks(out, where);
      }
      case 'tick':
        return this.afterMarks(this.apply({ type: 'clock.tick' }), where);
    }
  }

  private place(acct: number, request: OrderRequest, where: string): void {
    const e = this.model.expect(acct, request, request.marketId === BTC ? this.mark() : null);
    const out = this.apply({ type: 'perp.place', account: ADDRESSES[acct]!, request });
    this.settlePlacement(acct, request, e, out.ok ? out.result : null, codeOf(out), false, where);
    this.verify(out, where);
  }

  private settlePlacement(
    acct: number, r: OrderRequest, e: Expectation, result: PlaceResult | null, code: string | null,
    isQuote: boolean, where: string,
  ): MOrder | null {
    judge(code, e, r, where);
    if (result === null) return null;
    const kind = r.stopPrice !== null ? 'stop' : `${r.type}/${r.timeInForce}`;
    this.count(`accepted ${kind}${r.reduceOnly ? '/ro' : ''}`);
    const fillsBefore = this.model.fills.length;
    const o = this.model.accept(acct, r, e, isQuote, result.order.id);
    const mine = this.model.fills.slice(fillsBefore).filter((f) => f[1] === o.id);
    assert.deepEqual(
      result.fills.map((f) => [Number(f.maker.orderId), lotsOf(r.marketId, f.quantity)]),
      mine.map((f) => [f[0], f[3]]),
      `${where}: the taker's fills in its result`,
    );
    if (!isQuote) assert.equal(result.order.status, o.status, `${where}: status`);
    if (r.timeInForce === 'fok' && r.stopPrice === null) {
      assert.equal(o.status, 'filled', `${where}: FOK all or nothing`);
    }
    if (r.postOnly) assert.equal(o.filled, 0, `${where}: post-only never takes`);
    if (r.stopPrice === null && (r.type === 'market' || r.timeInForce !== 'gtc')) {
      assert.ok(o.filled > 0, `${where}: an accepted immediate order fills something`);
    }
    return o;
  }

  private cancel(op: Extract<Op, { k: 'cancel' }>, where: string): void {
    const m = this.model;
    const others = [...m.live.values()].filter((o) => o.acct !== op.acct);
    const own = m.liveOf(op.acct);
    let id: number;
    if (op.who === 'own' && own.length > 0) id = own[op.pick % own.length]!.id;
    else if (op.who === 'other' && others.length > 0) id = others[op.pick % others.length]!.id;
    else id = 1 + (op.pick % (m.nextId + 3));
    const target = m.live.get(id);
    const out = this.apply({ type: 'perp.cancel', account: ADDRESSES[op.acct]!, orderId: id });
    if (target === undefined || target.acct !== op.acct) {
      assert.equal(out.ok ? 'accepted' : out.code, 'NOT_FOUND', `${where}: cancel of ${id}`);
    } else {
      assert.ok(out.ok, `${where}: own live order ${id} cancels`);
      m.cancelOrder(target);
      assert.equal(out.result.status, 'cancelled');
      assert.equal(out.result.id, String(id));
    }
    this.verify(out, where);
  }

  private cancelAll(op: Extract<Op, { k: 'cancelAll' }>, where: string): void {
    const filters: CancelFilter[] = [
      {},
      { marketId: BTC },
      { marketId: ETH },
      { quoteId: QUOTE_IDS[op.pick % QUOTE_IDS.length]! },
      { clientOrderId: CLIENT_IDS[op.pick % CLIENT_IDS.length]! },
      { marginMode: op.pick % 2 === 0 ? 'cross' : 'isolated' },
    ];
    const filter = filters[op.filter]!;
    const hit = (o: MOrder) =>
      (filter.marketId === undefined || o.request.marketId === filter.marketId)
      && (filter.quoteId === undefined || o.request.quoteId === filter.quoteId)
      && (filter.clientOrderId === undefined || o.request.clientOrderId === filter.clientOrderId)
      && (filter.marginMode === undefined || o.request.marginMode === filter.marginMode);
    const expected = this.model.liveOf(op.acct).filter(hit);
    const out = this.apply({ type: 'perp.cancel_all', account: ADDRESSES[op.acct]!, filter });
    assert.ok(out.ok, `${where}: cancel-all never fails`);
    assert.deepEqual(out.result.cancelled, expected.map((o) => String(o.id)), `${where}: cancelled ids`);
    for (const o of expected) this.model.cancelOrder(o);
    this.verify(out, where);
  }

  private quote(op: Extract<Op, { k: 'quote' }>, where: string): void {
    const m = this.model;
    const quoteId = op.qid < QUOTE_IDS.length ? QUOTE_IDS[op.qid]! : null;
    const replaceQuoteId = op.replace ? quoteId : null;
    const marketId = op.unknown ? UNKNOWN : BTC;
    const levels = op.levels.map((l) => this.request({ ...l, market: marketId }, quoteId));
    const mark = this.mark();
    const before = dump(this.ex);
    this.ladder = { mark, bounds: new Map() };
    const out = this.apply({
      type: 'perp.quote', account: ADDRESSES[op.acct]!,
      quote: { marketId, quoteId, cancelAll: op.cancelAll, replaceQuoteId, levels },
    });
    if (op.unknown) {
      assert.equal(out.ok ? 'accepted' : out.code, 'NOT_FOUND');
      return this.verify(out, where);
    }
    const bids = levels.filter((r) => r.side === 0 && r.price !== null).map((r) => r.price!);
    const asks = levels.filter((r) => r.side === 1 && r.price !== null).map((r) => r.price!);
    if (bids.some((b) => asks.some((a) => b >= a))) {
      this.count('quote refused: crossed');
      assert.equal(out.ok ? 'accepted' : out.code, 'VALIDATION_ERROR', `${where}: a crossed ladder is refused whole`);
      assert.equal(dump(this.ex), before, `${where}: a refused ladder changes nothing`);
      return this.verify(out, where);
    }
    assert.ok(out.ok, `${where}: an uncrossed quote on a listed market is never rejected as a whole`);
    this.count('quote applied');
    const result: QuoteResult = out.result;
    const doomed = op.cancelAll || replaceQuoteId !== null
      ? m.liveOf(op.acct).filter((o) => o.request.marketId === marketId && o.trigger === null
        && (op.cancelAll ? o.isQuote : o.request.quoteId === replaceQuoteId))
      : [];
    assert.deepEqual(result.cancelled, doomed.map((o) => String(o.id)), `${where}: replaced quotes`);
    for (const o of doomed) m.cancelOrder(o);
    m.handOver(op.acct, doomed, levels);
    const placed: MOrder[] = [];
    levels.forEach((r, index) => {
      const e = m.expect(op.acct, r, mark);
      const rejection = result.rejected.find((x) => x.index === index);
      const order = rejection === undefined ? result.orders[placed.length] : undefined;
      const at = `${where} level ${index}`;
      const o = this.settlePlacement(op.acct, r, e, order ?? null, rejection?.error ?? null, true, at);
      if (o !== null) placed.push(o);
    });
    // results are read after the whole ladder: a level may have cancelled an earlier order (STP)
    const statuses = result.orders.map((x) => x.order.status);
    assert.deepEqual(statuses, placed.map((o) => o.status), `${where}: ladder statuses`);
    if (result.orders.length === 0 && result.cancelled.length === 0) assert.equal(dump(this.ex), before);
    this.verify(out, where);
  }

  private close(op: Extract<Op, { k: 'close' }>, where: string): void {
    const mode: MarginMode = op.isolated ? 'isolated' : 'cross';
    const pos = this.model.position(op.acct, BTC, mode);
    const spec = SPECS.get(BTC)!;
    const full = Math.abs(pos);
    const quantity = op.partial === null ? null : BigInt(op.partial) * stepOf(spec);
    const price = op.limit === null ? null : priceFrom(spec, this.ref(spec), op.limit);
    const close = {
      marketId: BTC, marginMode: mode, quantity, type: price === null ? 'market' as const : 'limit' as const,
      price, timeInForce: price === null || op.ioc ? 'ioc' as const : 'gtc' as const,
    };
    const mark = this.mark();
    const lots = op.partial === null ? full : Math.min(op.partial, full);
    const request: OrderRequest = {
      marketId: BTC, side: pos > 0 ? SELL : BUY, type: close.type, quantity: BigInt(lots) * stepOf(spec),
      price, timeInForce: close.timeInForce, postOnly: false, reduceOnly: true, marginMode: mode,
      clientOrderId: null, stopPrice: null, takeProfitPrice: null, stopLossPrice: null,
      selfTradePrevention: 'cancel_maker', quoteId: null,
    };
    const e = full === 0 ? null : this.model.expect(op.acct, request, mark);
    const out = this.apply({ type: 'perp.close', account: ADDRESSES[op.acct]!, close });
    if (e === null) {
      assert.equal(out.ok ? 'accepted' : out.code, 'NOT_FOUND', `${where}: close without a position`);
    } else {
      this.settlePlacement(op.acct, request, e, out.ok ? out.result : null, codeOf(out), false, where);
    }
    this.verify(out, where);
  }

  private afterMarks(out: ReturnType<Run['apply']>, where: string): void {
    assert.ok(out.ok, `${where}: marks update`);
    const mark = this.mark();
    const orders = orderEvents(out.events);
    // conditional orders fire first (the model predicts them exactly), then the lifecycle runs
    const acted = lifecycleActed(this.ex, this.model, out.events, this.time);
    if (mark !== null) this.model.fire(BTC, mark, orders, acted);
    if (!acted) return this.verify(out, where);
    this.count('lifecycle acted (model resynced)');
    const swept = sweptPastBound(this.model, out.events);
    for (const o of swept) {
      if (this.model.refused.has(Number(o.id))) continue; // refused at a match (a stop fired): checkRefused
      const p = this.ex.linear.findAccount(o.accountId)?.position(this.ex.linear.markets.get(o.marketId)!, o.marginMode);
      const size = p?.size ?? 0;
      if (size !== 0 && (size > 0) === (o.side === 'sell')) this.count('resting close swept past its bound');
      else this.checkSweptOpening(o, swept);
    }
    const fills = out.events.flatMap((e) => (e.type === 'fill' ? [e.fill] : []));
    const predicted = this.model.fills;
    const first = fills.slice(0, predicted.length).map((f) => fillTuple(f).slice(0, 2));
    const expected = predicted.map((f) => f.slice(0, 2));
    assert.deepEqual(first, expected, `${where}: trigger fills come before the lifecycle's`);
    resync(this.model, this.ex, orders);
    this.model.fills = fills.map(fillTuple);
    this.verify(out, where);
  }

  /** Everything that must hold after a command. */
  verify(out: ReturnType<Run['apply']>, where: string): void {
    const { ex, model } = this;
    for (const [asset, total] of ex.ledger.totalsByAsset()) {
      assert.equal(total, 0n, `${where}: ledger total ${asset}`);
    }
    // The engine's own bookkeeping: cached margins and the live reduce-only count (stops and TP/SL
    // exits fire here, which the margin-cache property test does not generate).
    assert.deepEqual(ex.linear.audit(false), [], `${where}: engine audit`);
    assert.deepEqual(ex.ledger.negativeUserAccounts(), [], `${where}: negative user bucket`);
    // fills, in order
    const fills = out.ok ? out.events.flatMap((ev) => (ev.type === 'fill' ? [ev.fill] : [])) : [];
    for (const f of fills) {
      assert.notEqual(f.maker.side, f.taker.side, `${where}: a trade has a buyer and a seller`);
      assert.notEqual(f.maker.accountId, f.taker.accountId, `${where}: no self-trade`);
      assert.ok(f.quantity > 0n);
    }
    const what = `${where}: fills (maker, taker, price, lots) in order`;
    assert.deepEqual(fills.map(fillTuple), model.fills, what);
    // order snapshots the command emitted
    if (out.ok) {
      for (const [id, rec] of orderEvents(out.events)) {
        const o = model.orders.get(Number(id));
        assert.ok(o !== undefined, `${where}: unknown order ${id} in events`);
        const got = [rec.status, lotsOf(rec.marketId, rec.quantity), lotsOf(rec.marketId, rec.filledQuantity),
          lotsOf(rec.marketId, rec.remainingQuantity), rec.rejectReason];
        const want = [o.status, o.original, o.filled, live(o) ? o.remaining : 0, o.rejectReason];
        assert.deepEqual(got, want, `${where}: order ${id} [status, qty, filled, remaining, rejectReason]`);
      }
    }
    for (const o of model.orders.values()) {
      assert.ok(o.filled >= 0 && o.remaining >= 0 && o.cancelled >= 0, `${where}: order ${o.id} sizes`);
      const total = o.filled + o.remaining + o.cancelled;
      assert.equal(total, o.original, `${where}: order ${o.id} lots conserved`);
    }
    // live orders, book, positions, totals, open interest
    const engineLive: [number, string, number][] = [];
    const enginePositions: [string, number][] = [];
    for (const account of [{ id: FUND_ACCOUNT }, ...ex.accounts.all()]) {
      const la = ex.linear.findAccount(account.id);
      if (la === undefined) continue;
      for (const o of la.orders.values()) engineLive.push([o.id, o.status, o.remainingLots]);
      for (const p of la.positions.values()) {
        if (p.size === 0) continue;
        enginePositions.push([`${account.id - 1}|${p.market.spec.id}|${p.marginMode}`, p.size]);
      }
      for (const [key, t] of la.totals) {
        let buyLots = 0, sellLots = 0, buyNotional = 0n, sellNotional = 0n;
        for (const o of la.orders.values()) {
          const sameKey = `${o.market.spec.id}|${o.request.marginMode}` === key;
          if (o.level === null || o.request.reduceOnly || !sameKey) continue;
          const n = o.market.units.notional(o.priceTicks, o.remainingLots);
          if (o.side === BUY) {
            buyLots += o.remainingLots;
            buyNotional += n;
          } else {
            sellLots += o.remainingLots;
            sellNotional += n;
          }
        }
        const got = [t.buyLots, t.buyNotional, t.sellLots, t.sellNotional];
        const want = [buyLots, buyNotional, sellLots, sellNotional];
        assert.deepEqual(got, want, `${where}: resting-order totals of account ${account.id} ${key}`);
      }
    }
    engineLive.sort((a, b) => a[0] - b[0]);
    const modelLive = [...model.live.values()].map((o) => [o.id, o.status, o.remaining]);
    assert.deepEqual(engineLive, modelLive, `${where}: live orders`);
    assert.deepEqual(new Map(enginePositions), model.positions, `${where}: positions`);
    for (const market of ex.linear.markets.values()) {
      market.book.checkInvariants();
      let long = 0;
      let short = 0;
      for (const [key, size] of model.positions) {
        if (key.split('|')[1] !== market.spec.id) continue;
        if (size > 0) long += size;
        else short -= size;
      }
      assert.equal(long, short, `${where}: longs = shorts in ${market.spec.id}`);
      assert.equal(market.openInterestLots, long, `${where}: open interest of ${market.spec.id}`);
      const naive = model.books.get(market.spec.id);
      const resting: number[][] = [];
      market.book.forEachResting((o) => {
        resting.push([o.id, o.owner - 1, o.side, o.priceTicks, o.remainingLots]);
      });
      const expected: number[][] = [];
      naive?.forEachResting((o) => expected.push([o.id, o.owner, o.side, o.priceTicks, o.remainingLots]));
      assert.deepEqual(resting, expected, `${where}: resting orders of ${market.spec.id}, level by level`);
    }
  }
}

/** Engine account ids start at 1 in funding order; the model numbers accounts from 0. */
function fixOwners(run: Run): void {
  ADDRESSES.forEach((a, i) => assert.equal(run.ex.accounts.find(a)?.id, i + 1));
}

/** A fill as the model records it: [maker order, taker order, price ticks, lots]. */
function fillTuple(f: FillRecord): [number, number, number, number] {
  return [Number(f.maker.orderId), Number(f.taker.orderId), Number(f.price / tickOf(SPECS.get(f.marketId)!)),
    lotsOf(f.marketId, f.quantity)];
}

function codeOf(out: Outcome<unknown>): string | null {
  return out.ok ? null : out.code;
}

function orderEvents(events: readonly ExchangeEvent[]): Map<string, OrderRecord> {
  const out = new Map<string, OrderRecord>();
  for (const e of events) if (e.type === 'order') out.set(e.order.id, e.order);
  return out;
}

/** Canonical text of the state a command may change: ledger, markets and books, accounts. */
function dump(ex: Exchange): string {
  const lines: string[] = [[...ex.ledger.entries()].map(([k, v]) => `${k}=${v}`).sort().join(',')];
  for (const m of [...ex.linear.markets.values()].sort((a, b) => (a.spec.id < b.spec.id ? -1 : 1))) {
    const book: string[] = [];
    m.book.forEachResting((o) => {
      book.push(`${o.id}:${o.owner}:${o.side}:${o.priceTicks}:${o.remainingLots}`);
    });
    const trade = m.lastTrade === null ? '-' : `${m.lastTrade.price}@${m.lastTrade.at}`;
    const untriggered = [...m.untriggered].map((o) => o.id).sort((a, b) => a - b);
    lines.push(`${m.spec.id} ${m.status} mark=${m.mark} risk=${m.riskMark}`);
    lines.push(`  oi=${m.openInterestLots} last=${trade} funding=${m.fundingIndex}`);
    lines.push(`  book ${book.join(' ')} | untriggered ${untriggered.join(',')}`);
  }
  for (const a of [{ id: FUND_ACCOUNT, address: 'insurance fund' }, ...ex.accounts.all()]) {
    lines.push(`account ${a.id} ${a.address}`);
    const la = ex.linear.findAccount(a.id);
    if (la === undefined || la.isIdle()) continue;
    for (const [key, p] of [...la.positions].sort()) {
      lines.push(`  pos ${key} ${p.id} ${p.size} ${p.cost} ${p.realizedPnl} ${p.isolatedMargin} ${p.status}`);
    }
    for (const o of la.orders.values()) {
      const trigger = o.trigger === null ? '-' : `${o.trigger.price}/${o.trigger.direction}`;
      const sizes = `${o.originalLots} ${o.filledLots} ${o.remainingLots} ${o.reservedLots}`;
      lines.push(`  order ${o.id} ${o.status} ${sizes} ${trigger}`);
    }
    for (const [key, t] of [...la.totals].sort()) {
      if (t.isEmpty()) continue;
      lines.push(`  totals ${key} ${t.buyLots} ${t.buyNotional} ${t.sellLots} ${t.sellNotional}`);
    }
  }
  return lines.join('\n');
}

// Every read of an account's kept reduce-only sums (reduce-only-losses.ts) equals a fresh walk of
// its orders: the engine reported every change of a resting reduce-only order since the marks moved.
let countKeptSumsRead = (): void => {};
const keptSumsOf = ReduceOnlyLosses.prototype.sumsOf;
ReduceOnlyLosses.prototype.sumsOf = function (this: ReduceOnlyLosses, account: LinearAccount) {
  const walked = this.kept() === null; // the read walks the orders itself
  const kept = keptSumsOf.call(this, account);
  assert.equal(reduceOnlySumsText(kept), reduceOnlySumsText(reduceOnlySums(account)), `kept reduce-only sums of account ${account.id}`);
  if (!walked) countKeptSumsRead();
  return kept;
};

test(`linear engine matches the naive model after every command (seed ${SEED})`, () => {
  console.log(`linear-engine property: seed ${SEED}, ${NUM_RUNS} runs (replay with SEED=${SEED})`);
  const totals = new Map<string, number>();
  let commands = 0;
  fc.assert(
    fc.property(stepsArb, (steps) => {
      const run = new Run();
      fixOwners(run);
      steps.forEach(({ op, dt }, i) => run.step(op, dt, `step ${i} ${op.k}`));
      commands += steps.length;
      for (const [k, n] of [...run.stats, ...run.model.paths]) totals.set(k, (totals.get(k) ?? 0) + n);
      // replay determinism through the journal codec
      const replica = new Exchange(CONFIG);
      const replayed: ExchangeEvent[] = [];
      for (const record of run.journal) {
        const outcome = replica.execute(decode<Command>(record.text), record.ts);
        assert.ok(outcome.ok, `replay rejected ${record.text}`);
        replayed.push(...outcome.events);
      }
      assert.equal(dump(replica), dump(run.ex), 'replayed state');
      assert.equal(encode(replayed), encode(run.events), 'replayed events');
    }),
    { seed: SEED, numRuns: NUM_RUNS, includeErrorInReport: true },
  );
  console.log(`linear-engine property: ${commands} commands`);
  console.log([...totals].sort().map(([k, n]) => `${k} ${n}`).join(', '));
  for (const code of ['PRICE_OUT_OF_BAND', 'INSUFFICIENT_MARGIN', 'REDUCE_ONLY_REJECTED', 'NO_LIQUIDITY']) {
    assert.ok((totals.get(`rejected ${code}`) ?? 0) > 0, `the generator reaches ${code}`);
  }
});
