/**
 * When the reference market maker re-sends a ladder (requote.ts), checked without the service: two
 * wire ladders differ by a tick in a price or a lot in a size (or a level more, less, or on the
 * other side); an unchanged ladder is not due before the refresh interval and is due as a heartbeat
 * at it; a one-tick change is due at once; a pulled market quotes first again; anchors hold until
 * the reference moved `moveBps` or the refresh interval has passed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fx } from '../core/money.ts';
import { Anchors, ladderDiffers, SentQuotes, type WireLevel } from './requote.ts';

const TICK = fx('0.1');
const LOT = fx('0.01');
const level = (side: 'buy' | 'sell', price: string, quantity = '0.5'): WireLevel => ({ side, price, quantity, postOnly: true });
const LADDER = [level('buy', '1520.3'), level('sell', '1540.7')];

describe('ladderDiffers', () => {
  test('the same levels do not differ, whatever the decimal spelling', () => {
    assert.equal(ladderDiffers(LADDER, [level('buy', '1520.30'), level('sell', '1540.7', '0.50')], TICK, LOT), false);
  });

  test('a tick in one price or a lot in one size differs', () => {
    assert.equal(ladderDiffers(LADDER, [level('buy', '1520.2'), level('sell', '1540.7')], TICK, LOT), true);
    assert.equal(ladderDiffers(LADDER, [level('buy', '1520.3'), level('sell', '1540.8')], TICK, LOT), true);
    assert.equal(ladderDiffers(LADDER, [level('buy', '1520.3', '0.49'), level('sell', '1540.7')], TICK, LOT), true);
  });

  test('less than a tick does not differ (a market whose tick is coarser than its decimals)', () => {
    const half = fx('0.5');
    assert.equal(ladderDiffers(LADDER, [level('buy', '1520.4'), level('sell', '1540.7')], half, LOT), false);
    assert.equal(ladderDiffers(LADDER, [level('buy', '1520.8'), level('sell', '1540.7')], half, LOT), true);
  });

  test('a level added, dropped or moved to the other side differs', () => {
    assert.equal(ladderDiffers(LADDER, [level('sell', '1540.7')], TICK, LOT), true);
    assert.equal(ladderDiffers(LADDER, [...LADDER, level('buy', '1510.3')], TICK, LOT), true);
    assert.equal(ladderDiffers(LADDER, [level('sell', '1520.3'), level('sell', '1540.7')], TICK, LOT), true);
  });
});

describe('SentQuotes', () => {
  const REFRESH = 60_000;

  test('first quote, then nothing until the refresh interval, then a heartbeat', () => {
    const sent = new SentQuotes();
    assert.equal(sent.due('X', LADDER, 0, REFRESH, TICK, LOT), 'first');
    sent.record('X', LADDER, 1_000);
    assert.equal(sent.due('X', LADDER, 2_000, REFRESH, TICK, LOT), null);
    assert.equal(sent.due('X', LADDER, 1_000 + REFRESH - 1, REFRESH, TICK, LOT), null, 'not re-sent before the interval');
    assert.equal(sent.due('X', LADDER, 1_000 + REFRESH, REFRESH, TICK, LOT), 'heartbeat');
  });

  test('a one-tick change is due at once; the heartbeat counts from the last send', () => {
    const sent = new SentQuotes();
    sent.record('X', LADDER, 1_000);
    const moved = [level('buy', '1520.4'), level('sell', '1540.7')];
    assert.equal(sent.due('X', moved, 1_001, REFRESH, TICK, LOT), 'changed');
    sent.record('X', moved, 1_001);
    assert.equal(sent.due('X', moved, 1_000 + REFRESH, REFRESH, TICK, LOT), null);
    assert.equal(sent.due('X', LADDER, 1_002, REFRESH, TICK, LOT), 'changed', 'and back again');
  });

  test('a pulled (forgotten) or delisted market quotes first again', () => {
    const sent = new SentQuotes();
    sent.record('X', LADDER, 0);
    sent.record('Y', LADDER, 0);
    sent.forget('X');
    assert.equal(sent.due('X', LADDER, 1, REFRESH, TICK, LOT), 'first');
    sent.retain(new Set(['X']));
    assert.equal(sent.due('Y', LADDER, 1, REFRESH, TICK, LOT), 'first');
  });
});

describe('Anchors', () => {
  test('hold until the price moved moveBps or the refresh interval passed', () => {
    const anchors = new Anchors();
    assert.deepEqual(anchors.hold('BTC', 100_000, 0, 10, 60_000), { price: 100_000, at: 0 });
    assert.deepEqual(anchors.hold('BTC', 100_099, 1_000, 10, 60_000), { price: 100_000, at: 0 }, '9.9 bp: held');
    assert.deepEqual(anchors.hold('BTC', 99_901, 2_000, 10, 60_000), { price: 100_000, at: 0 }, '-9.9 bp: held');
    assert.deepEqual(anchors.hold('BTC', 100_100, 3_000, 10, 60_000), { price: 100_100, at: 3_000 }, '10 bp: moved');
    assert.deepEqual(anchors.hold('BTC', 100_101, 62_999, 10, 60_000), { price: 100_100, at: 3_000 });
    assert.deepEqual(anchors.hold('BTC', 100_101, 63_000, 10, 60_000), { price: 100_101, at: 63_000 }, 'aged: moved');
  });

  test('moveBps 0 follows the price every time; retain forgets the rest', () => {
    const anchors = new Anchors();
    anchors.hold('A', 1, 0, 0, 60_000);
    assert.deepEqual(anchors.hold('A', 1.0000001, 1, 0, 60_000), { price: 1.0000001, at: 1 });
    anchors.hold('B', 5, 0, 10, 60_000);
    anchors.retain(new Set(['A']));
    assert.deepEqual(anchors.hold('B', 5.001, 2, 10, 60_000), { price: 5.001, at: 2 }, 'B anchored afresh');
  });
});
