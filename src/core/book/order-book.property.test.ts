/**
 * Property test: random command streams (rest, limit GTC/IOC/FOK, market, cancel, reduce, with
 * random owners and self-trade prevention modes) are applied to OrderBook and to the NaiveBook
 * oracle. After every command: identical fills and STP cancels (maker id, lots, price, order),
 * identical return values and stop reasons, identical resting state (ordered snapshot with seq),
 * OrderBook.checkInvariants() passes, the book is not crossed, fillableLots() equals what match()
 * then fills, and lots are conserved per order (filled + resting + cancelled = original) and per
 * trade (sum of fills = lots returned).
 *
 * Seeds: each run prints its seed; replay with FC_SEED=<seed> (and FC_PATH=<path> from a failure
 * report); FC_NUM_RUNS overrides the run count. Sized to finish in a few seconds.
 * Run: node --import tsx --test src/core/book/order-book.property.test.ts
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { InvariantError } from '../assert.ts';
import {
  BookOrder, BUY, MARKET_BUY_LIMIT, MARKET_SELL_LIMIT, OrderBook, SELL,
} from './order-book.ts';
import type { MatchSink, SelfTradePrevention, Side } from './order-book.ts';
import { NaiveBook } from './naive-book.ts';

type Cmd =
  | { t: 'limit'; side: Side; price: number; lots: number; owner: number; stp: SelfTradePrevention;
    tif: 'gtc' | 'ioc' | 'fok' }
  | { t: 'market'; side: Side; lots: number; owner: number; stp: SelfTradePrevention }
  | { t: 'rest'; side: Side; price: number; lots: number; owner: number }
  | { t: 'cancel'; pick: number; unknown: boolean }
  | { t: 'reduce'; pick: number; frac: number };

/** One event as a comparable tuple; `remaining` is the maker's remainingLots seen in the callback. */
type Event = [kind: 'fill' | 'stp', makerId: number, lots: number, price: number, remaining: number];

class Recorder implements MatchSink {
  events: Event[] = [];
  constructor(private readonly book: OrderBook | NaiveBook) {}
  onFill(maker: BookOrder, lots: number, priceTicks: number): void {
    // The contract: the maker is already reduced, and out of the book exactly when it reached 0.
    const gone = this.book.get(maker.id) === undefined;
    assert.equal(gone, maker.remainingLots === 0, 'maker removed iff filled');
    this.events.push(['fill', maker.id, lots, priceTicks, maker.remainingLots]);
  }
  onMakerCancelled(maker: BookOrder): void {
    assert.equal(this.book.get(maker.id), undefined, 'STP-cancelled maker is out of the book');
    this.events.push(['stp', maker.id, 0, maker.priceTicks, maker.remainingLots]);
  }
}

const side = fc.constantFrom<Side>(BUY, SELL);
const stp = fc.constantFrom<SelfTradePrevention>('cancel_maker', 'cancel_taker', 'cancel_both');
const owner = fc.integer({ min: 0, max: 3 });
const lots = fc.integer({ min: 1, max: 25 });

function commands(minPrice: number, maxPrice: number): fc.Arbitrary<Cmd[]> {
  const price = fc.integer({ min: minPrice, max: maxPrice });
  const pick = fc.nat();
  const cmd: fc.Arbitrary<Cmd> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ t: fc.constant('rest' as const), side, price, lots, owner }) },
    { weight: 4, arbitrary: fc.record({
      t: fc.constant('limit' as const), side, price, lots, owner, stp,
      tif: fc.constantFrom('gtc', 'ioc', 'fok'),
    }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('market' as const), side, lots, owner, stp }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('cancel' as const), pick, unknown: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('reduce' as const), pick, frac: fc.nat() }) },
  );
  return fc.array(cmd, { minLength: 1, maxLength: 200, size: 'max' });
}

/** Per-order lot accounting kept by the harness: filled + resting + cancelled must equal original. */
interface Ledger { original: number; filled: number; cancelled: number }

function snapshot(b: OrderBook | NaiveBook): number[][] {
  const out: number[][] = [];
  b.forEachResting((o) => out.push([o.id, o.owner, o.side, o.priceTicks, o.remainingLots, o.seq]));
  return out;
}

class Harness {
  readonly book = new OrderBook();
  readonly naive = new NaiveBook();
  readonly ledger = new Map<number, Ledger>();
  nextId = 1;

  run(c: Cmd): void {
    switch (c.t) {
      case 'rest': return this.rest(c.side, c.price, c.lots, c.owner);
      case 'limit': return this.take(c.side, c.price, c.lots, c.owner, c.stp, c.tif);
      case 'market': {
        const limit = c.side === BUY ? MARKET_BUY_LIMIT : MARKET_SELL_LIMIT;
        return this.take(c.side, limit, c.lots, c.owner, c.stp, 'ioc');
      }
      case 'cancel': return this.cancel(c.pick, c.unknown);
      case 'reduce': return this.reduce(c.pick, c.frac);
    }
  }

  private rest(s: Side, price: number, n: number, own: number): void {
    const crosses = this.book.wouldCross(s, price);
    assert.equal(this.naive.wouldCross(s, price), crosses, 'wouldCross agrees');
    const id = this.nextId++;
    const a = new BookOrder(id, own, s, price, n);
    const b = new BookOrder(id, own, s, price, n);
    if (crosses) {
      assert.throws(() => this.book.rest(a), InvariantError);
      assert.throws(() => this.naive.rest(b), InvariantError);
      return;
    }
    this.book.rest(a);
    this.naive.rest(b);
    this.ledger.set(id, { original: n, filled: 0, cancelled: 0 });
  }

  private take(s: Side, limit: number, n: number, own: number, mode: SelfTradePrevention,
    tif: 'gtc' | 'ioc' | 'fok'): void {
    const id = this.nextId++;
    const entry: Ledger = { original: n, filled: 0, cancelled: 0 };
    this.ledger.set(id, entry);
    const fillable = this.book.fillableLots(s, limit, n, own, mode);
    assert.equal(this.naive.fillableLots(s, limit, n, own, mode), fillable, 'fillableLots agrees');
    if (tif === 'fok' && fillable < n) {
      entry.cancelled = n;
      return;
    }
    const ra = new Recorder(this.book);
    const rb = new Recorder(this.naive);
    const filled = this.book.match(s, limit, n, own, mode, ra);
    assert.equal(this.naive.match(s, limit, n, own, mode, rb), filled, 'match returns agree');
    assert.equal(filled, fillable, 'fillableLots predicted match');
    assert.deepEqual(ra.events, rb.events, 'same fills and STP cancels in the same order');
    const reason = this.book.lastStopReason;
    assert.equal(this.naive.lastStopReason, reason, 'same stop reason');
    assert.equal(reason === 'filled', filled === n, 'filled exactly when the size is done');
    let sum = 0;
    for (const [kind, makerId, q, price, remaining] of ra.events) {
      const m = this.ledger.get(makerId) as Ledger;
      if (kind === 'stp') {
        m.cancelled += remaining;
        continue;
      }
      assert.ok(q > 0, 'fills are positive');
      assert.ok(s === BUY ? price <= limit : price >= limit, 'fill within the taker limit');
      m.filled += q;
      sum += q;
    }
    assert.equal(sum, filled, 'per trade: fills add up to the lots returned');
    entry.filled = filled;
    const left = n - filled;
    if (left === 0) return;
    if (tif === 'gtc' && (reason === 'limit' || reason === 'no_liquidity')) {
      this.book.rest(new BookOrder(id, own, s, limit, left));
      this.naive.rest(new BookOrder(id, own, s, limit, left));
    } else {
      entry.cancelled = left;
    }
  }

  private restingIds(): number[] {
    const ids: number[] = [];
    this.book.forEachResting((o) => ids.push(o.id));
    return ids;
  }

  private cancel(pick: number, unknown: boolean): void {
    const ids = this.restingIds();
    // An unknown pick may also hit a resting id by chance; both books must agree either way.
    const id = unknown || ids.length === 0 ? 1 + (pick % (this.nextId + 5))
      : (ids[pick % ids.length] as number);
    const a = this.book.cancel(id);
    const b = this.naive.cancel(id);
    assert.deepEqual(a && [a.id, a.remainingLots], b && [b.id, b.remainingLots], 'same cancel result');
    if (a !== undefined) (this.ledger.get(id) as Ledger).cancelled += a.remainingLots;
  }

  private reduce(pick: number, frac: number): void {
    const ids = this.restingIds().filter((i) => (this.book.get(i) as BookOrder).remainingLots > 1);
    if (ids.length === 0) return;
    const id = ids[pick % ids.length] as number;
    const rem = (this.book.get(id) as BookOrder).remainingLots;
    const newLots = 1 + (frac % (rem - 1));
    this.book.reduce(id, newLots);
    this.naive.reduce(id, newLots);
    (this.ledger.get(id) as Ledger).cancelled += rem - newLots;
  }

  /** Everything that must hold after every command. */
  verify(): void {
    const { book, naive } = this;
    book.checkInvariants();
    assert.deepEqual(snapshot(book), snapshot(naive), 'same resting orders in the same priority order');
    assert.ok(Object.is(book.bestBid(), naive.bestBid()) && Object.is(book.bestAsk(), naive.bestAsk()));
    assert.ok(!(book.bestBid() >= book.bestAsk()), 'book not crossed');
    assert.equal(book.orderCount(), naive.orderCount());
    for (const s of [BUY, SELL] as const) {
      assert.equal(book.levelCount(s), naive.levelCount(s));
      const da: number[] = [];
      const db: number[] = [];
      assert.equal(book.depth(s, 1_000, da), naive.depth(s, 1_000, db));
      assert.deepEqual(da, db, 'same depth');
      for (let i = 0; i < da.length; i += 2) {
        assert.equal(book.levelLots(s, da[i] as number), da[i + 1], 'levelLots matches depth');
      }
    }
    for (const [id, e] of this.ledger) {
      const resting = book.get(id)?.remainingLots ?? 0;
      assert.equal(e.filled + resting + e.cancelled, e.original, `lots conserved for order ${id}`);
    }
  }
}

const SEED = process.env.FC_SEED === undefined ? (Date.now() ^ (process.pid << 8)) >>> 0
  : Number(process.env.FC_SEED);
const PATH = process.env.FC_PATH;
const RUNS = process.env.FC_NUM_RUNS === undefined ? undefined : Number(process.env.FC_NUM_RUNS);

function check(name: string, minPrice: number, maxPrice: number, numRuns: number): void {
  test(name, () => {
    console.log(`${name}: fast-check seed ${SEED} (replay with FC_SEED=${SEED})`);
    fc.assert(
      fc.property(commands(minPrice, maxPrice), (cmds) => {
        const h = new Harness();
        for (const c of cmds) {
          h.run(c);
          h.verify();
        }
      }),
      { seed: SEED, numRuns: RUNS ?? numRuns, ...(PATH === undefined ? {} : { path: PATH }) },
    );
  });
}

check('OrderBook agrees with NaiveBook on a narrow price band (deep levels, frequent self-trades)',
  95, 105, 1500);
check('OrderBook agrees with NaiveBook on a wide price band (many levels, tree rebalancing)', 1, 400, 1000);
