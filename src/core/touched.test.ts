/**
 * The reusable per-command collections behave exactly like an insertion-ordered Set and a Map of
 * sums, across resets and on both sides of the size where they switch to an index map.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PendingSums, TouchedSet } from './touched.ts';

type Op = { kind: 'add' | 'delete'; key: number } | { kind: 'reset' };

const ops = fc.array(
  fc.oneof(
    { weight: 30, arbitrary: fc.record({ kind: fc.constant('add' as const), key: fc.integer({ min: 0, max: 40 }) }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 40 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const) }) },
  ),
  { minLength: 40, maxLength: 300, size: 'max' },
);

describe('TouchedSet', () => {
  test('matches an insertion-ordered Set under random adds, deletes and resets', () => {
    fc.assert(
      fc.property(ops, (script: Op[]) => {
        const keys = Array.from({ length: 41 }, (_, i) => ({ i }));
        const set = new TouchedSet<{ i: number }>();
        const model = new Set<{ i: number }>();
        for (const op of script) {
          if (op.kind === 'reset') {
            set.reset();
            model.clear();
          } else if (op.kind === 'add') {
            set.add(keys[op.key]!);
            model.add(keys[op.key]!);
          } else {
            set.delete(keys[op.key]!);
            model.delete(keys[op.key]!);
          }
          assert.equal(set.size, model.size);
          const listed = Array.from({ length: set.size }, (_, i) => set.at(i));
          assert.deepEqual(listed, [...model]);
          listed.forEach((k, i) => assert.equal(set.indexOf(k), i));
          for (const k of keys) assert.equal(set.has(k), model.has(k));
        }
      }),
    );
  });
});

describe('PendingSums', () => {
  test('accumulates per key in first-seen order, like a Map of sums', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n })), { minLength: 20, maxLength: 200, size: 'max' }),
        (adds) => {
          const sums = new PendingSums<number>();
          const model = new Map<number, bigint>();
          for (const [key, amount] of adds) {
            sums.add(key, amount);
            model.set(key, (model.get(key) ?? 0n) + amount);
          }
          const listed = Array.from({ length: sums.size }, (_, i) => [sums.keyAt(i), sums.sumAt(i)] as const);
          assert.deepEqual(listed, [...model]);
          sums.reset();
          assert.equal(sums.size, 0);
          sums.add(7, 5n);
          assert.deepEqual([sums.keyAt(0), sums.sumAt(0)], [7, 5n]);
        },
      ),
    );
  });
});
