/**
 * Unit tests of the kept option margin (option-margin.ts) where its pricing key must not keep a
 * figure: a mark that lapses without a clock tick when the pricing source's mark is not its held
 * mark, or is below intrinsic (the price then moves to the held mark or to intrinsic), and the
 * kept figures following exposure (rest, fill, cancel) with the margin rounded per instrument.
 * The real option board is covered by test/core/clob-margin.property.test.ts; every command here
 * also runs the engine audit (kept = recomputed) through test/support/clob-venue.ts.
 *
 * Standard margin, BTC call struck at 100,000: IM = max(0.15·S − OTM, 0.1·S) + risk price.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addr, ClobVenue } from '../../../test/support/clob-venue.ts';
import { fx, type Fixed } from '../money.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const [B, C] = [addr(0xb), addr(0xc)];

function venue(btc: string): { v: ClobVenue; call: string } {
  const v = new ClobVenue(T0);
  v.index('BTC', btc);
  v.index('ETH', '3000');
  v.tick();
  v.fund(B, '100000', 'options');
  v.fund(C, '100000', 'options');
  return { v, call: v.option('BTC', 'call', '100000') };
}

/** A pricing source with one marked instrument whose mark can lapse without a tick. */
function pricing(v: ClobVenue, id: string, mark: Fixed, held: Fixed) {
  const state = { fresh: true };
  v.usePricing({
    optionMark: (x) => (state.fresh && x === id ? mark : null),
    heldMark: (x) => (x === id ? held : null),
    optionGreeks: () => null,
  });
  return state;
}

describe('kept option margin', () => {
  test('a lapsing mark that is not the held mark is revalued without a tick', () => {
    const { v, call } = venue('100000');
    const source = pricing(v, call, fx('1612.5'), fx('1500'));
    v.order(B, { market: call, side: 'sell', qty: '1', price: '3000' });
    assert.equal(v.locked(B, 'options'), '16612.5'); // 15 000 + the mark
    source.fresh = false;
    v.order(C, { market: call, side: 'buy', qty: '0.01', price: '100' }); // a command, no tick
    assert.equal(v.locked(B, 'options'), '16500'); // 15 000 + the held mark
  });

  test('a lapsing mark under intrinsic is revalued without a tick', () => {
    const { v, call } = venue('101000'); // intrinsic 1 000
    const source = pricing(v, call, fx('500'), fx('500'));
    v.order(B, { market: call, side: 'sell', qty: '1', price: '3000' });
    assert.equal(v.locked(B, 'options'), '15650'); // 15 150 + the mark
    source.fresh = false;
    v.order(C, { market: call, side: 'buy', qty: '0.01', price: '100' });
    assert.equal(v.locked(B, 'options'), '16150'); // 15 150 + intrinsic
  });

  test('resting sells, fills and cancels move the kept margin, each instrument rounded on its own', () => {
    const { v, call } = venue('100000');
    const put = v.option('BTC', 'put', '92000');
    const sell = v.order(B, { market: call, side: 'sell', qty: '0.5', price: '2000' });
    v.order(B, { market: put, side: 'sell', qty: '0.25', price: '500' });
    assert.equal(v.locked(B, 'options'), '10000'); // 7 500 + 0.25 × max(15 000 − 8 000, 10 000)
    v.order(C, { market: call, side: 'buy', qty: '0.2', price: '2000', tif: 'ioc' });
    assert.equal(v.locked(B, 'options'), '10000'); // the short replaces the filled sells
    v.ok({ type: 'clob.cancel', account: B, orderId: Number(sell.order.id) });
    assert.equal(v.locked(B, 'options'), '5500'); // 0.2 × 15 000 + 2 500
  });
});
