/**
 * The linear lifecycle driven through the exchange with explicit command times (no sleeping):
 * funding payments between longs and shorts (zero-sum, residue to the fund, only positions open at
 * the funding time pay), liquidation into the book with the fee to the insurance fund, the fund's
 * takeover when the book cannot absorb a position, auto-deleveraging when the fund cannot pay, and
 * dated-future expiry settled at the 30-minute index TWAP. After every command: the ledger sums to
 * zero per asset and no user bucket is negative.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { coreConfig } from '../../config/core.ts';
import type { Command } from '../commands.ts';
import { Exchange } from '../exchange.ts';
import { systemAccount } from '../ledger/ledger.ts';
import { fx, type Fixed } from '../money.ts';
import { listedExpiries, futureId } from '../listings.ts';
import type { OrderRequest } from './order.ts';
import { FUND_ACCOUNT } from './lifecycle.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

class World {
  readonly ex = new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3 * HOUR, fundingIntervalMs: HOUR }));
  now = T0;

  run(c: Command, at = this.now) {
    this.now = Math.max(this.now, at);
    const out = this.ex.execute(c, this.now);
    for (const [asset, sum] of this.ex.ledger.totalsByAsset()) assert.equal(sum, 0n, `ledger unbalanced in ${asset}`);
    assert.deepEqual(this.ex.ledger.negativeUserAccounts(), []);
    return out;
  }

  ok(c: Command, at?: number) {
    const out = this.run(c, at);
    assert.ok(out.ok, `command ${c.type} refused: ${!out.ok ? `${out.code} ${out.message}` : ''}`);
    return out.result;
  }

  fund(n: number, perps: string) {
    this.ok({ type: 'chain.deposit_observed', txHash: `0xd${n}`, account: addr(n), amount: fx(perps), confirmations: 1 });
    this.ok({ type: 'wallet.transfer', account: addr(n), from: 'wallet', to: 'perps', amount: fx(perps) });
  }

  index(price: string, at?: number) {
    this.ok({ type: 'index.publish', underlying: 'BTC', price: fx(price), sourceTs: at ?? this.now }, at);
  }

  order(n: number, side: 'buy' | 'sell', qty: string, price: string | null, extra: Partial<OrderRequest> = {}) {
    const request: OrderRequest = {
      marketId: 'BTC-PERP', side: side === 'buy' ? 0 : 1, type: price === null ? 'market' : 'limit', quantity: fx(qty),
      price: price === null ? null : fx(price), timeInForce: price === null ? 'ioc' : 'gtc', postOnly: false,
      reduceOnly: false, marginMode: 'cross', clientOrderId: null, stopPrice: null, takeProfitPrice: null,
      stopLossPrice: null, selfTradePrevention: 'cancel_maker', quoteId: null, ...extra,
    };
    return this.run({ type: 'perp.place', account: addr(n), request });
  }

  tick(at: number) {
    this.ok({ type: 'clock.tick' }, at);
  }

  perps(n: number): Fixed {
    const id = this.ex.accounts.find(addr(n))?.id;
    return id === undefined ? 0n : this.ex.ledger.userBalance(id, 'perps', 'USDC');
  }

  size(n: number, marketId = 'BTC-PERP'): number {
    const id = this.ex.accounts.find(addr(n))!.id;
    const market = this.ex.linear.markets.get(marketId)!;
    return this.ex.linear.findAccount(id)?.position(market, 'cross')?.size ?? 0;
  }

  insurance(): Fixed {
    return this.ex.ledger.balance(systemAccount('insurance', 'USDC'));
  }
}

describe('funding', () => {
  test('longs pay shorts the interval rate on the index; the sum over accounts is zero', () => {
    const w = new World();
    w.index('100000');
    w.fund(1, '100000');
    w.fund(2, '100000');
    w.tick(T0 + 1000);
    w.order(1, 'sell', '1', '100100');
    assert.ok(w.order(2, 'buy', '1', null).ok);
    // A rich bid keeps the premium positive through the hour: longs pay.
    w.order(3, 'buy', '0.0001', '99000');
    const before1 = w.perps(1);
    const before2 = w.perps(2);
    for (let t = T0 + 5000; t < T0 + 2 * HOUR + 10_000; t += 5000) {
      if ((t - T0) % 600_000 === 0) w.index('100000', t);
      w.tick(t);
    }
    const paid = before2 - w.perps(2);
    const received = w.perps(1) - before1;
    assert.ok(paid > 0n, 'the long paid funding');
    assert.ok(received > 0n && received <= paid, 'the short received at most what the long paid');
    assert.ok(paid - received < 10n ** 13n, 'rounding residue is below a few micro-USDC');
  });

  test('a position opened after a funding time pays nothing for the interval before it', () => {
    const w = new World();
    w.index('100000');
    w.fund(1, '100000');
    w.fund(2, '100000');
    w.tick(T0 + 1000);
    w.tick(T0 + HOUR + 1000); // funding time passes with no positions
    w.order(1, 'sell', '1', '100000');
    w.order(2, 'buy', '1', null);
    const id = w.ex.accounts.find(addr(2))!.id;
    const p = w.ex.linear.findAccount(id)!.position(w.ex.linear.markets.get('BTC-PERP')!, 'cross')!;
    assert.equal(p.fundingIndex, w.ex.linear.markets.get('BTC-PERP')!.fundingIndex);
    assert.equal(p.funding, 0n);
  });
});

describe('liquidation', () => {
  test('a long below maintenance is closed into the book, with the fee to the insurance fund', () => {
    const w = new World();
    w.index('100000');
    w.fund(1, '2100'); // ~48x on 1 BTC
    w.fund(2, '1000000');
    w.fund(3, '1000000');
    w.order(2, 'sell', '1', '100000');
    assert.ok(w.order(1, 'buy', '1', null).ok);
    w.order(3, 'buy', '1', '98500'); // liquidity the liquidation can sell into
    const fundBefore = w.insurance();
    w.index('98900'); // equity ~1000 < maintenance ~989 + buffer
    w.tick(w.now + 1000);
    assert.equal(w.size(1), 0, 'the position was liquidated');
    assert.ok(w.insurance() > fundBefore, 'the liquidation fee reached the fund');
    assert.ok(w.perps(1) >= 0n);
  });

  test('an isolated long closed in full into the book pays the fee out of what the close released', () => {
    const w = new World();
    w.index('100000');
    w.fund(1, '3000');
    w.fund(2, '1000000');
    w.fund(3, '1000000');
    w.order(2, 'sell', '1', '100000');
    assert.ok(w.order(1, 'buy', '1', null, { marginMode: 'isolated' }).ok); // allocation 2 000, fee 50
    w.order(3, 'buy', '1', '98500');
    const market = w.ex.linear.markets.get('BTC-PERP')!;
    const p = w.ex.linear.findAccount(w.ex.accounts.find(addr(1))!.id)!.position(market, 'isolated')!;
    const fundBefore = w.insurance();
    w.index('98900');
    w.tick(w.now + 1000);
    assert.deepEqual([p.size, p.status], [0, 'liquidated']);
    // Sold at 98 500: 2 000 − 1 500 − the 49.25 taker fee leaves 450.75, under the 1 % fee (985).
    // Before: the close released it all to the cross cash first, and no fee was charged.
    assert.equal(w.insurance() - fundBefore, fx('450.75'), 'the fee took what the close released');
    assert.equal(w.perps(1), fx('950'), 'the cross cash is untouched');
  });

  test('a cross liquidation beyond the cash is paid out of the other positions\' profit, the fee too', () => {
    const w = new World();
    const eth = (price: string) => w.ok({ type: 'index.publish', underlying: 'ETH', price: fx(price), sourceTs: w.now });
    w.index('97100');
    eth('3490');
    w.fund(1, '10000');
    w.fund(2, '10000000');
    w.order(2, 'sell', '0.1', '97100');
    assert.ok(w.order(1, 'buy', '0.1', null).ok);
    w.order(2, 'buy', '18', '3490', { marketId: 'ETH-PERP' });
    assert.ok(w.order(1, 'sell', '18', null, { marketId: 'ETH-PERP' }).ok);
    w.index('400000'); // the BTC long carries ~28,000 of unrealised profit: equity, not cash
    w.order(2, 'sell', '30', '5491', { marketId: 'ETH-PERP' }); // where the ETH mark lands (index − 5 %)
    const fundBefore = w.insurance();
    const btc = w.ex.linear.findAccount(w.ex.accounts.find(addr(1))!.id)!.position(w.ex.linear.markets.get('BTC-PERP')!, 'cross')!;
    const settledBefore = btc.realizedPnl;
    const out = w.run({ type: 'index.publish', underlying: 'ETH', price: fx('5780'), sourceTs: w.now });
    assert.ok(out.ok);
    // The ETH short's loss (~36,000) is beyond the cash: the BTC profit pays it, and the fee.
    assert.equal(w.size(1, 'ETH-PERP'), 0, 'the ETH short was liquidated');
    assert.equal(w.size(1), 1000, 'the BTC long stays');
    const ledger = out.events.flatMap((e) => (e.type === 'ledger' ? [e.entry] : []));
    const fee = ledger.filter((e) => e.type === 'liquidation' && e.account.kind === 'system').reduce((sum, e) => sum + e.amount, 0n);
    assert.ok(fee > 0n, 'the liquidation fee was charged');
    assert.ok(!ledger.some((e) => e.type === 'insurance_fund'), 'the fund paid nothing in');
    assert.equal(w.insurance(), fundBefore + fee, 'the fund only received the fee');
    assert.ok(btc.realizedPnl > settledBefore, 'the BTC profit was realised to pay');
    assert.ok(w.perps(1) >= 0n);
  });

  test('when the book cannot absorb the position the fund takes it over at the mark', () => {
    const w = new World();
    w.index('100000');
    w.fund(1, '2100');
    w.fund(2, '1000000');
    w.fund(9, '500000');
    w.ok({ type: 'wallet.transfer', account: addr(9), from: 'perps', to: 'wallet', amount: fx('1') });
    // seed the fund through funding residues is too slow: give it cash by a trade-free move
    w.ex.ledger.move('insurance_fund', systemAccount('treasury', 'USDC'), systemAccount('insurance', 'USDC'), fx('50000'), w.now);
    w.order(2, 'sell', '1', '100000');
    w.order(1, 'buy', '1', null);
    w.index('98500');
    w.tick(w.now + 1000);
    assert.equal(w.size(1), 0);
    const fund = w.ex.linear.findAccount(FUND_ACCOUNT)!;
    const held = fund.position(w.ex.linear.markets.get('BTC-PERP')!, 'cross');
    assert.equal(held?.size, 10_000, 'the fund holds the 1 BTC long');
    assert.ok(w.perps(1) >= 0n);
  });

  test('when the fund cannot pay the deficit the position is deleveraged against the most profitable short', () => {
    const w = new World();
    w.index('100000');
    w.fund(1, '2100');
    w.fund(2, '1000000');
    w.fund(4, '1000000');
    w.order(2, 'sell', '0.5', '100000');
    w.order(4, 'sell', '0.5', '100000.1');
    w.order(1, 'buy', '1', null);
    w.index('97000'); // a gap: equity negative, fund empty
    w.tick(w.now + 1000);
    assert.equal(w.size(1), 0);
    assert.equal(w.size(2) + w.size(4), -10_000 + 10_000, 'shorts were reduced by the long they faced');
    assert.ok(w.perps(1) >= 0n);
    assert.ok(w.insurance() >= -(10n ** 13n), 'the fund paid at most rounding dust');
  });
});

describe('dated futures', () => {
  /** The first listed BTC future, with account 2 long 1 BTC of it from account 1 at 100,000. */
  function futurePosition() {
    const w = new World();
    w.index('100000');
    w.tick(T0 + 1000);
    const expiry = listedExpiries(T0 + 1000)[0]!;
    const id = futureId('BTC', expiry);
    w.fund(1, '100000');
    w.fund(2, '100000');
    const request = (side: 0 | 1, price: string | null): OrderRequest => ({
      marketId: id, side, type: price === null ? 'market' : 'limit', quantity: fx('1'), price: price === null ? null : fx(price),
      timeInForce: price === null ? 'ioc' : 'gtc', postOnly: false, reduceOnly: false, marginMode: 'cross', clientOrderId: null,
      stopPrice: null, takeProfitPrice: null, stopLossPrice: null, selfTradePrevention: 'cancel_maker', quoteId: null,
    });
    w.ok({ type: 'perp.place', account: addr(1), request: request(1, '100000') });
    w.ok({ type: 'perp.place', account: addr(2), request: request(0, null) });
    return { w, expiry, id, request };
  }

  test('expiry cancels orders, settles positions at the 30-minute TWAP and leaves the listing', () => {
    const { w, expiry, id, request } = futurePosition();
    w.ok({ type: 'perp.place', account: addr(2), request: request(0, '95000') });
    for (let t = expiry - 31 * 60_000; t <= expiry + 1000; t += 60_000) {
      w.index(t < expiry - 30 * 60_000 ? '100000' : '101000', t);
      w.tick(t);
    }
    w.tick(expiry + 2000);
    const market = w.ex.linear.markets.get(id)!;
    assert.equal(market.status, 'expired');
    assert.equal(market.settlementPrice, fx('101000'));
    assert.equal(market.positions.size, 0);
    assert.equal(w.size(2, id), 0);
    assert.ok(w.perps(2) > fx('100000'), 'the long gained 1000 minus fees');
  });

  test('between the expiry instant and the next tick, an index move neither re-marks the future nor trades in its book', () => {
    const { w, expiry, id, request } = futurePosition();
    const MIN = 60_000;
    w.fund(3, '1000000');
    w.fund(4, '3700');
    w.ok({ type: 'perp.place', account: addr(1), request: request(1, '100000') });
    w.ok({ type: 'perp.place', account: addr(4), request: request(0, null) }); // account 4 long 1 BTC on 3,700
    for (let t = expiry - 31 * MIN; t < expiry; t += MIN) {
      w.index('100000', t);
      w.tick(t);
    }
    w.ok({ type: 'perp.place', account: addr(3), request: request(0, '99500') }); // a resting bid
    // 200 ms after expiry, before any tick, the index falls far enough to liquidate account 4.
    const out = w.run({ type: 'index.publish', underlying: 'BTC', price: fx('95000'), sourceTs: expiry + 200 }, expiry + 200);
    assert.ok(out.ok);
    const fills = out.events.filter((e) => e.type === 'fill' && e.fill.marketId === id);
    // Before: the liquidation of account 2 sold 1 BTC of the expired future into account 3's bid.
    assert.deepEqual(fills, [], 'no trade in a market past its expiry');
    const market = w.ex.linear.markets.get(id)!;
    assert.equal(market.status, 'expired', 'expired by the first command that moves marks');
    assert.equal(market.settlementPrice, fx('100000'), 'settled at its window TWAP, not liquidated at 95 000');
    assert.equal(w.size(4, id), 0);
  });

  test('the settlement TWAP leaves out the time the index was stale', () => {
    const { w, expiry, id } = futurePosition();
    const MIN = 60_000;
    w.index('100000', expiry - 3 * HOUR - 35 * MIN); // fresh for 3 h: stale from 35 minutes before expiry
    w.tick(expiry - 3 * HOUR - 35 * MIN + 1000);
    w.tick(expiry - 35 * MIN + 1000); // the board records the outage
    w.index('101000', expiry - 10 * MIN); // the window's one fresh print
    for (let t = expiry - 10 * MIN + 1000; t <= expiry + 2000; t += MIN) w.tick(t);
    w.tick(expiry + 2000);
    const market = w.ex.linear.markets.get(id)!;
    // Carried across the outage, 100 000 would have counted for 20 of the 30 minutes (100 333.3).
    assert.equal(market.settlementPrice, fx('101000'));
    assert.equal(w.size(2, id), 0);
  });

  test('an expiry first reached after downtime longer than the index history still settles at its window TWAP', () => {
    const { w, expiry, id } = futurePosition();
    const MIN = 60_000;
    // 100 000 for the first 20 minutes of the window, 103 000 for the last 10: TWAP 101 000
    for (let t = expiry - 31 * MIN; t < expiry; t += MIN) {
      w.index(t < expiry - 10 * MIN ? '100000' : '103000', t);
      w.tick(t + 1);
    }
    // The venue is down from just before expiry until past the two hours of history it keeps; the
    // first command after it is an index input, which prunes that history before any tick settles.
    const back = expiry + 2 * HOUR + 5 * MIN;
    w.index('120000', back);
    w.tick(back + 1);
    const market = w.ex.linear.markets.get(id)!;
    assert.equal(market.settlementPrice, fx('101000'), 'the window TWAP, not the last price before expiry (103 000)');
    assert.equal(w.size(2, id), 0);
    w.tick(back + 3 * HOUR);
    assert.ok(w.ex.index.twap('BTC', expiry - 30 * MIN, expiry) !== fx('101000'), 'once settled, the window is no longer kept');
  });

  test('a final window without a fresh index settles at the first fresh index after expiry', () => {
    const { w, expiry, id } = futurePosition();
    assert.ok(expiry - 30 * 60_000 > T0 + 3 * HOUR, 'the index is stale through the final window');
    w.tick(expiry + 1000);
    const market = w.ex.linear.markets.get(id)!;
    assert.deepEqual([market.status, market.settlementPrice, w.size(2, id)], ['expired', null, 10_000], 'not settled on nothing (1 BTC in lots)');
    w.index('102000', expiry + HOUR);
    w.tick(expiry + HOUR + 1000);
    assert.deepEqual([market.settlementPrice, market.positions.size, w.size(2, id)], [fx('102000'), 0, 0]);
  });

  test('what a settled market\'s clearing account keeps of the PnL rounding goes to the insurance fund', () => {
    const { w, expiry, id, request } = futurePosition();
    const lot = (side: 0 | 1, price: string | null) => ({ ...request(side, price), quantity: fx('0.0001') });
    // Account 2 adds one lot at 100 000.1 and closes one at 100 000: the closed share of its cost
    // is not a whole unit, and the PnL posted for it is floored, leaving a rest in the clearing.
    w.ok({ type: 'perp.place', account: addr(1), request: lot(1, '100000.1') });
    w.ok({ type: 'perp.place', account: addr(2), request: lot(0, null) });
    w.ok({ type: 'perp.place', account: addr(1), request: lot(0, '100000') });
    w.ok({ type: 'perp.place', account: addr(2), request: lot(1, null) });
    const market = w.ex.linear.markets.get(id)!;
    const clearing = () => w.ex.ledger.balance(market.clearingLedger!);
    assert.equal(clearing(), fx('0.000001'), 'rounding rests in the clearing account');
    const fundBefore = w.insurance();
    for (let t = expiry - 31 * 60_000; t <= expiry + 1000; t += 60_000) {
      w.index('100000', t);
      w.tick(t);
    }
    w.tick(expiry + 2000);
    assert.deepEqual([market.settled, market.positions.size], [true, 0]);
    // Before: the rest stayed in clearing:<market> of a delisted market for ever.
    assert.equal(clearing(), 0n, 'the flat market\'s clearing account is empty');
    // That rest and the one the settlement's own floored PnL adds.
    assert.equal(w.insurance() - fundBefore, fx('0.000002'), 'its rest went to the fund');
  });

  /**
   * Account 3 long 1 BTC of the future on 3,000 (2,950 after the fee), the index stale through
   * the final window, then a first fresh index at 90,000: settled there, its loss is 10,000.
   */
  function settledPastBankruptcy(fund: string) {
    const { w, expiry, id, request } = futurePosition();
    w.fund(3, '3000');
    w.ok({ type: 'perp.place', account: addr(1), request: request(1, '100000') });
    w.ok({ type: 'perp.place', account: addr(3), request: request(0, null) });
    w.ex.ledger.move('insurance_fund', systemAccount('treasury', 'USDC'), systemAccount('insurance', 'USDC'), fx(fund), w.now);
    w.tick(expiry + 1000);
    const fills: { price: Fixed; taker: number; maker: number }[] = [];
    const outs = [
      w.run({ type: 'index.publish', underlying: 'BTC', price: fx('90000'), sourceTs: expiry + HOUR }, expiry + HOUR),
      w.run({ type: 'clock.tick' }, expiry + HOUR + 1000),
    ];
    for (const e of outs.flatMap((out) => (out.ok ? out.events : []))) {
      if (e.type === 'fill') fills.push({ price: e.fill.price, taker: e.fill.taker.accountId, maker: e.fill.maker.accountId });
    }
    const market = w.ex.linear.markets.get(id)!;
    assert.deepEqual([market.settlementPrice, market.positions.size], [fx('90000'), 0]);
    return { w, fills, three: w.ex.accounts.find(addr(3))!.id, one: w.ex.accounts.find(addr(1))!.id };
  }

  test('a settlement past a long\'s bankruptcy price: a fund that can carry the deficit pays it', () => {
    const { w, fills } = settledPastBankruptcy('10000');
    assert.deepEqual(fills, [], 'no deleveraging');
    assert.equal(w.insurance(), fx('2950'), 'the fund paid the 7,050 the long could not');
    assert.equal(w.perps(3), 0n);
  });

  test('a settlement past a long\'s bankruptcy price: a deficit the fund cannot carry is deleveraged, never paid', () => {
    // Before: the fund paid the 7,050 out of 1,000 and ended at −6,050, the short paid in full.
    const { w, fills, one, three } = settledPastBankruptcy('1000');
    assert.equal(w.insurance(), fx('1000'), 'the fund paid nothing');
    // The long is closed against the short at the price where its 2,950 is gone, not at 90,000.
    assert.deepEqual(fills, [{ price: fx('97050'), taker: three, maker: one }]);
    assert.equal(w.perps(3), 0n);
    // Account 1, short 2 BTC from 100,000: +2,950 from the deleveraged BTC, +10,000 settled.
    assert.equal(w.perps(1), fx('100000') - fx('20') + fx('12950'));
  });
});
