/**
 * One account's state in the CLOB engine: its live orders, the funds those orders hold per
 * (bucket, asset), its resting option sell lots per instrument (they carry margin), its option
 * positions, and its client order ids.
 *
 * Invariants (checked by the engine tests after every command): `held(bucket, asset)` equals the
 * sum of `reserve` over the live orders of that bucket and asset; `sellLots(market)` equals the
 * remaining lots of the account's resting option sell orders on it.
 */
import { assert, fail } from '../assert.ts';
import type { Bucket } from '../ledger/ledger.ts';
import type { Fixed } from '../money.ts';
import { ClientIds } from '../client-ids.ts';
import type { ClobMarket } from './market.ts';
import type { ClobOrder } from './order.ts';
import { OptionPosition } from './position.ts';

export class ClobAccount {
  /** Live (resting) orders by id. */
  readonly orders = new Map<number, ClobOrder>();
  readonly positions = new Map<string, OptionPosition>();
  readonly clientIds = new ClientIds();
  private readonly holds = new Map<string, Fixed>();
  private readonly restingSells = new Map<ClobMarket, number>();
  private readonly counts = new Map<ClobMarket, number>();
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
  }

  /** Instruments where the account has resting option sells (margin may be needed there). */
  sellMarkets(): IterableIterator<ClobMarket> {
    return this.restingSells.keys();
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
    this.counts.set(order.market, (this.counts.get(order.market) ?? 0) + 1);
  }

  untrack(order: ClobOrder): void {
    if (this.orders.get(order.id) !== order) return;
    this.orders.delete(order.id);
    const n = (this.counts.get(order.market) ?? 1) - 1;
    if (n === 0) this.counts.delete(order.market);
    else this.counts.set(order.market, n);
  }

  liveCount(market: ClobMarket): number {
    return this.counts.get(market) ?? 0;
  }

  isIdle(): boolean {
    return this.orders.size + this.positions.size + this.clientIds.size + this.holds.size === 0;
  }
}
