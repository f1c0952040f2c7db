/**
 * Property test of the CLOB engine (spot and options), in-process (research/reliability.md 4 and
 * 7.4): fast-check generates command streams for 4 accounts funded in their spot and options
 * buckets (with BTC and ETH inventory): limit / market / ioc / fok / post-only / reduce-only orders
 * on the two spot pairs and four option instruments (prices on and off the tick, in and out of the
 * bands, good and bad sizes, duplicate client ids), cancels of own, other accounts' and unknown
 * ids, cancel-all with each filter, amends, quote ladders with cancelAll, 2–3 leg strategies,
 * market-maker protection set and reset, index moves, clock ticks and jumps (across the first
 * expiry, so orders expire and positions settle).
 *
 * After every command (test/support/clob-venue.ts `checkClobInvariants`): the ledger sums to zero
 * per asset (USDC, BTC, ETH), no user bucket is negative, every hold equals the sum of its orders'
 * reserves and never exceeds the balance, resting option sells are counted exactly, books are
 * uncrossed. Per command: a refusal emits nothing and leaves a canonical dump (ledger, books,
 * orders, holds, positions) unchanged; an accepted fill-or-kill order and an accepted strategy
 * fill completely. At the end the accepted commands, through the journal codec, are replayed into a
 * fresh Exchange at the same times: same dump and same events.
 *
 * Seeded: prints its seed; replay with SEED=<n> (NUM_RUNS=<n> to change the run count).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decode, encode } from '../../src/adapters/store/codec.ts';
import type { PlaceResult, QuoteRequest } from '../../src/core/linear/engine.ts';
import type { Command } from '../../src/core/commands.ts';
import type { ExchangeEvent } from '../../src/core/events.ts';
import type { Exchange } from '../../src/core/exchange.ts';
import { fx, type Fixed } from '../../src/core/money.ts';
import type { StrategyResult } from '../../src/core/clob/strategy.ts';
import { addr, ClobVenue, clobRequest, type ClobOrderFields } from '../support/clob-venue.ts';

const SEED = process.env.SEED !== undefined ? Number(process.env.SEED) : Date.now() % 2 ** 31;
const NUM_RUNS = Number(process.env.NUM_RUNS ?? 250);
const T0 = Date.UTC(2026, 0, 6, 12);
const ACCOUNTS = [1, 2, 3, 4].map((n) => addr(0xc10b0 + n));
const CIDS = ['a', 'b'];

interface MarketInfo {
  readonly id: string;
  /** Reference price and a price step (a multiple of the tick) for generated offsets. */
  readonly ref: Fixed;
  readonly step: Fixed;
  readonly tick: Fixed;
  /** Size of one generated lot: a whole number of steps, at least the minimum size. */
  readonly lot: Fixed;
  readonly sizeStep: Fixed;
}

type Step =
  | { k: 'place'; who: number; m: number; o: GenOrder }
  | { k: 'cancel'; who: number; ref: number }
  | { k: 'cancelAll'; who: number; filter: number; m: number }
  | { k: 'modify'; who: number; ref: number; dPrice: number; dLots: number }
  | { k: 'quote'; who: number; m: number; cancelAll: boolean; levels: GenOrder[] }
  | { k: 'strategy'; who: number; legs: { m: number; side: 0 | 1; off: number; lots: number }[] }
  | { k: 'mmp'; who: number; reset: boolean; limit: number }
  | { k: 'index'; u: 0 | 1; bps: number }
  | { k: 'tick'; ms: number }
  | { k: 'expire' };

interface GenOrder {
  side: 0 | 1;
  kind: 'limit' | 'market' | 'ioc' | 'fok' | 'post';
  off: number;
  offTick: boolean;
  lots: number;
  badSize: boolean;
  reduceOnly: boolean;
  cid: number | null;
}

const genOrder: fc.Arbitrary<GenOrder> = fc.record({
  side: fc.constantFrom<0 | 1>(0, 1),
  kind: fc.constantFrom<GenOrder['kind']>('limit', 'limit', 'limit', 'market', 'ioc', 'fok', 'post', 'post'),
  off: fc.integer({ min: -4, max: 4 }),
  offTick: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
  lots: fc.integer({ min: 1, max: 40 }),
  badSize: fc.constantFrom(false, false, false, false, false, false, false, false, false, true),
  reduceOnly: fc.constantFrom(false, false, false, false, false, true),
  cid: fc.integer({ min: 0, max: 11 }).map((n) => (n < CIDS.length ? n : null)),
});

const who = fc.integer({ min: 0, max: ACCOUNTS.length - 1 });
/** Markets by index (see Model): trading concentrates on BTC-USDC and the ATM call so books build up. */
const market = fc.constantFrom(0, 0, 0, 1, 2, 2, 2, 3, 3, 4, 5);

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 36, arbitrary: fc.record({ k: fc.constant('place' as const), who, m: market, o: genOrder }) },
  { weight: 9, arbitrary: fc.record({ k: fc.constant('cancel' as const), who, ref: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('cancelAll' as const),
      who,
      filter: fc.integer({ min: 0, max: 3 }),
      m: market,
    }),
  },
  {
    weight: 9,
    arbitrary: fc.record({
      k: fc.constant('modify' as const),
      who,
      ref: fc.nat(),
      dPrice: fc.integer({ min: -2, max: 2 }),
      dLots: fc.integer({ min: -10, max: 10 }),
    }),
  },
  {
    weight: 12,
    arbitrary: fc.record({
      k: fc.constant('quote' as const),
      who,
      m: market,
      cancelAll: fc.boolean(),
      levels: fc.array(genOrder, { maxLength: 3 }),
    }),
  },
  {
    weight: 9,
    arbitrary: fc.record({
      k: fc.constant('strategy' as const),
      who,
      legs: fc.uniqueArray(
        fc.record({
          m: market,
          side: fc.constantFrom<0 | 1>(0, 1),
          off: fc.integer({ min: -1, max: 6 }),
          lots: fc.integer({ min: 1, max: 6 }),
        }),
        { minLength: 2, maxLength: 3, selector: (l) => l.m },
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('mmp' as const),
      who,
      reset: fc.boolean(),
      limit: fc.integer({ min: 1, max: 5 }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      k: fc.constant('index' as const),
      u: fc.constantFrom<0 | 1>(0, 1),
      bps: fc.integer({ min: -300, max: 300 }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      k: fc.constant('tick' as const),
      ms: fc.constantFrom(1000, 60_000, 600_000, 3_600_000, 9 * 3_600_000),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ k: 'expire' as const }) },
);

/** A canonical text of everything a refusal must leave unchanged. */
function dump(ex: Exchange): string {
  const ledger = [...ex.ledger.entries()].map(([k, v]) => `${k}=${v}`).sort();
  const books: string[] = [];
  for (const m of ex.clob.markets.values()) {
    if (m.book.orderCount() === 0) continue;
    const orders: string[] = [];
    m.book.forEachResting((o) => orders.push(`${o.id}:${o.side}:${o.priceTicks}:${o.remainingLots}`));
    books.push(`${m.spec.id}|${m.status}|${orders.join(',')}`);
  }
  const accounts = [...ex.clob.allAccounts()].map((a) => {
    const orders = [...a.orders.values()]
      .map((o) => `${o.id}/${o.remainingLots}/${o.reserve}/${o.originalLots}`);
    const positions = [...a.positions.values()]
      .map((p) => `${p.market.spec.id}:${p.size}:${p.cost}:${p.realizedPnl}`);
    const mmp = ex.clob.mmp.views(a.id, ex.now()).map((v) => `${v.underlying}:${v.frozen}`);
    return `${a.id}[${orders.join(',')}][${positions.join(',')}][${mmp.join(',')}]`;
  });
  const statuses = [...ex.clob.markets.values()]
    .filter((m) => m.status !== 'open')
    .map((m) => `${m.spec.id}:${m.status}`);
  return JSON.stringify({ ledger, books, accounts, statuses });
}

class Model {
  readonly v = new ClobVenue(T0);
  readonly markets: MarketInfo[] = [];
  readonly accepted: { command: Command; at: number }[] = [];
  readonly events: ExchangeEvent[] = [];
  readonly orderIds: number[] = [];
  private index = [fx('100000'), fx('3000')];

  constructor() {
    this.publish(0);
    this.publish(1);
    this.apply({ type: 'clock.tick' });
    for (const [i, a] of ACCOUNTS.entries()) {
      const tx = `0x${(i + 1).toString(16).padStart(64, '0')}`;
      this.apply({
        type: 'chain.deposit_observed',
        txHash: tx,
        account: a,
        amount: fx('2000000'),
        confirmations: 1,
      });
      this.apply({ type: 'wallet.transfer', account: a, from: 'wallet', to: 'spot', amount: fx('1000000') });
      this.apply({
        type: 'wallet.transfer',
        account: a,
        from: 'wallet',
        to: 'options',
        amount: fx(i === 3 ? '30000' : '1000000'),
      });
      this.apply({ type: 'treasury.grant', account: a, asset: 'BTC', amount: fx('5') });
      this.apply({ type: 'treasury.grant', account: a, asset: 'ETH', amount: fx('50') });
    }
    const lot = (id: string) => this.v.clob.markets.get(id)!.units;
    const size = (id: string) => this.v.clob.markets.get(id)!.spec.minSize;
    for (const [id, ref, stepSize] of [['BTC-USDC', '100000', '100'], ['ETH-USDC', '3000', '5']] as const) {
      this.markets.push({
        id,
        ref: fx(ref),
        step: fx(stepSize),
        tick: lot(id).tick,
        lot: size(id),
        sizeStep: lot(id).step,
      });
    }
    const options: [string, 'call' | 'put', string, number, string][] = [
      ['BTC', 'call', '100000', 0, '2000'], ['BTC', 'put', '98000', 0, '800'], [
        'BTC',
        'call',
        '104000',
        0,
        '400',
      ], [
        'BTC',
        'call',
        '100000',
        4,
        '5000',
      ],
    ];
    for (const [u, type, strike, e, ref] of options) {
      const id = this.v.option(u, type, strike, e);
      this.markets.push({
        id,
        ref: fx(ref),
        step: fx('50'),
        tick: lot(id).tick,
        lot: size(id),
        sizeStep: lot(id).step,
      });
    }
  }

  /** Applies a command at the next time (or `advance` ms later); records it when accepted. */
  apply(command: Command, advance = 1) {
    const before = dump(this.v.ex);
    const out = this.v.run(command, this.v.t + advance);
    if (out.ok) {
      this.accepted.push({ command: decode(encode(command)), at: this.v.t });
      this.events.push(...out.events);
    } else {
      assert.equal(dump(this.v.ex), before, `refused ${command.type} (${out.code}) changed state`);
    }
    return out;
  }

  publish(u: 0 | 1): void {
    const t = this.v.t + 1;
    this.apply({
      type: 'index.publish',
      underlying: u === 0 ? 'BTC' : 'ETH',
      price: this.index[u]!,
      sourceTs: t,
    });
  }

  request(m: number, o: GenOrder, quoteId: string | null = null): ClobOrderFields {
    const info = this.markets[m]!;
    // Resting orders lean passive and immediate ones aggressive, so books build up and trade.
    const lean = (o.kind === 'limit' || o.kind === 'post' ? -1 : 2) * (o.side === 0 ? 1 : -1);
    let price = info.ref + BigInt(o.off + lean) * info.step;
    if (price <= 0n) price = info.step;
    if (o.offTick) price += info.tick / 2n;
    const qty = o.badSize ? info.sizeStep / 2n : info.lot * BigInt(o.lots);
    const tif = o.kind === 'ioc' || o.kind === 'market' ? 'ioc' : o.kind === 'fok' ? 'fok' : 'gtc';
    const fields: ClobOrderFields = {
      market: info.id,
      side: o.side === 0 ? 'buy' : 'sell',
      qty: fmt(qty),
      tif: o.reduceOnly && tif === 'gtc' && o.kind !== 'post' ? 'ioc' : tif,
      postOnly: o.kind === 'post',
      reduceOnly: o.reduceOnly && m >= 2,
      cid: o.cid === null ? undefined : CIDS[o.cid],
      quoteId: quoteId ?? undefined,
    };
    if (o.kind !== 'market') fields.price = fmt(price);
    return fields;
  }

  /** An order id seen so far (most often), or an unknown one. */
  ref(n: number): number {
    const i = n % (this.orderIds.length + 2);
    return i < this.orderIds.length ? this.orderIds[this.orderIds.length - 1 - i]! : 900_000 + i;
  }

  run(s: Step): void {
    const a = ACCOUNTS['who' in s ? s.who : 0]!;
    switch (s.k) {
      case 'place': {
        const out = this.apply({
          type: 'clob.place',
          account: a,
          request: clobRequest(this.request(s.m, s.o)),
        });
        if (out.ok) {
          const r = out.result as PlaceResult;
          this.orderIds.push(Number(r.order.id));
          if (r.order.timeInForce === 'fok') assert.equal(r.order.status, 'filled', 'an accepted fok fills');
        }
        return;
      }
      case 'cancel':
        this.apply({ type: 'clob.cancel', account: a, orderId: this.ref(s.ref) });
        return;
      case 'cancelAll': {
        const info = this.markets[s.m]!;
        const filters = [
          {},
          { marketId: info.id },
          { underlying: s.m % 2 === 0 ? 'BTC' : 'ETH' },
          { clientOrderId: 'a' },
        ];
        this.apply({ type: 'clob.cancel_all', account: a, filter: filters[s.filter]! });
        return;
      }
      case 'modify':
        this.modify(a, s);
        return;
      case 'quote':
        this.quote(a, s);
        return;
      case 'strategy':
        this.strategy(a, s);
        return;
      case 'mmp':
        if (s.reset) this.apply({ type: 'clob.mmp_reset', account: a, underlying: 'BTC' });
        else this.apply({
          type: 'clob.mmp_set',
          account: a,
          underlying: 'BTC',
          config: {
            windowMs: 600_000,
            frozenMs: 30_000,
            quantityLimit: fx(`0.0${s.limit}`),
            deltaLimit: null,
            vegaLimit: null,
          },
        });
        return;
      case 'index':
        this.index[s.u] = (this.index[s.u]! * BigInt(10_000 + s.bps)) / 10_000n / 10n ** 10n * 10n ** 10n;
        this.publish(s.u);
        return;
      case 'tick':
        this.apply({ type: 'clock.tick' }, s.ms);
        if (s.ms >= 3_600_000) {
          this.publish(0);
          this.publish(1);
        }
        return;
      case 'expire':
        this.expire();
        return;
    }
  }

  /** Drives the clock through the settlement window of the first expiry and past it. */
  private expire(): void {
    const expiry = Date.UTC(2026, 0, 7, 8);
    if (this.v.t < expiry - 25 * 60_000) this.v.t = expiry - 25 * 60_000;
    this.publish(0);
    this.publish(1);
    this.apply({ type: 'clock.tick' });
    if (this.v.t < expiry) this.v.t = expiry;
    this.apply({ type: 'clock.tick' });
  }

  private modify(a: string, s: Extract<Step, { k: 'modify' }>): void {
    const id = this.ref(s.ref);
    const live = [...this.v.clob.allAccounts()]
      .flatMap((x) => [...x.orders.values()])
      .find((o) => o.id === id);
    const units = live?.market.units;
    const moved = (ticks: Fixed) => live!.request.price! + BigInt(s.dPrice) * ticks * 10n;
    const price = live === undefined || units === undefined ? null : moved(units.tick);
    const lots = live === undefined ? 1 : Math.max(1, live.originalLots + s.dLots);
    this.apply({
      type: 'clob.modify', account: a, orderId: id,
      price: price === null || price <= 0n || s.dPrice === 0 ? null : price,
      quantity: units === undefined || s.dLots === 0
        ? (price === null ? fx('1') : null)
        : units.step * BigInt(lots),
    });
  }

  private quote(a: string, s: Extract<Step, { k: 'quote' }>): void {
    const info = this.markets[s.m]!;
    const levels = s.levels.map((l) => clobRequest(this.request(
      s.m,
      { ...l, kind: l.kind === 'market' ? 'limit' : l.kind },
      'q',
    )));
    const quote: QuoteRequest = {
      marketId: info.id,
      quoteId: 'q',
      cancelAll: s.cancelAll,
      replaceQuoteId: null,
      levels,
    };
    const out = this.apply({ type: 'clob.quote', account: a, quote });
    if (!out.ok) return;
    for (const o of (out.result as { orders: PlaceResult[] }).orders) this.orderIds.push(Number(o.order.id));
  }

  private strategy(a: string, s: Extract<Step, { k: 'strategy' }>): void {
    const legs = s.legs.map((l) => {
      const info = this.markets[l.m]!;
      const price = info.ref + BigInt(l.side === 0 ? l.off : -l.off) * info.step; // mostly aggressive
      return {
        marketId: info.id,
        side: l.side,
        quantity: info.lot * BigInt(l.lots),
        price: price > 0n ? price : info.step,
      };
    });
    const out = this.apply({
      type: 'clob.strategy',
      account: a,
      strategy: { name: null, allOrNone: true, cancelOnFailure: false, legs },
    });
    if (!out.ok) return;
    const r = out.result as StrategyResult;
    assert.equal(r.legs.length, legs.length);
    r.legs.forEach((l, i) => {
      const filled = l.fills.reduce((sum, f) => sum + f.quantity, 0n);
      assert.equal(filled, legs[i]!.quantity, 'every strategy leg fills completely');
    });
  }
}

const fmt = (v: Fixed): string => {
  const s = (v < 0n ? -v : v).toString().padStart(19, '0');
  const out = `${s.slice(0, -18)}.${s.slice(-18)}`.replace(/\.?0+$/, '');
  return v < 0n ? `-${out}` : out;
};

/** Replays the accepted commands into a fresh venue: the same state and the same events. */
function replay(model: Model): void {
  const fresh = new ClobVenue(T0);
  const events: ExchangeEvent[] = [];
  for (const { command, at } of model.accepted) {
    const out = fresh.ex.execute(command, at);
    assert.ok(out.ok, `replay refused ${command.type}`);
    events.push(...out.events);
  }
  assert.equal(dump(fresh.ex), dump(model.v.ex));
  assert.equal(encode(events), encode(model.events));
}

test('CLOB engine: random spot/option streams keep every invariant and replay exactly', () => {
  console.log(`clob property seed ${SEED} (SEED=<n> to replay, NUM_RUNS=${NUM_RUNS})`);
  fc.assert(
    fc.property(fc.array(step, { minLength: 40, maxLength: 120 }), (steps) => {
      const model = new Model();
      for (const s of steps) model.run(s);
      replay(model);
    }),
    { seed: SEED, numRuns: NUM_RUNS, endOnFailure: true },
  );
});
