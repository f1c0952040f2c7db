/**
 * Tests for impact-price.ts: average fill prices by hand (one level, several levels, exact level
 * boundary, non-terminating decimals rounded half up), insufficient depth, the premium index on the
 * worked example of mechanics.md 1.3, the dead zone inside the impact spread and missing sides, and a
 * fast-check property that the impact price lies between the best and the worst level used.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fromInt, fx } from '../core/money.ts';
import { impactPrice, premiumIndex } from './impact-price.ts';
import type { BookLevel } from './impact-price.ts';

const L = (p: string, s: string): BookLevel => [fx(p), fx(s)];

describe('impactPrice', () => {
  test('inside the first level: that level price', () => {
    assert.equal(impactPrice([L('100', '10')], fx('500')), fx('100'));
  });

  test('across levels, by hand', () => {
    // 1000 quote: 5 @ 100 (500), then 500 @ 125 = 4 base → 1000 / 9 = 111.111…
    assert.equal(impactPrice([L('100', '5'), L('125', '10')], fx('1000')), fx('111.111111111111111111'));
    // exact boundary: 500 + 1250 = 1750 for 15 base → 116.666…67 (half up)
    assert.equal(impactPrice([L('100', '5'), L('125', '10')], fx('1750')), fx('116.666666666666666667'));
    // bids (descending): 300 quote: 1 @ 200, then 100 @ 100 = 1 → 150
    assert.equal(impactPrice([L('200', '1'), L('100', '5')], fx('300')), fx('150'));
  });

  test('zero-size levels are skipped; insufficient depth is null', () => {
    assert.equal(impactPrice([L('99', '0'), L('100', '1')], fx('50')), fx('100'));
    assert.equal(impactPrice([L('100', '5'), L('125', '10')], fx('1750.000000000000000001')), null);
    assert.equal(impactPrice([], fx('1')), null);
    assert.throws(() => impactPrice([L('100', '1')], 0n), RangeError);
  });

  test('property: between the first and the last level used', () => {
    const level = fc.tuple(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 1, max: 1_000_000 }));
    const levelsArb = fc.array(level, { minLength: 1, maxLength: 8 });
    const notionalArb = fc.bigInt({ min: 1n, max: 10n ** 30n });
    fc.assert(
      fc.property(levelsArb, notionalArb, (raw, n) => {
        let price = 50_000;
        const levels: BookLevel[] = raw.map(([step, size]) => {
          price += step;
          return [fromInt(price), BigInt(size) * 10n ** 12n];
        });
        const r = impactPrice(levels, n);
        if (r === null) return;
        assert.ok(r >= levels[0]![0] && r <= levels[levels.length - 1]![0]);
      }),
    );
  });
});

describe('premiumIndex', () => {
  const index = fx('60000');
  test('worked example: index 60 000, impact bid 60 060 ⇒ 0.001', () => {
    assert.equal(premiumIndex(fx('60060'), fx('60080'), index), fx('0.001'));
  });

  test('negative premium, dead zone inside the impact spread, missing side', () => {
    assert.equal(premiumIndex(fx('59900'), fx('59940'), index), fx('-0.001'));
    assert.equal(premiumIndex(fx('59990'), fx('60010'), index), 0n);
    assert.equal(premiumIndex(null, fx('59000'), index), 0n);
    assert.equal(premiumIndex(fx('61000'), null, index), 0n);
    // crossed impact prices: both terms count
    assert.equal(premiumIndex(fx('60060'), fx('59970'), index), fx('0.0005'));
    // 1/3 of a unit: rounded half up at 18 digits
    assert.equal(premiumIndex(fx('3.000000000000000001'), fx('4'), fx('3')), 0n);
    assert.equal(premiumIndex(fx('61'), fx('62'), fx('60')), fx('0.016666666666666667'));
    assert.throws(() => premiumIndex(null, null, 0n), RangeError);
  });
});
