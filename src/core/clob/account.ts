/**
 * One account's state in the CLOB engine: its live orders (all of them, and per market and per
 * underlying of its option quotes, so a quote replace, a cancel by market and a market-maker
 * protection trip walk only those), the funds those orders hold per (bucket, asset), its resting
 * option sell lots per instrument (they carry margin), its option positions, its kept option margin
 * (option-margin.ts), and its client order ids.
 *
 * Invariants (checked by the engine tests after every command): `held(bucket, asset)` equals the
 * sum of `reserve` over the live orders of that bucket and asset; `sellLots(market)` equals the
 * remaining lots of the account's resting option sell orders on it; the per-market and per-
 * underlying orders are those of `orders`, in the same order (ClobEngine.audit).
 */
import { assert, fail } from '../assert.ts';
import type { Bucket } from '../ledger/ledger.ts';
import type { Fixed } from '../money.ts';
import { ClientIds } from '../client-ids.ts';
import type { ClobMarket } from './market.ts';
import { AccountMargin } from './option-margin.ts';
import type { ClobOrder } from './order.ts';
import { OptionPosition } from './position.ts';

export class ClobAccount {
  /** Live (resting) orders by id. */
  readonly orders = new Map<number, ClobOrder>();
  readonly positions = new Map<string, OptionPosition>();
  readonly clientIds = new ClientIds();
  /** The option margin of its worst-case shorts and short positions, kept (option-margin.ts). */
  readonly margin = new AccountMargin();
  private readonly holds = new Map<string, Fixed>();
  private readonly restingSells = new Map<ClobMarket, number>();
  /** Live orders per market, in the order of `orders` (tracked and untracked with it). */
  private readonly byMarket = new Map<ClobMarket, Map<number, ClobOrder>>();
  /** Live option quote orders per underlying, in the order of `orders` (market-maker protection). */
  private readonly quotesByUnderlying = new Map<string, Map<number, ClobOrder>>();
  private nextPositionSerial = 1;

  constructor(readonly id: number) {}

  held(bucket: Bucket, asset: string): Fixed {
    return this.holds.get(`${bucket}:${asset}`) ?? 0n;
  }

  /** Changes the funds held in (bucket, asset) by `delta`; a hold never goes negative. */
  adjustHold(bucket: Bucket, asset: string, delta: Fixed): void {
    if (delta === 0n) return;
    const key = `${bucket}:${asset}`;
    const next = (this.holds.get(key) ?? 0n) + delta;
    if (next < 0n) fail(`hold ${key} of account ${this.id} would be negative`);
    if (next === 0n) this.holds.delete(key);
    else this.holds.set(key, next);
  }

  sellLots(market: ClobMarket): number {
    return this.restingSells.get(market) ?? 0;
  }

  adjustSellLots(market: ClobMarket, delta: number): void {
    const next = this.sellLots(market) + delta;
    if (!(next >= 0)) fail(`resting sell lots of account ${this.id} on ${market.spec.id} would be negative`);
    if (next === 0) this.restingSells.delete(market);
    else this.restingSells.set(market, next);
    this.margin.touch(market);
  }

  /** Instruments where the account has resting option sells (margin may be needed there). */
  sellMarkets(): IterableIterator<ClobMarket> {
    return this.restingSells.keys();
  }

  /** The account's position on an option changed size: its margin term is stale. */
  positionChanged(market: ClobMarket): void {
    this.margin.touch(market);
  }

  position(market: ClobMarket): OptionPosition | undefined {
    return this.positions.get(market.spec.id);
  }

  openPosition(market: ClobMarket, now: number): OptionPosition {
    let p = this.positions.get(market.spec.id);
    if (p === undefined) {
      const id = `${this.id}-${market.spec.id}-${this.nextPositionSerial++}`;
      p = new OptionPosition(id, this.id, market, now);
      this.positions.set(market.spec.id, p);
      market.positions.set(this.id, p);
    }
    return p;
  }

  /** Drops a flat position once it has been reported closed. */
  forgetPosition(p: OptionPosition): void {
    assert(p.size === 0, 'only a flat position can be forgotten');
    if (this.positions.get(p.market.spec.id) === p) this.positions.delete(p.market.spec.id);
    if (p.market.positions.get(this.id) === p) p.market.positions.delete(this.id);
  }

  track(order: ClobOrder): void {
    if (this.orders.has(order.id)) fail(`order ${order.id} tracked twice`);
    this.orders.set(order.id, order);
    indexed(this.byMarket, order.market).set(order.id, order);
    if (order.isQuote && order.market.isOption) indexed(this.quotesByUnderlying, order.market.underlying).set(order.id, order);
  }

  untrack(order: ClobOrder): void {
    if (this.orders.get(order.id) !== order) return;
    this.orders.delete(order.id);
    unindex(this.byMarket, order.market, order.id);
    if (order.isQuote && order.market.isOption) unindex(this.quotesByUnderlying, order.market.underlying, order.id);
  }

  liveCount(market: ClobMarket): number {
    return this.byMarket.get(market)?.size ?? 0;
  }

  /** The live orders on `market`, in placement order (a copy: the caller may end them). */
  ordersOn(market: ClobMarket): ClobOrder[] {
    const orders = this.byMarket.get(market);
    return orders === undefined ? [] : [...orders.values()];
  }

  /** The live option quote orders on `underlying`, in placement order (a copy). */
  optionQuotesOn(underlying: string): ClobOrder[] {
    const orders = this.quotesByUnderlying.get(underlying);
    return orders === undefined ? [] : [...orders.values()];
  }

  /** The per-market and per-underlying indexes against a walk of `orders`; empty when they agree. */
  auditIndexes(): string[] {
    const byMarket = new Map<ClobMarket, number[]>();
    const quotes = new Map<string, number[]>();
    for (const o of this.orders.values()) {
      byMarket.set(o.market, [...(byMarket.get(o.market) ?? []), o.id]);
      if (o.isQuote && o.market.isOption) quotes.set(o.market.underlying, [...(quotes.get(o.market.underlying) ?? []), o.id]);
    }
    const errors: string[] = [];
    const compare = <K>(what: string, index: Map<K, Map<number, ClobOrder>>, walk: Map<K, number[]>, name: (k: K) => string) => {
      for (const key of new Set([...index.keys(), ...walk.keys()])) {
        const kept = [...(index.get(key)?.keys() ?? [])].join(',');
        if (kept !== (walk.get(key) ?? []).join(',')) errors.push(`account ${this.id}: ${what} ${name(key)} indexed as [${kept}]`);
      }
    };
    compare('orders on', this.byMarket, byMarket, (m) => m.spec.id);
    compare('option quotes on', this.quotesByUnderlying, quotes, (u) => u);
    return errors;
  }

  isIdle(): boolean {
    return this.orders.size + this.positions.size + this.clientIds.size + this.holds.size === 0;
  }
}

function indexed<K>(index: Map<K, Map<number, ClobOrder>>, key: K): Map<number, ClobOrder> {
  let orders = index.get(key);
  if (orders === undefined) index.set(key, (orders = new Map()));
  return orders;
}

function unindex<K>(index: Map<K, Map<number, ClobOrder>>, key: K, id: number): void {
  const orders = index.get(key);
  if (orders === undefined || !orders.delete(id)) fail(`order ${id} was not indexed`);
  if (orders.size === 0) index.delete(key);
}
