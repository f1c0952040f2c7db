/**
 * Tests for simulated-feed.ts: the first tick is delivered on start with the injected clock, ticks
 * follow on the interval, the observations match the bare model for the same seed, stop ends
 * delivery, a double start is refused, and consumer errors go to onError when given.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_UNDERLYINGS, createPriceModel } from './price-model.ts';
import { SimulatedFeed } from './simulated-feed.ts';
import type { PriceObservation } from './port.ts';

describe('SimulatedFeed', () => {
  test('delivers the model output stamped with the clock; stop ends delivery', async () => {
    let clock = 1_000_000;
    const feed = new SimulatedFeed({ seed: 9, tickMs: 10, now: () => (clock += 10) });
    const got: [string, PriceObservation[]][] = [];
    feed.start((u, obs) => got.push([u, obs]));
    assert.ok(got.length >= 1, 'first tick is synchronous');
    assert.throws(() => feed.start(() => undefined), /already started/);
    await sleep(80);
    feed.stop();
    const n = got.length;
    await sleep(40);
    assert.equal(got.length, n);
    assert.ok(n >= 4, `only ${n} deliveries`);

    const model = createPriceModel({ seed: 9, underlyings: DEFAULT_UNDERLYINGS, tickMs: 10 });
    const expected: [string, PriceObservation[]][] = [];
    for (let t = 1_000_010; expected.length < n; t += 10) {
      for (const { underlying, observations } of model.step(t)) expected.push([underlying, observations]);
    }
    assert.deepEqual(got, expected.slice(0, n));
    assert.ok(['BTC', 'ETH'].includes(got[0]![0]));
  });

  test('consumer exceptions go to onError', () => {
    const errors: unknown[] = [];
    const feed = new SimulatedFeed({ onError: (e) => errors.push(e), skipProb: 0, outageProb: 0 });
    feed.start(() => {
      throw new Error('boom');
    });
    feed.stop();
    assert.equal(errors.length, 2); // BTC and ETH on the first tick
  });

  test('without onError a consumer exception propagates', () => {
    const feed = new SimulatedFeed({ skipProb: 0, outageProb: 0 });
    assert.throws(() => feed.start(() => {
      throw new Error('boom');
    }), /boom/);
    feed.stop();
  });
});
