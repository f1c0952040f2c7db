/**
 * Tests for push-feed.ts: publish forwards one 'push' observation synchronously while started,
 * returns false before start and after stop, and refuses non-positive prices and bad timestamps.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { fx } from '../../core/money.ts';
import { PushFeed } from './push-feed.ts';
import type { PriceObservation } from './port.ts';

describe('PushFeed', () => {
  test('forwards while started', () => {
    const feed = new PushFeed();
    const got: [string, PriceObservation[]][] = [];
    assert.equal(feed.publish('BTC', fx('1'), 1), false);
    feed.start((u, obs) => got.push([u, obs]));
    assert.throws(() => feed.start(() => undefined), /already started/);
    assert.equal(feed.publish('BTC', fx('97000.5'), 1_700_000_000_000), true);
    assert.deepEqual(got, [['BTC', [{ source: 'push', price: fx('97000.5'), ts: 1_700_000_000_000 }]]]);
    feed.stop();
    assert.equal(feed.publish('BTC', fx('1'), 2), false);
    assert.equal(got.length, 1);
  });

  test('refuses bad input', () => {
    const feed = new PushFeed();
    feed.start(() => undefined);
    assert.throws(() => feed.publish('BTC', 0n, 1), RangeError);
    assert.throws(() => feed.publish('BTC', fx('1'), 1.5), RangeError);
  });
});
