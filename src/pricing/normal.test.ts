/**
 * Tests for normal.ts: Cody's normal cdf against reference values computed with mpmath at 40
 * digits (mpmath.ncdf), relative accuracy in the lower tail, symmetry, and the density.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { normCdf, normPdf } from './normal.ts';

/** [x, N(x)] from mpmath.ncdf with mp.dps = 40, rounded to double. */
const REFERENCE: readonly [number, number][] = [
  [-37, 5.725571222524577e-300],
  [-20, 2.7536241186062337e-89],
  [-10, 7.619853024160525e-24],
  [-8, 6.220960574271784e-16],
  [-6, 9.86587645037698e-10],
  [-5.7, 5.990371401063528e-9],
  [-5, 2.866515718791939e-7],
  [-3, 0.0013498980316300946],
  [-2, 0.02275013194817921],
  [-1, 0.15865525393145705],
  [-0.7, 0.24196365222307303],
  [-0.3, 0.3820885778110474],
  [0, 0.5],
  [0.5, 0.6914624612740131],
  [0.674, 0.7498443431596774],
  [0.675, 0.750162117528223],
  [1, 0.8413447460685429],
  [2, 0.9772498680518208],
  [3.3, 0.9995165758576162],
  [6, 0.9999999990134123],
];

describe('normCdf', () => {
  test('matches 40-digit reference values to 1e-15 absolute and 1e-14 relative in the lower tail', () => {
    for (const [x, expected] of REFERENCE) {
      const got = normCdf(x);
      assert.ok(Math.abs(got - expected) <= 1e-15, `N(${x}) = ${got}, want ${expected}`);
      if (x < 0) assert.ok(Math.abs(got - expected) <= 1e-14 * expected, `relative error at ${x}`);
    }
  });

  test('limits and NaN', () => {
    assert.equal(normCdf(Infinity), 1);
    assert.equal(normCdf(-Infinity), 0);
    assert.equal(normCdf(-40), 0);
    assert.equal(normCdf(40), 1);
    assert.ok(Number.isNaN(normCdf(Number.NaN)));
  });

  test('N(x) + N(-x) = 1 and N is non-decreasing', () => {
    const arbX = fc.double({ min: -12, max: 12, noNaN: true });
    const arbStep = fc.double({ min: 0, max: 1, noNaN: true });
    fc.assert(
      fc.property(arbX, arbStep, (x, h) => {
        assert.ok(Math.abs(normCdf(x) + normCdf(-x) - 1) <= 2e-16);
        assert.ok(normCdf(x + h) >= normCdf(x));
      }),
    );
  });
});

describe('normPdf', () => {
  test('peak value and symmetry', () => {
    assert.ok(Math.abs(normPdf(0) - 0.3989422804014327) < 1e-16);
    assert.ok(Math.abs(normPdf(1.3) - normPdf(-1.3)) === 0);
    assert.ok(Math.abs(normPdf(1) - 0.24197072451914337) < 1e-16);
  });

  test('is the derivative of the cdf (central difference)', () => {
    for (const x of [-4, -1.5, -0.6, 0, 0.7, 2.5]) {
      const h = 1e-5;
      const fd = (normCdf(x + h) - normCdf(x - h)) / (2 * h);
      assert.ok(Math.abs(fd - normPdf(x)) < 1e-9, `at ${x}`);
    }
  });
});
