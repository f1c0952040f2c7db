/**
 * One account's state in the linear engine: its positions (per market and margin mode), its live
 * orders (all, and per market in the same order, so a quote replace or a cancel of one market walks
 * that market's orders only), running totals of its resting orders per market, side and mode (so the margin gate is
 * O(positions), never a scan of orders), and its client order ids (the rule shared with the CLOB
 * engine is in client-ids.ts).
 */
import { assert, fail } from '../assert.ts';
import { ClientIds } from '../client-ids.ts';
import type { LedgerAccount } from '../ledger/ledger.ts';
import type { Fixed } from '../money.ts';
import type { MarginMode } from '../records.ts';
import type { OrderSums } from './margin.ts';
import type { LinearMarket } from './market.ts';
import type { LinearOrder, OrderRequest } from './order.ts';
import { Position } from './position.ts';
import { ReduceOnlyLosses } from './reduce-only-losses.ts';

/** Resting, non-reduce-only orders of one account in one market and mode. */
export class OrderTotals {
  constructor(
    readonly market: LinearMarket,
    readonly mode: MarginMode,
  ) {}

  buyLots = 0;
  buyNotional: Fixed = 0n;
  sellLots = 0;
  sellNotional: Fixed = 0n;
  /** What the isolated orders among them that chose a leverage hold beyond the tiers' margin (margin.ts leverageSurcharge). */
  leverageSurcharge: Fixed = 0n;
  /** Cached margin of these orders (margin.ts ordersMargin), valid for `cachedVersion`. */
  cachedIM: Fixed = 0n;
  /** The market's mark version the cache was computed at; -1 when the totals changed since. */
  cachedVersion = -1;

  /**
   * The margin gate's last probe (these totals plus one order, at the risk mark and the current
   * position): when the order then rests in full, the totals become exactly the probe's and its
   * margin is already known, so the cache takes it instead of computing it again.
   */
  private probeVersion = -1;
  private probeBuyLots = 0;
  private probeBuyNotional: Fixed = 0n;
  private probeSellLots = 0;
  private probeSellNotional: Fixed = 0n;
  private probeIM: Fixed = 0n;

  isEmpty(): boolean {
    return this.buyLots === 0 && this.sellLots === 0;
  }

  /** The totals changed: the cached margin is the probe's if they now equal it, else stale. */
  invalidate(): void {
    const probed = this.probeVersion >= 0 && this.probeVersion === this.market.markVersion &&
      this.buyLots === this.probeBuyLots && this.buyNotional === this.probeBuyNotional &&
      this.sellLots === this.probeSellLots && this.sellNotional === this.probeSellNotional;
    this.cachedVersion = probed ? this.probeVersion : -1;
    if (probed) this.cachedIM = this.probeIM;
    this.probeVersion = -1;
  }

  /** The position changed: the cached margin and the probe (both depend on it) are stale. */
  positionChanged(): void {
    this.cachedVersion = -1;
    this.probeVersion = -1;
  }

  /** Remembers a probe computed at the market's risk mark for the current position. */
  rememberProbe(sums: OrderSums, margin: Fixed): void {
    this.probeVersion = this.market.markVersion;
    this.probeBuyLots = sums.buyLots;
    this.probeBuyNotional = sums.buyNotional;
    this.probeSellLots = sums.sellLots;
    this.probeSellNotional = sums.sellNotional;
    this.probeIM = margin;
  }
}

/** Live orders of an account in one market: all, the conditional ones, and exits not yet created. */
export interface LiveCounts {
  orders: number;
  triggers: number;
  /**
   * The take-profit / stop-loss exits its live orders will create at their first fill (each
   * declares one or two). They count against the open-order limits from the parent's placement, so
   * that filling parents never takes an account past a limit.
   */
  pendingExits: number;
}

const NO_LIVE_ORDERS: Readonly<LiveCounts> = Object.freeze({ orders: 0, triggers: 0, pendingExits: 0 });
const NO_ORDERS: readonly LinearOrder[] = Object.freeze([]);

export class LinearAccount {
  readonly positions = new Map<string, Position>();
  readonly totals = new Map<string, OrderTotals>();
  /** Live orders (resting or untriggered) by internal id. */
  readonly orders = new Map<number, LinearOrder>();
  /** Live and conditional order counts per market, for the open-order limits. */
  private readonly counts = new Map<LinearMarket, LiveCounts>();
  /** Live orders per market, in the order of `orders` (tracked and untracked with it). */
  private readonly byMarket = new Map<LinearMarket, Map<number, LinearOrder>>();
  /** Exits not yet created, over all markets (LiveCounts.pendingExits), for the per-account limit. */
  pendingExits = 0;
  /** Client order ids of live and recently ended orders (client-ids.ts). */
  readonly clientIds = new ClientIds();
  /**
   * Live reduce-only orders not waiting for a trigger (TP/SL exits count once they fire): margin.ts
   * reduceOnlyOpenLoss reads the kept sums only while some exist. Audited (engine.audit).
   */
  liveReduceOnly = 0;
  /** What its resting cross reduce-only orders would lose at the marks, kept (reduce-only-losses.ts). */
  readonly reduceOnlyLosses = new ReduceOnlyLosses();
  private nextPositionSerial = 1;

  constructor(
    readonly id: number,
    /** The account's perps bucket in the ledger (interned once; fills post to it). */
    readonly perpsLedger: LedgerAccount,
  ) {}

  position(market: LinearMarket, mode: MarginMode): Position | undefined {
    return this.positions.get(market.modeKeys[mode]);
  }

  openPosition(market: LinearMarket, mode: MarginMode, now: number): Position {
    const key = market.modeKeys[mode];
    let p = this.positions.get(key);
    if (p === undefined) {
      p = new Position(`${this.id}-${market.spec.id}-${mode}-${this.nextPositionSerial++}`, this.id, market, mode, now);
      this.positions.set(key, p);
      market.positions.add(p);
    }
    return p;
  }

  /** Drops a position record once it is flat and reported closed. */
  forgetPosition(p: Position): void {
    assert(p.size === 0, 'only a flat position can be forgotten');
    assert(p.restingReduceOnlyLots === 0, 'a forgotten position has no resting reduce-only order');
    this.positions.delete(p.market.modeKeys[p.marginMode]);
    p.market.positions.delete(p);
  }

  /** Starts tracking a live order (resting or untriggered). */
  track(order: LinearOrder): void {
    const before = this.orders.size;
    this.orders.set(order.id, order);
    if (this.orders.size !== before + 1) fail(`order ${order.id} tracked twice`);
    let inMarket = this.byMarket.get(order.market);
    if (inMarket === undefined) this.byMarket.set(order.market, (inMarket = new Map()));
    inMarket.set(order.id, order);
    const c = this.countsOf(order.market);
    c.orders++;
    if (order.trigger !== null) c.triggers++;
    else if (c.orders - c.triggers === 1) order.market.accountsWithOrders.add(this.id);
    if (order.request.reduceOnly && order.trigger === null) this.liveReduceOnly++;
    if (order.exits === null) this.exitsPending(order);
  }

  /**
   * A live order with no exit waiting counts the exits it declares against the limits: its next
   * opening fill creates them (at placement, and again once the ones it created all ended).
   */
  exitsPending(order: LinearOrder): void {
    const exits = exitsDeclared(order.request);
    if (exits === 0) return;
    const c = this.countsOf(order.market);
    order.pendingExits = exits;
    c.pendingExits += exits;
    this.pendingExits += exits;
  }

  /** The order created its exits (an opening fill), or ended: they are no longer pending. */
  exitsSettled(order: LinearOrder): void {
    if (order.pendingExits === 0) return;
    this.countsOf(order.market).pendingExits -= order.pendingExits;
    this.pendingExits -= order.pendingExits;
    order.pendingExits = 0;
  }

  /** Stops tracking an order that ended (filled, cancelled, expired). */
  untrack(order: LinearOrder): void {
    if (!this.orders.delete(order.id)) return;
    const inMarket = this.byMarket.get(order.market);
    if (inMarket === undefined || !inMarket.delete(order.id)) fail(`order ${order.id} was not indexed by market`);
    if (inMarket.size === 0) this.byMarket.delete(order.market);
    this.exitsSettled(order);
    const c = this.countsOf(order.market);
    c.orders--;
    if (order.trigger !== null) c.triggers--;
    else if (c.orders === c.triggers) order.market.accountsWithOrders.delete(this.id);
    if (order.request.reduceOnly && order.trigger === null) this.liveReduceOnly--;
  }

  /** A conditional order fired: it is no longer counted as a trigger. */
  triggered(order: LinearOrder): void {
    const c = this.countsOf(order.market);
    c.triggers--;
    if (c.orders - c.triggers === 1) order.market.accountsWithOrders.add(this.id);
    if (order.request.reduceOnly) this.liveReduceOnly++;
  }

  /** The live orders on `market` in placement order, as a copy (the caller may end them). */
  ordersOn(market: LinearMarket): LinearOrder[] {
    const orders = this.byMarket.get(market);
    return orders === undefined ? [] : [...orders.values()];
  }

  /**
   * The live orders on `market` in placement order, live: like a walk of `orders`, it skips orders
   * that end during the walk and reaches orders placed during it.
   */
  liveOrdersOn(market: LinearMarket): Iterable<LinearOrder> {
    return this.byMarket.get(market)?.values() ?? NO_ORDERS;
  }

  /** The per-market index against a walk of `orders`; empty when they agree. */
  auditOrderIndex(): string[] {
    const walk = new Map<LinearMarket, number[]>();
    for (const o of this.orders.values()) walk.set(o.market, [...(walk.get(o.market) ?? []), o.id]);
    const errors: string[] = [];
    for (const market of new Set([...walk.keys(), ...this.byMarket.keys()])) {
      const kept = [...(this.byMarket.get(market)?.keys() ?? [])].join(',');
      if (kept !== (walk.get(market) ?? []).join(',')) errors.push(`account ${this.id}: orders on ${market.spec.id} indexed as [${kept}]`);
    }
    return errors;
  }

  liveCounts(market: LinearMarket): Readonly<LiveCounts> {
    return this.counts.get(market) ?? NO_LIVE_ORDERS;
  }

  private countsOf(market: LinearMarket): LiveCounts {
    let c = this.counts.get(market);
    if (c === undefined) this.counts.set(market, (c = { orders: 0, triggers: 0, pendingExits: 0 }));
    return c;
  }

  totalsFor(market: LinearMarket, mode: MarginMode): OrderTotals {
    const key = market.modeKeys[mode];
    let t = this.totals.get(key);
    if (t === undefined) this.totals.set(key, (t = new OrderTotals(market, mode)));
    return t;
  }

  isIdle(): boolean {
    return this.positions.size === 0 && this.orders.size === 0 && this.clientIds.size === 0;
  }
}

/** How many exits (take-profit, stop-loss) an order creates when it first fills: reduce-only ones none. */
export function exitsDeclared(r: OrderRequest): number {
  if (r.reduceOnly) return 0;
  return (r.takeProfitPrice !== null ? 1 : 0) + (r.stopLossPrice !== null ? 1 : 0);
}
