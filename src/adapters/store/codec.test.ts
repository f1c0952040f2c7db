/**
 * The journal codec round-trips what the core journals: any nesting of objects, arrays, strings,
 * numbers, booleans, nulls and bigints (exact, any sign and size) decodes to an equal value, and an
 * object that merely has a `$n` field among others stays an object.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { decode, encode } from './codec.ts';

const key = fc.string({ maxLength: 6 }).filter((k) => k !== '__proto__');
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.bigInt(),
    fc.string(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 4, noNullPrototype: true }),
  ),
}));

test('decode(encode(v)) equals v for nested values with bigints', () => {
  fc.assert(fc.property(value, (v) => {
    assert.deepEqual(decode(encode(v)), v);
  }), { numRuns: 2000 });
});

test('bigints come back exact at 18 decimals and beyond 2^64, in arrays and nested objects', () => {
  const v = { amount: -(10n ** 40n) - 7n, list: [0n, 1n, { deep: [2n ** 70n] }], price: 100_003n * 10n ** 17n };
  assert.deepEqual(decode(encode(v)), v);
});

test('an object with $n and another field, or a non-string $n, is not a bigint', () => {
  assert.deepEqual(decode('{"a":{"$n":"5","b":1},"c":{"$n":5}}'), { a: { $n: '5', b: 1 }, c: { $n: 5 } });
});
