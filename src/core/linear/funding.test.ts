/**
 * Perpetual funding, table-driven and exact (research/mechanics.md 1.3; funding.ts):
 *   - `intervalRate` against hand-computed rates: F8h = P̄ + clamp(I − P̄, ±0.05 %), scaled to the
 *     interval, capped at 0.75 × (IMR − MMR) of the first tier and at 4 % per hour;
 *   - premium samples taken from a real book on 5-second clock ticks and averaged over the hour,
 *     paid at the funding time on each position's size at the index (longs pay when positive);
 *   - zero-sum: every `funding` transaction balances, payers round up and receivers down, and the
 *     residue lands in the insurance fund; entries are on the accounts' `perps` bucket;
 *   - only positions open at the funding time pay; isolated margin absorbs the payment;
 *   - the predicted rate and the next funding time (what market stats show).
 * Every command runs through `Exchange.execute` with an explicit time: an hour takes milliseconds.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coreConfig } from '../../config/core.ts';
import { perpSpec, UNDERLYINGS } from '../../config/markets.ts';
import type { Command } from '../commands.ts';
import { Exchange, type CoreConfig } from '../exchange.ts';
import { systemAccount, type LedgerEntry } from '../ledger/ledger.ts';
import { fx, type Fixed } from '../money.ts';
import type { PlaceResult } from './engine.ts';
import { FundingState, intervalRate, nextFundingTime } from './funding.ts';
import { LinearMarket } from './market.ts';
import type { OrderRequest } from './order.ts';

const HOUR = 3_600_000;
const MINUTE = 60_000;
/** A funding boundary (10:00 UTC); ticks start here so an interval holds exactly 720 samples. */
const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const settings = coreConfig({ depositConfirmations: 1 }).linear.lifecycle.funding;
const btc = UNDERLYINGS.find((u) => u.symbol === 'BTC')!;
const eth = UNDERLYINGS.find((u) => u.symbol === 'ETH')!;

class World {
  readonly ex: Exchange;
  now = T0 - 10 * MINUTE;
  readonly funding: LedgerEntry[] = [];

  constructor(intervalMs = HOUR, patch: (c: CoreConfig) => CoreConfig = (c) => c) {
    const config = coreConfig({
      depositConfirmations: 1, indexMaxAgeMs: 6 * HOUR, fundingIntervalMs: intervalMs,
    });
    this.ex = new Exchange(patch(config));
  }

  run(c: Command, at = this.now) {
    this.now = Math.max(this.now, at);
    const out = this.ex.execute(c, this.now);
    for (const [asset, sum] of this.ex.ledger.totalsByAsset()) assert.equal(sum, 0n, `unbalanced ${asset}`);
    assert.deepEqual(this.ex.ledger.negativeUserAccounts(), []);
    if (out.ok) {
      const txs = new Map<number, Fixed>();
      for (const e of out.events) {
        if (e.type !== 'ledger' || e.entry.type !== 'funding') continue;
        this.funding.push(e.entry);
        txs.set(e.entry.txId, (txs.get(e.entry.txId) ?? 0n) + e.entry.amount);
      }
      for (const [tx, sum] of txs) assert.equal(sum, 0n, `funding tx ${tx} is not zero-sum`);
    }
    return out;
  }

  ok(c: Command, at?: number) {
    const out = this.run(c, at);
    assert.ok(out.ok, `command ${c.type} refused: ${!out.ok ? `${out.code} ${out.message}` : ''}`);
    return out.result;
  }

  id(n: number): number {
    return this.ex.accounts.find(addr(n))!.id;
  }

  fund(n: number, perps = '1000000') {
    const amount = fx(perps);
    const account = addr(n);
    this.ok({ type: 'chain.deposit_observed', txHash: `0xd${n}`, account, amount, confirmations: 1 });
    this.ok({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount });
  }

  index(price: string, at?: number) {
    this.ok({ type: 'index.publish', underlying: 'BTC', price: fx(price), sourceTs: at ?? this.now }, at);
  }

  order(
    n: number, side: 'buy' | 'sell', qty: string, price: string | null, extra: Partial<OrderRequest> = {},
  ) {
    const request: OrderRequest = {
      marketId: 'BTC-PERP', side: side === 'buy' ? 0 : 1, type: price === null ? 'market' : 'limit',
      quantity: fx(qty), price: price === null ? null : fx(price),
      timeInForce: price === null ? 'ioc' : 'gtc',
      postOnly: false, reduceOnly: false, marginMode: 'cross', clientOrderId: null, stopPrice: null,
      takeProfitPrice: null, stopLossPrice: null, selfTradePrevention: 'cancel_maker', quoteId: null,
      ...extra,
    };
    return this.ok({ type: 'perp.place', account: addr(n), request }) as PlaceResult;
  }

  /** `maker` rests `qty` at `price`, `taker` takes it: taker opens `side`, maker the other side. */
  trade(
    taker: number, maker: number, side: 'buy' | 'sell', qty: string, price = '100000',
    mode: 'cross' | 'isolated' = 'cross',
  ) {
    this.order(maker, side === 'buy' ? 'sell' : 'buy', qty, price);
    const placed = this.order(taker, side, qty, null, { marginMode: mode });
    assert.equal(placed.order.status, 'filled');
  }

  cancelAll(n: number) {
    this.ok({ type: 'perp.cancel_all', account: addr(n), filter: {} });
  }

  /** Ticks every 5 s from `from` (inclusive) to `to` (exclusive). */
  ticks(from: number, to: number) {
    for (let t = from; t < to; t += 5000) this.ok({ type: 'clock.tick' }, t);
  }

  tick(at: number) {
    this.ok({ type: 'clock.tick' }, at);
  }

  perps(n: number): Fixed {
    return this.ex.ledger.userBalance(this.id(n), 'perps', 'USDC');
  }

  /** Funding amounts booked to account `n` (signed, oldest first). */
  paid(n: number): Fixed[] {
    const id = this.id(n);
    const mine = this.funding.filter((e) => e.account.kind === 'user' && e.account.accountId === id);
    return mine.map((e) => e.amount);
  }

  insurance(): Fixed {
    return this.ex.ledger.balance(systemAccount('insurance', 'USDC'));
  }

  market() {
    return this.ex.linear.markets.get('BTC-PERP')!;
  }

  position(n: number, mode: 'cross' | 'isolated' = 'cross') {
    return this.ex.linear.findAccount(this.id(n))?.position(this.market(), mode);
  }
}

describe('the interval rate against hand computations', () => {
  // I = 0.0001 per 8 h, clamp 0.0005; BTC first tier 50x: IMR 0.02, MMR 0.01, cap 0.0075 per
  // interval; ETH 25x: cap 0.015. The 4 %/h cap binds only for short intervals (below 675 s here).
  // [name, premium samples, interval, expected rate per interval, market (default BTC)]
  const rows: [string, string[], number, string, typeof btc?][] = [
    ['no samples: interest only', [], HOUR, '0.0000125'],
    ['zero premium: interest only', ['0'], HOUR, '0.0000125'],
    ['premium within the clamp: interest only', ['0.0003'], HOUR, '0.0000125'],
    ['premium at the upper clamp edge', ['0.0006'], HOUR, '0.0000125'],
    ['premium above the clamp (worked example)', ['0.001'], HOUR, '0.0000625'],
    ['premium at the lower clamp edge', ['-0.0004'], HOUR, '0.0000125'],
    ['negative premium: shorts pay', ['-0.001'], HOUR, '-0.0000625'],
    ['negative premium past the clamp', ['-0.0006'], HOUR, '-0.0000125'],
    ['samples are averaged', ['0.002', '0', '0.001', '0.001'], HOUR, '0.0000625'],
    ['large premium below the margin cap', ['0.05'], HOUR, '0.0061875'],
    ['margin cap 0.75 x (IMR - MMR)', ['0.07'], HOUR, '0.0075'],
    ['margin cap, negative', ['-0.07'], HOUR, '-0.0075'],
    ['margin cap over an 8 h interval', ['0.01'], 8 * HOUR, '0.0075'],
    ['a 2 h interval scales the rate', ['0.01'], 2 * HOUR, '0.002375'],
    ['ETH margin cap (25x)', ['0.15'], HOUR, '0.015', eth],
    ['ETH below its cap', ['0.1'], HOUR, '0.0124375', eth],
    // 0.4995 / 480 = 0.00104 > 4 % × 1/60 = 0.000666…: the hourly cap binds (floored at 18 digits).
    ['hourly cap 4 % on a 1-minute interval', ['0.5'], MINUTE, '0.000666666666666666'],
    ['hourly cap, negative', ['-0.5'], MINUTE, '-0.000666666666666666'],
    // 0.0005 / 480, half up at 18 digits.
    ['1-minute interval below the cap', ['0.001'], MINUTE, '0.000001041666666667'],
  ];
  for (const [name, samples, intervalMs, rate, spec] of rows) {
    test(name, () => {
      const market = new LinearMarket(perpSpec(spec ?? btc));
      const state = new FundingState();
      for (const p of samples) {
        state.premiumSum += fx(p);
        state.samples++;
      }
      assert.equal(intervalRate(state, market, { ...settings, intervalMs }), fx(rate));
    });
  }

  test('the next funding time is the next multiple of the interval', () => {
    assert.equal(nextFundingTime(T0, HOUR), T0 + HOUR);
    assert.equal(nextFundingTime(T0 + HOUR - 1, HOUR), T0 + HOUR);
    assert.equal(nextFundingTime(T0 + 1, 8 * HOUR), Date.UTC(2026, 10, 23, 16, 0, 0));
  });
});

describe('premium sampled from the book, paid at the funding time', () => {
  // Index 100 000, impact notional 20 000 USDC: 0.5 BTC per level covers it, so the impact
  // price is the level price. A long (account 2) and a short (account 1) of 1 BTC each; the
  // book of account 3 stays the whole hour. Payment of the long = −rate × 100 000.
  const rows: {
    name: string;
    bids: string[];
    asks: string[];
    /** Book from the half hour on (averaging). */
    later?: { bids: string[]; asks: string[] };
    intervalMs?: number;
    longPays: string;
  }[] = [
    { name: 'index inside the impact spread: interest', bids: ['99990'], asks: ['100010'], longPays: '1.25' },
    { name: 'empty book: premium 0', bids: [], asks: [], longPays: '1.25' },
    { name: 'one side empty: premium 0', bids: ['100100'], asks: [], longPays: '1.25' },
    { name: 'rich bids: longs pay shorts', bids: ['100100'], asks: ['100300'], longPays: '6.25' },
    { name: 'cheap asks: shorts pay longs', bids: ['99700'], asks: ['99900'], longPays: '-6.25' },
    {
      name: 'samples are averaged over the hour (0.2 % then 0)',
      bids: ['100200'], asks: ['100400'], later: { bids: ['99990'], asks: ['100010'] }, longPays: '6.25',
    },
    // P = 4 %: F8h = 3.95 %, 2 h ⇒ 0.9875 % > cap 0.75 % ⇒ 750 USDC on 100 000.
    {
      name: 'capped at 0.75 x (IMR - MMR) on a 2 h interval',
      bids: ['104000'], asks: ['104200'], intervalMs: 2 * HOUR, longPays: '750',
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const interval = row.intervalMs ?? HOUR;
      const w = new World(interval);
      w.index('100000');
      for (const n of [1, 2, 3]) w.fund(n);
      w.trade(2, 1, 'buy', '1');
      const book = (b: { bids: string[]; asks: string[] }) => {
        for (const p of b.bids) w.order(3, 'buy', '0.5', p);
        for (const p of b.asks) w.order(3, 'sell', '0.5', p);
      };
      book(row);
      const start = T0;
      if (row.later === undefined) w.ticks(start, start + interval);
      else {
        w.ticks(start, start + interval / 2);
        w.cancelAll(3);
        book(row.later);
        w.ticks(start + interval / 2, start + interval);
      }
      assert.deepEqual(w.paid(2), [], 'nothing is paid before the funding time');
      const fundBefore = w.insurance();
      w.tick(start + interval);
      const pays = fx(row.longPays);
      assert.deepEqual(w.paid(2), [-pays], 'the long pays (or receives) rate × index × size');
      assert.deepEqual(w.paid(1), [pays], 'the short receives (or pays) the same');
      assert.deepEqual(w.paid(3), [], 'resting orders without a position pay nothing');
      assert.equal(w.insurance(), fundBefore, 'exact amounts leave no residue');
      assert.equal(w.position(2)!.funding, -pays);
      assert.equal(w.position(1)!.funding, pays);
      for (const e of w.funding) {
        assert.equal(e.type, 'funding');
        assert.equal(e.ref, 'BTC-PERP');
        assert.equal(e.at, start + interval);
        if (e.account.kind === 'user') assert.equal(e.account.bucket, 'perps');
      }
    });
  }
});

describe('funding across a gap', () => {
  // Rich bids through the first hour: premium 0.2 %, the long pays 6.25 at 11:00. The last index
  // is published at 10:30, so from 10:50 on nothing is sampled.
  function sampledHour(): World {
    const w = new World(HOUR, (c) => ({ ...c, index: { ...c.index, maxAgeMs: 20 * MINUTE } }));
    w.index('100000');
    for (const n of [1, 2, 3]) w.fund(n);
    w.trade(2, 1, 'buy', '1');
    w.order(3, 'buy', '0.5', '100100');
    w.order(3, 'sell', '0.5', '100300');
    for (let t = T0; t < T0 + HOUR; t += 5000) {
      if (t % (10 * MINUTE) === 0 && t <= T0 + 30 * MINUTE) w.index('100000', t);
      w.tick(t);
    }
    return w;
  }

  test('an interval nobody sampled pays the interest rate alone, not the last sampled interval\'s premium again', () => {
    const w = sampledHour();
    w.tick(T0 + HOUR);
    assert.deepEqual(w.paid(2), [], 'no fresh index at 11:00: no funding on an invented price');
    // No tick from 11:00 to 12:00 (the feed and the venue were down); the index returns at 12:00.
    w.index('100000', T0 + 2 * HOUR - 1);
    w.tick(T0 + 2 * HOUR);
    assert.deepEqual(w.paid(2), [fx('-1.25')], 'interest only for 11:00–12:00 (before: 6.25, the 10:00 samples\' premium); the unpaid 11:00 funding time is dropped at 12:00');
  });

  /**
   * The sampled hour with the index fresh for 10 s after each publication; the service goes down at
   * 10:59:40 and is back at 11:00:30, where its first tick comes before the feed's first price.
   */
  function restartAcrossFundingTime(): World {
    const w = new World(HOUR, (c) => ({ ...c, index: { ...c.index, maxAgeMs: 10_000 } }));
    w.index('100000');
    for (const n of [1, 2, 3]) w.fund(n);
    w.trade(2, 1, 'buy', '1');
    w.order(3, 'buy', '0.5', '100100');
    w.order(3, 'sell', '0.5', '100300');
    for (let t = T0; t <= T0 + HOUR - 20_000; t += 5000) {
      w.index('100000', t);
      w.tick(t);
    }
    w.tick(T0 + HOUR + 30_000);
    return w;
  }

  test('a restart across the funding time: the payment waits for the index to return, then is paid once', () => {
    const w = restartAcrossFundingTime();
    assert.deepEqual(w.paid(2), [], 'not on the stale index');
    w.index('100000', T0 + HOUR + 30_500);
    w.tick(T0 + HOUR + 31_000);
    // Before: nothing, the 11:00 funding time was passed over on the stale tick and never paid.
    assert.deepEqual(w.paid(2), [fx('-6.25')], 'the 10:00 hour\'s premium, as without the restart');
    w.index('100000', T0 + HOUR + 35_000);
    w.tick(T0 + HOUR + 36_000);
    assert.equal(w.paid(2).length, 1, 'paid once');
  });

  test('a payment waiting for the index is dropped once a position changes: it is owed by the positions held at the funding time', () => {
    const w = restartAcrossFundingTime();
    // While the index is stale a reduce-only order still trades: the long sells half into account 3's bid.
    const closed = w.order(2, 'sell', '0.5', null, { reduceOnly: true });
    assert.equal(closed.order.status, 'filled');
    w.index('100000', T0 + HOUR + 30_500);
    w.tick(T0 + HOUR + 31_000);
    assert.equal(w.funding.length, 0, 'not charged on a size nobody held at 11:00, nor to account 3 who bought after it');
  });

  test('funding times the venue was down for are skipped, not paid late to whoever holds a position then', () => {
    const w = sampledHour();
    // The tick at 11:00 never came: the next one is at 13:30, after a restart, and positions can
    // trade before it. Before: the 10:00 hour was charged then, at 13:30's index and positions.
    w.index('100000', T0 + 3.5 * HOUR);
    w.trade(2, 1, 'sell', '0.5', '100000'); // the long halves its position before the first tick
    w.tick(T0 + 3.5 * HOUR);
    assert.equal(w.funding.length, 0, 'nothing paid for 11:00, 12:00 or 13:00');
    // The venue ticks on: 13:30–14:00 is sampled, and paid at 14:00.
    for (let t = T0 + 3.5 * HOUR + 5000; t <= T0 + 4 * HOUR; t += 5000) {
      if (t % (10 * MINUTE) === 0) w.index('100000', t);
      w.tick(t);
    }
    assert.equal(w.paid(2).length, 1, 'the next funding time is paid as usual');
    assert.deepEqual([...new Set(w.funding.map((e) => e.at))], [T0 + 4 * HOUR]);
  });
});

describe('settlement of funding', () => {
  test('payers round up, receivers down; the residue goes to the insurance fund', () => {
    const w = new World();
    w.index('99999.9'); // Δindex = 0.0000125 × 99 999.9 = 1.24999875 per BTC
    for (const n of [1, 2, 4, 5]) w.fund(n);
    for (const n of [2, 4, 5]) w.trade(n, 1, 'buy', '0.0001');
    w.ticks(T0, T0 + HOUR);
    const fundBefore = w.insurance();
    w.tick(T0 + HOUR);
    // Each long owes 0.000124999875 → pays 0.000125; the short is owed 0.000374999625 → gets 0.000374.
    for (const n of [2, 4, 5]) assert.deepEqual(w.paid(n), [fx('-0.000125')]);
    assert.deepEqual(w.paid(1), [fx('0.000374')]);
    assert.equal(w.insurance() - fundBefore, fx('0.000001'));
    const residue = w.funding.filter((e) => e.account.kind === 'system');
    assert.equal(residue.length, 1);
    assert.equal(residue[0]!.account.kind === 'system' && residue[0]!.account.name, 'insurance');
    assert.equal(w.market().fundingIndex, fx('1.24999875'));
  });

  test('only positions open at the funding time pay, each from when it opened', () => {
    const w = new World();
    w.index('100000');
    for (const n of [1, 2, 4, 5, 6]) w.fund(n);
    w.trade(2, 1, 'buy', '1'); // held through both funding times
    w.trade(4, 1, 'buy', '1'); // closed between the two
    w.ticks(T0, T0 + 30 * MINUTE);
    w.trade(5, 1, 'buy', '1'); // opened inside the first interval: pays at the first time
    w.ticks(T0 + 30 * MINUTE, T0 + HOUR + 5000);
    assert.equal(w.paid(2).length, 1);
    assert.deepEqual(w.paid(4), [fx('-1.25')]);
    assert.deepEqual(w.paid(5), [fx('-1.25')]);
    w.trade(4, 6, 'sell', '1'); // account 4 closes against account 6, who is then long
    w.trade(1, 2, 'buy', '0.5'); // account 2 sells half its long to account 1 (short 3 → 2.5)
    w.ticks(T0 + HOUR + 5000, T0 + 2 * HOUR + 5000);
    assert.deepEqual(w.paid(4), [fx('-1.25')], 'a position closed before the funding time pays nothing more');
    assert.deepEqual(w.paid(6), [fx('-1.25')], 'opened after the first funding time: pays only the second');
    assert.deepEqual(w.paid(2), [fx('-1.25'), fx('-0.625')], 'the second payment is on the reduced size');
    assert.deepEqual(w.paid(5), [fx('-1.25'), fx('-1.25')]);
    // Account 1: short 3 at the first time, short 2.5 (3 − 0.5 bought) at the second.
    assert.deepEqual(w.paid(1), [fx('3.75'), fx('3.125')]);
  });

  test('a position opened and closed between two funding times pays nothing', () => {
    const w = new World();
    w.index('100000');
    for (const n of [1, 2, 3]) w.fund(n);
    w.ticks(T0, T0 + 10 * MINUTE);
    w.trade(2, 1, 'buy', '1');
    w.ticks(T0 + 10 * MINUTE, T0 + 20 * MINUTE);
    w.trade(2, 3, 'sell', '1');
    w.trade(1, 3, 'buy', '1');
    w.ticks(T0 + 20 * MINUTE, T0 + HOUR + 5000);
    assert.equal(w.funding.length, 0);
    assert.equal(w.market().fundingIndex, fx('1.25'), 'the index moved; no position was open');
  });

  test('isolated margin absorbs funding; the position view shows it', () => {
    const w = new World();
    w.index('100000');
    for (const n of [1, 2, 3]) w.fund(n);
    w.trade(2, 1, 'buy', '1', '100000', 'isolated');
    w.order(3, 'buy', '0.5', '100100');
    w.order(3, 'sell', '0.5', '100300');
    const p = w.position(2, 'isolated')!;
    const margin = p.isolatedMargin;
    assert.equal(margin, fx('2000'), 'initial margin of 1 BTC at 50x (the opening fee came out of the cross pool)');
    const cash = w.perps(2);
    w.ticks(T0, T0 + HOUR + 5000);
    assert.equal(p.isolatedMargin, margin - fx('6.25'));
    assert.equal(w.perps(2), cash - fx('6.25'));
    assert.equal(p.funding, fx('-6.25'));
    const entry = w.funding.find((e) => e.account.kind === 'user' && e.account.accountId === w.id(2))!;
    assert.equal(entry.account.kind === 'user' && entry.account.bucket, 'perps');
  });

  test('the predicted rate follows the samples so far; the next funding time is the next boundary', () => {
    const w = new World();
    w.index('100000');
    for (const n of [1, 2, 3]) w.fund(n);
    w.trade(2, 1, 'buy', '1');
    w.ticks(T0, T0 + 30 * MINUTE);
    const flat = w.ex.lifecycle.fundingInfo(w.market(), w.now)!;
    assert.equal(flat.rate, fx('0.0000125'));
    assert.equal(flat.nextFundingAt, T0 + HOUR);
    w.order(3, 'buy', '0.5', '100200');
    w.order(3, 'sell', '0.5', '100400');
    w.ticks(T0 + 30 * MINUTE, T0 + HOUR);
    // 360 samples at 0 and 360 at 0.002: mean 0.001 ⇒ 0.0000625 per hour.
    assert.equal(w.ex.lifecycle.fundingInfo(w.market(), w.now)!.rate, fx('0.0000625'));
    w.tick(T0 + HOUR);
    assert.deepEqual(w.paid(2), [fx('-6.25')]);
    assert.equal(w.ex.lifecycle.fundingInfo(w.market(), w.now)!.nextFundingAt, T0 + 2 * HOUR);
  });

  test('no funding without a fresh index, and none on an invented price', () => {
    const w = new World(HOUR, (c) => ({ ...c, index: { ...c.index, maxAgeMs: 20 * MINUTE } }));
    w.index('100000');
    for (const n of [1, 2]) w.fund(n);
    w.trade(2, 1, 'buy', '1');
    w.ticks(T0, T0 + HOUR + 5000); // the index published at T0 − 10 min is stale by then
    assert.equal(w.funding.length, 0);
    assert.equal(w.market().fundingIndex, 0n);
  });
});
