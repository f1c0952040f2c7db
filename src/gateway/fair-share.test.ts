/**
 * addressCeiling: the per-address cap until 80 % of the capacity, then falling with the square of
 * the room left to 1 at the last slot and 0 when full; never above the cap, never rising as slots
 * are taken; and the number of greedy addresses needed to fill the capacity from empty (17 at the
 * stream defaults under the per-address cap alone).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { addressCeiling } from './fair-share.ts';

test('examples at the stream defaults (10,000 in all, 600 per address)', () => {
  assert.equal(addressCeiling(600, 0, 10_000), 600);
  assert.equal(addressCeiling(600, 7_999, 10_000), 600);
  assert.equal(addressCeiling(600, 8_000, 10_000), 600, 'full share at 80 %');
  assert.equal(addressCeiling(600, 9_000, 10_000), 150, 'a quarter halfway to the cap');
  assert.equal(addressCeiling(600, 9_900, 10_000), 2);
  assert.equal(addressCeiling(600, 9_999, 10_000), 1, 'the last slot goes to an address holding none');
  assert.equal(addressCeiling(600, 10_000, 10_000), 0);
});

test('tiny caps keep the per-address cap until the last slot', () => {
  assert.equal(addressCeiling(3, 0, 1), 3);
  assert.equal(addressCeiling(3, 1, 2), 3);
  assert.equal(addressCeiling(2, 3, 4), 2);
  assert.equal(addressCeiling(2, 4, 4), 0);
});

test('bounded by the per-address cap, at least 1 below the cap, never rising as the capacity fills', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 1_000_000 }), fc.double({ min: 0, max: 1, noNaN: true }), (perAddress, cap, at) => {
      const open = Math.min(cap - 1, Math.floor(at * cap));
      const ceiling = addressCeiling(perAddress, open, cap);
      assert.ok(ceiling >= 1 && ceiling <= perAddress, `${ceiling}`);
      assert.ok(addressCeiling(perAddress, open + 1, cap) <= ceiling);
      assert.equal(addressCeiling(perAddress, cap, cap), 0);
    }),
  );
});

test('filling the capacity from empty takes many more greedy addresses than the per-address cap alone', () => {
  const addressesToFill = (cap: number, perAddress: number, ceiling: (open: number) => number) => {
    let open = 0;
    let addresses = 0;
    while (open < cap) {
      addresses++;
      for (let held = 0; open < cap && held < ceiling(open); held++) open++;
    }
    return addresses;
  };
  assert.equal(addressesToFill(10_000, 600, () => 600), 17);
  const fair = addressesToFill(10_000, 600, (open) => addressCeiling(600, open, 10_000));
  assert.ok(fair >= 150, `${fair}`);
  const tcp = addressesToFill(20_000, 1000, (open) => addressCeiling(1000, open, 20_000));
  assert.ok(tcp >= 200, `${tcp}`);
});
