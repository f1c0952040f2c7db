/**
 * Example-based tests of the order book's semantics. Every semantic case runs against both
 * OrderBook and its oracle NaiveBook, so the oracle is checked too; OrderBook additionally runs
 * checkInvariants() after every case. Structure-specific cases (level pooling, tree balance,
 * re-entrant sinks) run against OrderBook only.
 * Run: node --import tsx --test src/core/book/order-book.test.ts
 */

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { InvariantError } from '../assert.ts';
import {
  BookOrder, BUY, MARKET_BUY_LIMIT, MARKET_SELL_LIMIT, OrderBook, SELL,
} from './order-book.ts';
import type { MatchSink, SelfTradePrevention, Side, StopReason } from './order-book.ts';
import { NaiveBook } from './naive-book.ts';

type AnyBook = OrderBook | NaiveBook;
/** [id, owner, side, price, lots] */
type Rest = [number, number, Side, number, number];
type Event = ['fill', number, number, number] | ['stp', number];

class Recorder implements MatchSink {
  events: Event[] = [];
  onFill(maker: BookOrder, lots: number, priceTicks: number): void {
    this.events.push(['fill', maker.id, lots, priceTicks]);
  }
  onMakerCancelled(maker: BookOrder): void {
    this.events.push(['stp', maker.id]);
  }
}

const IMPLS: [string, () => AnyBook][] = [
  ['OrderBook', () => new OrderBook()],
  ['NaiveBook', () => new NaiveBook()],
];

function bookWith(make: () => AnyBook, rests: Rest[]): AnyBook {
  const b = make();
  for (const [id, owner, side, price, lots] of rests) b.rest(new BookOrder(id, owner, side, price, lots));
  return b;
}

/** Resting state as [id, price, remaining] in priority order, bids then asks. */
function resting(b: AnyBook): number[][] {
  const out: number[][] = [];
  b.forEachResting((o) => out.push([o.id, o.priceTicks, o.remainingLots]));
  return out;
}

function check(b: AnyBook): void {
  if (b instanceof OrderBook) b.checkInvariants();
}

interface MatchCase {
  name: string;
  book: Rest[];
  taker: { side: Side; limit: number; lots: number; owner?: number; stp?: SelfTradePrevention };
  filled: number;
  reason: StopReason;
  events: Event[];
  after: number[][];
}

const ASKS: Rest[] = [
  [1, 1, SELL, 101, 5], [2, 2, SELL, 101, 3], [3, 3, SELL, 102, 4], [4, 4, SELL, 105, 10],
];
const BIDS: Rest[] = [
  [11, 1, BUY, 99, 5], [12, 2, BUY, 99, 3], [13, 3, BUY, 98, 4], [14, 4, BUY, 95, 10],
];

/** Three orders at 101 (ids 1, 2, 3) and one behind them at 103. */
const LEVEL: Rest[] = [
  [1, 1, SELL, 101, 5], [2, 2, SELL, 101, 3], [3, 3, SELL, 101, 4], [9, 9, SELL, 103, 1],
];

const MATCH_CASES: MatchCase[] = [
  {
    name: 'orders at one price trade in arrival order',
    book: ASKS, taker: { side: BUY, limit: 101, lots: 6 }, filled: 6, reason: 'filled',
    events: [['fill', 1, 5, 101], ['fill', 2, 1, 101]],
    after: [[2, 101, 2], [3, 102, 4], [4, 105, 10]],
  },
  {
    name: 'a better price trades before an earlier order at a worse price',
    book: [[1, 1, SELL, 102, 5], [2, 2, SELL, 101, 5]], taker: { side: BUY, limit: 102, lots: 7 },
    filled: 7, reason: 'filled', events: [['fill', 2, 5, 101], ['fill', 1, 2, 102]], after: [[1, 102, 3]],
  },
  {
    name: 'a partially filled maker keeps its place at the head of its level',
    book: ASKS, taker: { side: BUY, limit: 101, lots: 2 }, filled: 2, reason: 'filled',
    events: [['fill', 1, 2, 101]], after: [[1, 101, 3], [2, 101, 3], [3, 102, 4], [4, 105, 10]],
  },
  {
    name: 'trades print at the maker price, not the taker limit',
    book: BIDS, taker: { side: SELL, limit: 90, lots: 9 }, filled: 9, reason: 'filled',
    events: [['fill', 11, 5, 99], ['fill', 12, 3, 99], ['fill', 13, 1, 98]],
    after: [[13, 98, 3], [14, 95, 10]],
  },
  {
    name: 'a buy limit stops before asks above its limit and reports limit',
    book: ASKS, taker: { side: BUY, limit: 102, lots: 50 }, filled: 12, reason: 'limit',
    events: [['fill', 1, 5, 101], ['fill', 2, 3, 101], ['fill', 3, 4, 102]], after: [[4, 105, 10]],
  },
  {
    name: 'a sell limit stops before bids below its limit and reports limit',
    book: BIDS, taker: { side: SELL, limit: 99, lots: 50 }, filled: 8, reason: 'limit',
    events: [['fill', 11, 5, 99], ['fill', 12, 3, 99]], after: [[13, 98, 4], [14, 95, 10]],
  },
  {
    name: 'a limit that does not reach the best price fills nothing',
    book: ASKS, taker: { side: BUY, limit: 100, lots: 5 }, filled: 0, reason: 'limit', events: [],
    after: [[1, 101, 5], [2, 101, 3], [3, 102, 4], [4, 105, 10]],
  },
  {
    name: 'a market buy sweeps every ask level and reports no_liquidity when the side runs out',
    book: ASKS, taker: { side: BUY, limit: MARKET_BUY_LIMIT, lots: 100 }, filled: 22, reason: 'no_liquidity',
    events: [['fill', 1, 5, 101], ['fill', 2, 3, 101], ['fill', 3, 4, 102], ['fill', 4, 10, 105]], after: [],
  },
  {
    name: 'a market sell fills across levels until its size is done',
    book: BIDS, taker: { side: SELL, limit: MARKET_SELL_LIMIT, lots: 13 }, filled: 13, reason: 'filled',
    events: [['fill', 11, 5, 99], ['fill', 12, 3, 99], ['fill', 13, 4, 98], ['fill', 14, 1, 95]],
    after: [[14, 95, 9]],
  },
  {
    name: 'a market order against an empty side fills nothing and reports no_liquidity',
    book: BIDS, taker: { side: BUY, limit: MARKET_BUY_LIMIT, lots: 5 }, filled: 0, reason: 'no_liquidity',
    events: [], after: [[11, 99, 5], [12, 99, 3], [13, 98, 4], [14, 95, 10]],
  },
  {
    name: 'cancel_maker removes the own resting order and keeps matching behind it',
    book: ASKS, taker: { side: BUY, limit: 102, lots: 6, owner: 1, stp: 'cancel_maker' }, filled: 6,
    reason: 'filled', events: [['stp', 1], ['fill', 2, 3, 101], ['fill', 3, 3, 102]],
    after: [[3, 102, 1], [4, 105, 10]],
  },
  {
    name: 'cancel_maker removes several own orders across levels',
    book: [[1, 7, SELL, 101, 5], [2, 7, SELL, 102, 3], [3, 8, SELL, 103, 4]],
    taker: { side: BUY, limit: 103, lots: 2, owner: 7, stp: 'cancel_maker' }, filled: 2, reason: 'filled',
    events: [['stp', 1], ['stp', 2], ['fill', 3, 2, 103]], after: [[3, 103, 2]],
  },
  {
    name: 'cancel_taker stops before the own resting order and leaves it in place',
    book: ASKS, taker: { side: BUY, limit: 105, lots: 20, owner: 3, stp: 'cancel_taker' }, filled: 8,
    reason: 'self_trade', events: [['fill', 1, 5, 101], ['fill', 2, 3, 101]],
    after: [[3, 102, 4], [4, 105, 10]],
  },
  {
    name: 'cancel_both removes the own resting order and stops',
    book: ASKS, taker: { side: BUY, limit: 105, lots: 20, owner: 2, stp: 'cancel_both' }, filled: 5,
    reason: 'self_trade', events: [['fill', 1, 5, 101], ['stp', 2]], after: [[3, 102, 4], [4, 105, 10]],
  },
  {
    name: 'a taker filled exactly before an own order reports filled, not self_trade',
    book: ASKS, taker: { side: BUY, limit: 105, lots: 5, owner: 2, stp: 'cancel_taker' }, filled: 5,
    reason: 'filled', events: [['fill', 1, 5, 101]], after: [[2, 101, 3], [3, 102, 4], [4, 105, 10]],
  },
  {
    name: 'an own order beyond the limit does not trigger self-trade prevention',
    book: ASKS, taker: { side: BUY, limit: 101, lots: 20, owner: 3, stp: 'cancel_both' }, filled: 8,
    reason: 'limit', events: [['fill', 1, 5, 101], ['fill', 2, 3, 101]], after: [[3, 102, 4], [4, 105, 10]],
  },
];

for (const [implName, make] of IMPLS) {
  describe(`${implName} matching`, () => {
    for (const c of MATCH_CASES) {
      test(c.name, () => {
        const b = bookWith(make, c.book);
        const { side, limit, lots, owner = 999, stp = 'cancel_taker' } = c.taker;
        const fillable = b.fillableLots(side, limit, lots, owner, stp);
        const rec = new Recorder();
        const filled = b.match(side, limit, lots, owner, stp, rec);
        assert.equal(filled, c.filled);
        assert.equal(fillable, filled, 'fillableLots agrees with match');
        assert.equal(b.lastStopReason, c.reason);
        assert.deepEqual(rec.events, c.events);
        assert.deepEqual(resting(b), c.after);
        check(b);
      });
    }
  });

  describe(`${implName} cancel`, () => {
    const CANCELS: [string, number, number[][]][] = [
      ['cancelling the head of a level lets the next order trade first', 1, [[2, 101, 3], [3, 101, 4]]],
      ['cancelling the middle of a level keeps the others in order', 2, [[1, 101, 5], [3, 101, 4]]],
      ['cancelling the tail of a level keeps the others in order', 3, [[1, 101, 5], [2, 101, 3]]],
    ];
    for (const [name, id, left] of CANCELS) {
      test(name, () => {
        const b = bookWith(make, LEVEL);
        assert.equal(b.cancel(id)?.id, id);
        assert.equal(b.levelLots(SELL, 101), left.reduce((s, r) => s + (r[2] as number), 0));
        const rec = new Recorder();
        b.match(BUY, 101, 100, 0, 'cancel_taker', rec);
        assert.deepEqual(rec.events, left.map((r) => ['fill', r[0], r[2], 101]));
        check(b);
      });
    }

    test('cancelling the only order of the best level removes the level and moves the best price', () => {
      const b = bookWith(make, [
        [1, 1, SELL, 101, 5], [2, 2, SELL, 104, 3], [3, 3, BUY, 99, 2], [4, 4, BUY, 97, 1],
      ]);
      assert.equal(b.levelCount(SELL), 2);
      b.cancel(1);
      assert.equal(b.bestAsk(), 104);
      assert.equal(b.levelCount(SELL), 1);
      assert.equal(b.levelLots(SELL, 101), 0);
      b.cancel(3);
      assert.equal(b.bestBid(), 97);
      b.cancel(4);
      b.cancel(2);
      assert.ok(Number.isNaN(b.bestBid()) && Number.isNaN(b.bestAsk()), 'empty sides report NaN');
      assert.equal(b.orderCount(), 0);
      check(b);
    });

    test('a fill that empties the best level moves the best price to the next level', () => {
      const b = bookWith(make, ASKS);
      b.match(BUY, 101, 8, 0, 'cancel_taker', new Recorder());
      assert.equal(b.bestAsk(), 102);
      assert.equal(b.levelCount(SELL), 2);
      check(b);
    });

    test('cancel of an unknown or already cancelled id returns undefined and changes nothing', () => {
      const b = bookWith(make, LEVEL);
      assert.equal(b.cancel(42), undefined);
      assert.equal(b.cancel(2)?.remainingLots, 3);
      assert.equal(b.cancel(2), undefined);
      assert.equal(b.get(2), undefined);
      assert.equal(b.orderCount(), 3);
      check(b);
    });

    test('a filled maker is no longer resting and cannot be cancelled', () => {
      const b = bookWith(make, LEVEL);
      b.match(BUY, 101, 5, 0, 'cancel_taker', new Recorder());
      assert.equal(b.get(1), undefined);
      assert.equal(b.cancel(1), undefined);
    });

  });

  describe(`${implName} reduce`, () => {
    test('reduce keeps time priority and lowers the level total', () => {
      const b = bookWith(make, LEVEL);
      b.reduce(1, 2);
      assert.equal(b.get(1)?.remainingLots, 2);
      assert.equal(b.levelLots(SELL, 101), 9);
      const rec = new Recorder();
      b.match(BUY, 101, 3, 0, 'cancel_taker', rec);
      assert.deepEqual(rec.events, [['fill', 1, 2, 101], ['fill', 2, 1, 101]]);
      check(b);
    });

    const BAD_REDUCES: [string, number, number][] = [
      ['reduce to zero throws', 1, 0],
      ['reduce to the same size throws', 1, 5],
      ['reduce upward throws', 1, 6],
      ['reduce of an unknown id throws', 42, 1], ['reduce to a fractional size throws', 1, 1.5],
    ];
    for (const [name, id, lots] of BAD_REDUCES) {
      test(name, () => {
        const b = bookWith(make, LEVEL);
        assert.throws(() => b.reduce(id, lots), InvariantError);
        assert.equal(b.levelLots(SELL, 101), 12);
      });
    }

  });

  describe(`${implName} crossing checks and queries`, () => {
    const CROSS: [string, Side, number, boolean][] = [
      ['a buy at the best ask would cross', BUY, 101, true],
      ['a buy above the best ask would cross', BUY, 150, true],
      ['a buy below the best ask would not cross', BUY, 100, false],
      ['a sell at the best bid would cross', SELL, 99, true],
      ['a sell below the best bid would cross', SELL, 1, true],
      ['a sell above the best bid would not cross', SELL, 100, false],
    ];
    for (const [name, side, price, crosses] of CROSS) {
      test(`wouldCross: ${name}`, () => {
        const b = bookWith(make, [[1, 1, SELL, 101, 5], [2, 2, BUY, 99, 5]]);
        assert.equal(b.wouldCross(side, price), crosses);
        if (crosses) assert.throws(() => b.rest(new BookOrder(3, 3, side, price, 1)), InvariantError);
        else b.rest(new BookOrder(3, 3, side, price, 1));
        check(b);
      });
    }

    test('wouldCross is false against an empty side', () => {
      const b = make();
      assert.equal(b.wouldCross(BUY, 1_000_000), false);
      assert.equal(b.wouldCross(SELL, 1), false);
    });

    const BAD_RESTS: [string, BookOrder][] = [
      ['rest of a duplicate id throws', new BookOrder(1, 5, BUY, 90, 1)],
      ['rest of zero lots throws', new BookOrder(7, 5, BUY, 90, 0)],
      ['rest at a zero price throws', new BookOrder(7, 5, BUY, 0, 1)],
      ['rest at a fractional price throws', new BookOrder(7, 5, BUY, 90.5, 1)],
    ];
    for (const [name, order] of BAD_RESTS) {
      test(name, () => {
        const b = bookWith(make, LEVEL);
        assert.throws(() => b.rest(order), InvariantError);
        assert.equal(b.orderCount(), 4);
      });
    }

    test('depth writes price and lots pairs best first and stops at maxLevels', () => {
      const b = bookWith(make, [...ASKS, ...BIDS]);
      const out = [-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 7, 7];
      assert.equal(b.depth(SELL, 10, out), 3);
      assert.deepEqual(out, [101, 8, 102, 4, 105, 10, -1, -1, -1, -1, 7, 7]);
      assert.equal(b.depth(BUY, 2, out), 2);
      assert.deepEqual(out.slice(0, 4), [99, 8, 98, 4]);
      assert.equal(b.depth(BUY, 0, out), 0);
      assert.equal(make().depth(SELL, 5, out), 0);
    });

    test('forEachResting lists bids best first, then asks best first', () => {
      const b = bookWith(make, [
        [5, 1, BUY, 97, 1], [6, 1, SELL, 103, 1], [7, 1, BUY, 98, 1], [8, 1, SELL, 102, 1],
      ]);
      assert.deepEqual(resting(b).map((r) => r[0]), [7, 5, 8, 6]);
    });

    test('seq increases with every rest and orders keep it through reduce', () => {
      const b = bookWith(make, LEVEL);
      const seqs = [1, 2, 3, 9].map((id) => b.get(id)?.seq ?? 0);
      assert.ok(seqs.every((s, i) => s > 0 && (i === 0 || s > (seqs[i - 1] as number))));
      b.reduce(3, 1);
      assert.equal(b.get(3)?.seq, seqs[2]);
    });
  });
}

describe('OrderBook structure', () => {
  test('levels are reused after they empty and the book stays consistent', () => {
    const b = new OrderBook();
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 200; i++) {
        b.rest(new BookOrder(round * 1000 + i, i, SELL, 1000 + ((i * 37) % 200), 1 + i));
      }
      b.checkInvariants();
      assert.equal(b.levelCount(SELL), 200);
      for (let i = 0; i < 200; i += 2) b.cancel(round * 1000 + i);
      b.checkInvariants();
      b.match(BUY, MARKET_BUY_LIMIT, 1_000_000, -1, 'cancel_taker', new Recorder());
      assert.equal(b.levelCount(SELL), 0);
      b.checkInvariants();
    }
  });

  test('ascending, descending and interleaved price inserts keep the tree balanced and ordered', () => {
    const b = new OrderBook();
    const naive = new NaiveBook();
    const both = (id: number, side: Side, price: number): void => {
      b.rest(new BookOrder(id, 0, side, price, 1 + (id % 5)));
      naive.rest(new BookOrder(id, 0, side, price, 1 + (id % 5)));
    };
    let id = 1;
    for (let p = 1; p <= 300; p++) both(id++, BUY, p);
    for (let p = 2000; p > 1700; p--) both(id++, SELL, p);
    for (let p = 301; p < 1700; p += 7) {
      const buy = p < 1000 && p % 2 === 0;
      both(id++, buy ? BUY : SELL, buy ? p : p + 1500);
    }
    b.checkInvariants();
    for (let i = 1; i < id; i += 3) assert.equal(b.cancel(i)?.id, naive.cancel(i)?.id);
    b.checkInvariants();
    for (const side of [BUY, SELL] as const) {
      const got: number[] = [];
      const want: number[] = [];
      assert.equal(b.depth(side, 1000, got), naive.depth(side, 1000, want));
      assert.deepEqual(got, want);
    }
  });

});

describe('a maker the sink refuses', () => {
  for (const [name, make] of IMPLS) {
    test(`${name}: is removed unfilled, reported as refused, and the match goes on past it; fillableLots agrees`, () => {
      const b = bookWith(make, ASKS);
      const admits = (maker: BookOrder) => maker.id !== 2 && maker.id !== 3;
      assert.equal(b.fillableLots(BUY, 102, 100, 0, 'cancel_taker', admits), 5);
      assert.equal(b.fillableLots(BUY, 105, 100, 0, 'cancel_taker', admits), 15);
      assert.equal(b.fillableLots(BUY, 105, 100, 0, 'cancel_taker'), 22, 'without the question every maker counts');
      const events: (string | number)[][] = [];
      const sink: MatchSink = {
        admits,
        onFill(maker, lots) { events.push(['fill', maker.id, lots]); },
        onMakerCancelled(maker, why) { events.push([why, maker.id]); },
      };
      assert.equal(b.match(BUY, 105, 12, 0, 'cancel_taker', sink), 12);
      assert.deepEqual(events, [['fill', 1, 5], ['refused', 2], ['refused', 3], ['fill', 4, 7]]);
      assert.deepEqual(resting(b), [[4, 105, 3]]);
      check(b);
    });
  }
});

describe('OrderBook guards', () => {
  test('a sink may cancel another resting order during match', () => {
    const b = bookWith(() => new OrderBook(), ASKS) as OrderBook;
    const sink: MatchSink = {
      onFill(maker) { if (maker.id === 1) b.cancel(3); },
      onMakerCancelled() {},
    };
    assert.equal(b.match(BUY, MARKET_BUY_LIMIT, 100, 0, 'cancel_taker', sink), 18);
    assert.equal(b.lastStopReason, 'no_liquidity');
    b.checkInvariants();
  });

  test('a sink that calls rest() or match() during match is refused', () => {
    const b = bookWith(() => new OrderBook(), ASKS) as OrderBook;
    const sink: MatchSink = {
      onFill() { b.rest(new BookOrder(50, 0, BUY, 90, 1)); },
      onMakerCancelled() {},
    };
    assert.throws(() => b.match(BUY, 101, 1, 0, 'cancel_taker', sink), InvariantError);
    const again: MatchSink = {
      onFill() { b.match(BUY, 101, 1, 0, 'cancel_taker', again); },
      onMakerCancelled() {},
    };
    assert.throws(() => b.match(BUY, 101, 1, 0, 'cancel_taker', again), InvariantError);
    b.checkInvariants();
  });

  test('match refuses a NaN limit and non-positive lots', () => {
    const b = bookWith(() => new OrderBook(), ASKS) as OrderBook;
    assert.throws(() => b.match(BUY, NaN, 1, 0, 'cancel_taker', new Recorder()), InvariantError);
    assert.throws(() => b.match(BUY, 101, 0, 0, 'cancel_taker', new Recorder()), InvariantError);
    assert.equal(b.orderCount(), 4);
  });

  test('engines can subclass BookOrder and get their own objects back in callbacks', () => {
    class EngineOrder extends BookOrder { clientId = 'abc'; }
    const b = new OrderBook();
    b.rest(new EngineOrder(1, 1, SELL, 10, 2));
    let seen = '';
    b.match(BUY, 10, 1, 2, 'cancel_taker', {
      onFill(maker) { seen = (maker as EngineOrder).clientId; }, onMakerCancelled() {},
    });
    assert.equal(seen, 'abc');
  });
});

describe('reinstate (an amend refused after its order left the book)', () => {
  for (const [position, id] of [['head', 1], ['middle', 2], ['tail', 3], ['alone at its price', 9]] as const) {
    test(`puts the order back at its old place: ${position}`, () => {
      const b = bookWith(() => new OrderBook(), LEVEL) as OrderBook;
      const before = resting(b);
      const order = b.get(id)!;
      const { seq, next } = order;
      b.cancel(id);
      b.reinstate(order, seq, next);
      b.checkInvariants();
      assert.deepEqual(resting(b), before);
      assert.equal(order.seq, seq);
      const r = new Recorder();
      b.match(BUY, 103, 13, 0, 'cancel_maker', r);
      assert.deepEqual(r.events.map((e) => e[1]), [1, 2, 3, 9], 'time priority is the old one');
    });
  }
});
