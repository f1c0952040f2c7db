/**
 * Tests of the fixed-point money module: the strict wire grammar (every hostile form from
 * research/reliability.md section 6 and 7.8), formatting without exponents or -0, rounding
 * directions, and fast-check round trips. No float is used to compute an expected value.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  divRound,
  formatDecimal,
  formatFixedDigits,
  fx,
  mul,
  mulDiv,
  parseDecimal,
  roundTo,
  roundToStep,
  SCALE,
  toUnits,
  unitOf,
} from './money.ts';

describe('parseDecimal refuses every non-plain decimal', () => {
  const hostile = [
    '1e5', '1E5', '1e-5', '0x10', '0b1', '0o7', '+1', ' 1', '1 ', '\t1', '1\n', '1.', '.5', '1_000',
    '1,5', 'Infinity', '-Infinity', 'NaN', '', ' ', '-', '--1', '1..2', '1.2.3', '１', '٣', '0x', '1-',
    '9'.repeat(80), '1.' + '0'.repeat(19) + '1', '9'.repeat(10_000),
  ];
  for (const input of hostile) {
    test(`refuses ${JSON.stringify(input.length > 30 ? input.slice(0, 12) + '…' : input)}`, () => {
      assert.equal(parseDecimal(input, { allowNegative: true }).ok, false);
    });
  }
  test('refuses JSON numbers, null, objects and arrays', () => {
    for (const input of [1, 1.5, 0, null, undefined, {}, ['1'], true, 10n]) {
      assert.deepEqual(parseDecimal(input), { ok: false, reason: 'not_a_string' });
    }
  });
  test('refuses -0 and -0.0 even where negatives are allowed', () => {
    assert.deepEqual(parseDecimal('-0', { allowNegative: true }), { ok: false, reason: 'negative_zero' });
    assert.deepEqual(parseDecimal('-0.000', { allowNegative: true }), { ok: false, reason: 'negative_zero' });
  });
  test('refuses negatives unless allowed, zero when positive is required', () => {
    assert.deepEqual(parseDecimal('-1'), { ok: false, reason: 'negative_not_allowed' });
    assert.deepEqual(parseDecimal('0', { positive: true }), { ok: false, reason: 'must_be_positive' });
    assert.deepEqual(parseDecimal('0.000', { positive: true }), { ok: false, reason: 'must_be_positive' });
  });
  test('counts the fraction digits as written against the limit, trailing zeros included', () => {
    assert.equal(parseDecimal('1.5', { maxFractionDigits: 1 }).ok, true);
    for (const input of ['1.55', '1.50', '0.010000000000000000']) {
      assert.deepEqual(parseDecimal(input, { maxFractionDigits: 1 }), { ok: false, reason: 'too_many_fraction_digits' }, input);
    }
    assert.equal(parseDecimal('1.500', { maxFractionDigits: 3 }).ok, true);
  });
  test('a 10,000-digit string is refused before any BigInt is built', () => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < 1000; i++) parseDecimal('9'.repeat(10_000));
    assert.ok(process.hrtime.bigint() - started < 200_000_000n, 'hostile length check must be cheap');
  });
});

describe('parseDecimal accepts plain decimals exactly', () => {
  const cases: [string, bigint][] = [
    ['0', 0n],
    ['1', SCALE],
    ['0.5', SCALE / 2n],
    ['00012', 12n * SCALE],
    ['-2.25', -(9n * SCALE) / 4n],
    ['0.000000000000000001', 1n],
    ['12345678901234567890.123456789012345678', 12345678901234567890123456789012345678n],
  ];
  for (const [input, expected] of cases) {
    test(`${input}`, () => assert.deepEqual(parseDecimal(input, { allowNegative: true }), { ok: true, value: expected }));
  }
});

describe('formatDecimal', () => {
  test('plain notation, trimmed, never -0 or an exponent', () => {
    assert.equal(formatDecimal(0n), '0');
    assert.equal(formatDecimal(-0n), '0');
    assert.equal(formatDecimal(fx('100000.5000')), '100000.5');
    assert.equal(formatDecimal(fx('-0.000000000000000001')), '-0.000000000000000001');
    assert.equal(formatDecimal(10n ** 40n), '10000000000000000000000');
  });
  test('formatFixedDigits rounds half up and never prints -0', () => {
    assert.equal(formatFixedDigits(fx('1.005'), 2), '1.01');
    assert.equal(formatFixedDigits(fx('-0.001'), 2), '0.00');
    assert.equal(formatFixedDigits(fx('-1.005'), 2), '-1.01');
    assert.equal(formatFixedDigits(fx('7'), 0), '7');
  });
});

describe('rounding', () => {
  const table: [bigint, bigint, 'floor' | 'ceil' | 'halfUp' | 'trunc', bigint][] = [
    [7n, 2n, 'floor', 3n], [7n, 2n, 'ceil', 4n], [7n, 2n, 'halfUp', 4n], [7n, 2n, 'trunc', 3n],
    [-7n, 2n, 'floor', -4n], [-7n, 2n, 'ceil', -3n], [-7n, 2n, 'halfUp', -4n], [-7n, 2n, 'trunc', -3n],
    [5n, 3n, 'halfUp', 2n], [4n, 3n, 'halfUp', 1n], [6n, 3n, 'floor', 2n], [7n, -2n, 'floor', -4n],
  ];
  for (const [n, d, mode, expected] of table) {
    test(`${n}/${d} ${mode} = ${expected}`, () => assert.equal(divRound(n, d, mode), expected));
  }
  test('mul, mulDiv, roundTo, roundToStep', () => {
    assert.equal(mul(fx('60000.5'), fx('0.25')), fx('15000.125'));
    assert.equal(mulDiv(fx('1'), fx('1'), fx('3'), 'floor'), 333333333333333333n);
    assert.equal(mulDiv(fx('1'), fx('1'), fx('3'), 'ceil'), 333333333333333334n);
    assert.equal(roundTo(fx('1.234567'), 2, 'ceil'), fx('1.24'));
    assert.equal(roundTo(fx('-1.234567'), 2, 'floor'), fx('-1.24'));
    assert.equal(roundToStep(fx('100.07'), fx('0.05'), 'floor'), fx('100.05'));
    assert.equal(toUnits(fx('100.05'), unitOf(2)), 10005);
    assert.throws(() => toUnits(fx('100.055'), unitOf(2)));
  });
  test('division by zero throws', () => assert.throws(() => divRound(1n, 0n, 'floor'), RangeError));
});

describe('properties', () => {
  const decimalString = fc
    .tuple(
      fc.boolean(),
      fc.stringMatching(/^(0|[1-9][0-9]{0,19})$/),
      fc.option(fc.stringMatching(/^[0-9]{0,17}[1-9]$/), { nil: undefined }),
    )
    .map(([neg, i, f]) => `${neg ? '-' : ''}${i}${f === undefined ? '' : '.' + f}`)
    .filter((s) => s !== '-0');

  test('format(parse(s)) === s for canonical decimals', () => {
    fc.assert(
      fc.property(decimalString, (s) => {
        const r = parseDecimal(s, { allowNegative: true });
        assert.ok(r.ok);
        assert.equal(formatDecimal(r.value), s);
      }),
      { numRuns: 2000 },
    );
  });
  test('parse(format(v)) === v and output is always plain', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n }), (v) => {
        const s = formatDecimal(v);
        assert.match(s, /^-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$/);
        assert.notEqual(s, '-0');
        const r = parseDecimal(s, { allowNegative: true });
        assert.ok(r.ok);
        assert.equal(r.value, v);
      }),
      { numRuns: 2000 },
    );
  });
  test('every mode agrees with its definition from the truncated quotient and remainder', () => {
    const reference = (n: bigint, d: bigint, mode: 'floor' | 'ceil' | 'halfUp' | 'trunc'): bigint => {
      const q = n / d;
      const r = n % d;
      if (r === 0n || mode === 'trunc') return q;
      const away = (n < 0n) === (d < 0n) ? 1n : -1n; // the direction of the exact quotient from q
      if (mode === 'halfUp') return 2n * (r < 0n ? -r : r) >= (d < 0n ? -d : d) ? q + away : q;
      return (mode === 'ceil') === (away > 0n) ? q + away : q;
    };
    fc.assert(
      fc.property(fc.bigInt(), fc.bigInt().filter((d) => d !== 0n), fc.constantFrom('floor', 'ceil', 'halfUp', 'trunc' as const), (n, d, mode) => {
        assert.equal(divRound(n, d, mode), reference(n, d, mode), `${n} / ${d} ${mode}`);
      }),
      { numRuns: 4000 },
    );
  });
  test('floor <= exact <= ceil and they differ by at most one unit', () => {
    fc.assert(
      fc.property(fc.bigInt(), fc.bigInt().filter((d) => d !== 0n), (n, d) => {
        const lo = divRound(n, d, 'floor');
        const hi = divRound(n, d, 'ceil');
        assert.ok(hi - lo <= 1n);
        const positiveD = d > 0n;
        assert.ok(positiveD ? lo * d <= n && n <= hi * d : lo * d >= n && n >= hi * d);
      }),
      { numRuns: 2000 },
    );
  });
});
