/**
 * Tests for svi.ts: the mechanics.md 3.4 vector (w, IV and Durrleman g, checked with mpmath),
 * derivatives against finite differences, exact and noisy recovery by the quasi-explicit fit,
 * optimality of the box-constrained inner solve against random feasible points, the arbitrage
 * flags (Gatheral–Jacquier's Vogt slice, crossing calendar slices) and the repair path.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  butterflyArbitrageFree,
  calendarArbitrageFree,
  durrlemanG,
  fitSvi,
  sviCheckGrid,
  sviDerivatives,
  sviImpliedVol,
  sviTotalVariance,
} from './svi.ts';
import type { SviParams, SviPoint } from './svi.ts';

function close(actual: number, expected: number, tol: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: got ${actual}, want ${expected} ± ${tol}`);
}

/** Park–Miller minimal standard generator: deterministic noise for the fit tests. */
function prng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 16807) % 2147483647;
    return s / 2147483647;
  };
}

const VECTOR: SviParams = { a: 0.015, b: 0.05, rho: -0.1, m: 0, sigma: 0.1 };
/** Gatheral & Jacquier (2014), example 3.1 (due to Axel Vogt): g < 0 near k = 0.88. */
const VOGT: SviParams = { a: -0.041, b: 0.1331, rho: 0.306, m: 0.3586, sigma: 0.4153 };

const strikesK = (n: number, lo: number, hi: number): number[] =>
  Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1));

function exactPoints(p: SviParams, ks: readonly number[], weight = (_k: number) => 1): SviPoint[] {
  return ks.map((k) => ({ k, w: sviTotalVariance(p, k), weight: weight(k) }));
}

describe('SVI evaluation (mechanics.md 3.4)', () => {
  const T = 30 / 365;
  test('total variance and implied vol', () => {
    close(sviTotalVariance(VECTOR, 0), 0.02, 5e-7, 'w(0)');
    close(sviTotalVariance(VECTOR, -0.2), 0.02718, 5e-7, 'w(-0.2)');
    close(sviTotalVariance(VECTOR, 0.5), 0.037995, 5e-7, 'w(0.5)');
    close(sviImpliedVol(VECTOR, 0, T), 0.4933, 5e-5, 'IV(0)');
    close(sviImpliedVol(VECTOR, -0.2, T), 0.5751, 5e-5, 'IV(-0.2)');
    close(sviImpliedVol(VECTOR, 0.5, T), 0.6799, 5e-5, 'IV(0.5)');
  });

  test('Durrleman g', () => {
    close(durrlemanG(VECTOR, 0), 1.2497, 5e-5, 'g(0)');
    close(durrlemanG(VECTOR, -0.5), 0.4551, 5e-5, 'g(-0.5)');
    // mpmath: g(0) = 1.2496859375, g(-0.5) = 0.455108729788657.
    close(durrlemanG(VECTOR, 0), 1.2496859375, 1e-12, 'g(0) full precision');
  });

  test('derivatives match central differences', () => {
    for (const p of [VECTOR, VOGT]) {
      for (const k of [-1, -0.3, 0, 0.2, 0.9]) {
        const h = 1e-4;
        const d = sviDerivatives(p, k);
        const wp = sviTotalVariance(p, k + h);
        const wm = sviTotalVariance(p, k - h);
        close(d.w, sviTotalVariance(p, k), 0, 'w');
        close(d.w1, (wp - wm) / (2 * h), 1e-8, `w' at ${k}`);
        close(d.w2, (wp - 2 * d.w + wm) / (h * h), 1e-5, `w'' at ${k}`);
      }
    }
  });
});

describe('arbitrage checks', () => {
  const grid = strikesK(401, -2, 2);
  test('the test vector is butterfly-free; the Vogt slice is flagged', () => {
    assert.equal(butterflyArbitrageFree(VECTOR, grid), true);
    assert.ok(durrlemanG(VOGT, 0.88) < 0);
    assert.equal(butterflyArbitrageFree(VOGT, grid), false);
  });

  test('calendar check passes ordered slices and flags crossing ones', () => {
    const later: SviParams = { ...VECTOR, a: VECTOR.a + 0.01 };
    assert.equal(calendarArbitrageFree(VECTOR, later, grid), true);
    assert.equal(calendarArbitrageFree(later, VECTOR, grid), false);
    assert.equal(calendarArbitrageFree(VECTOR, VECTOR, grid), true);
    // Same ATM variance, steeper skew: the slices cross, so neither order is arbitrage-free.
    const skewed: SviParams = { a: 0.012, b: 0.08, rho: -0.5, m: 0, sigma: 0.1 };
    close(sviTotalVariance(skewed, 0), 0.02, 1e-12, 'skewed ATM');
    assert.equal(calendarArbitrageFree(VECTOR, skewed, grid), false);
    assert.equal(calendarArbitrageFree(skewed, VECTOR, grid), false);
  });
});

const generators: SviParams[] = [
  VECTOR,
  { a: 0.04, b: 0.4, rho: -0.6, m: 0.1, sigma: 0.3 },
  { a: 0.002, b: 0.12, rho: 0.3, m: -0.05, sigma: 0.05 },
  { a: 0.1, b: 0.25, rho: -0.3, m: 0.2, sigma: 0.6 },
];

describe('fitSvi recovery', () => {

  test('recovers the generating parameters from exact points', () => {
    for (const gen of generators) {
      const pts = exactPoints(gen, strikesK(30, -0.6, 0.6));
      const fit = fitSvi(pts);
      assert.ok(fit);
      for (const key of ['a', 'b', 'rho', 'm', 'sigma'] as const) {
        close(fit.params[key], gen[key], 1e-4, `${key} of ${JSON.stringify(gen)}`);
      }
      assert.ok(fit.maxAbsError < 1e-8, `residual ${fit.maxAbsError}`);
      assert.ok(fit.rmse < 1e-8);
      assert.equal(fit.arbitrageFree, true);
      assert.equal(fit.repaired, false);
      assert.ok(butterflyArbitrageFree(fit.params, sviCheckGrid(pts)));
    }
  });

  test('recovers with uneven weights and from a warm start', () => {
    const gen = generators[1]!;
    const pts = exactPoints(gen, strikesK(25, -0.5, 0.7), (k) => Math.exp(-4 * k * k));
    const fit = fitSvi(pts, { warmStart: { ...gen, m: gen.m + 0.05, sigma: gen.sigma * 1.3 } });
    assert.ok(fit);
    close(fit.params.rho, gen.rho, 1e-4, 'rho');
    close(fit.params.sigma, gen.sigma, 1e-4, 'sigma');
    assert.ok(fit.maxAbsError < 1e-8);
  });

  test('noisy points: error stays at the noise level and the slice stays arbitrage-free', () => {
    const rand = prng(42);
    const T = 30 / 365;
    for (const gen of generators) {
      const pts = exactPoints(gen, strikesK(30, -0.6, 0.6)).map((p) => ({
        ...p,
        w: p.w * (1 + 0.02 * (rand() - 0.5)), // ±1 % in variance, about ±0.5 % in vol
      }));
      const fit = fitSvi(pts);
      assert.ok(fit);
      const noiseRms = pts.reduce((s, p) => s + p.w * p.w, 0) / pts.length;
      assert.ok(fit.rmse <= 0.01 * Math.sqrt(noiseRms), `rmse ${fit.rmse}`);
      for (const k of strikesK(13, -0.6, 0.6)) {
        const err = Math.abs(sviImpliedVol(fit.params, k, T) - sviImpliedVol(gen, k, T));
        assert.ok(err < 0.01, `IV error ${err} at k ${k} for ${JSON.stringify(gen)}`);
      }
      assert.equal(fit.arbitrageFree, true);
      assert.ok(butterflyArbitrageFree(fit.params, sviCheckGrid(pts)));
    }
  });

});

describe('fitSvi constraints, repair and input handling', () => {
  test('inner solve is optimal on the box: no random feasible (a, c, d) does better', () => {
    const arbPts = fc.array(
      fc.record({
        k: fc.double({ min: -0.8, max: 0.8, noNaN: true }),
        w: fc.double({ min: 0.001, max: 0.3, noNaN: true }),
      }),
      { minLength: 5, maxLength: 20 },
    );
    fc.assert(
      fc.property(arbPts, fc.integer({ min: 1, max: 1_000_000 }), (raw, seed) => {
        const pts = raw.map((p) => ({ ...p, weight: 1 }));
        const fit = fitSvi(pts, { maxIterations: 60 });
        assert.ok(fit);
        const { a, b, rho, m, sigma } = fit.params;
        const c = b * sigma;
        const d = rho * c;
        const maxW = Math.max(...pts.map((p) => p.w));
        const eps = 1e-9;
        assert.ok(a >= -eps && a <= maxW + eps && c >= -eps && c <= 4 * sigma + eps);
        assert.ok(Math.abs(d) <= Math.min(c, 4 * sigma - c) + eps);
        assert.equal(fit.arbitrageFree, true);
        if (fit.repaired) return;
        const sse = (aa: number, cc: number, dd: number): number =>
          pts.reduce((s, p) => {
            const y = (p.k - m) / sigma;
            const r = aa + dd * y + cc * Math.sqrt(y * y + 1) - p.w;
            return s + r * r;
          }, 0);
        const best = sse(a, c, d);
        const rand = prng(seed);
        for (let i = 0; i < 200; i++) {
          const cc = 4 * sigma * rand();
          const dd = (2 * rand() - 1) * Math.min(cc, 4 * sigma - cc);
          assert.ok(sse(maxW * rand(), cc, dd) >= best - 1e-12 * (1 + best));
        }
      }),
      { numRuns: 60 },
    );
  });

  test('an arbitrageable least-squares slice is repaired toward a flat slice', () => {
    // Wing slopes ±3 exceed Lee's bound of 2, so g < 0 in the wings; the box (slopes <= 4) admits it.
    const steep: SviParams = { a: 0.01, b: 3, rho: 0, m: 0, sigma: 0.05 };
    const pts = exactPoints(steep, strikesK(30, -0.6, 0.6));
    assert.equal(butterflyArbitrageFree(steep, sviCheckGrid(pts)), false);
    const fit = fitSvi(pts);
    assert.ok(fit);
    assert.equal(fit.repaired, true);
    assert.equal(fit.arbitrageFree, true);
    assert.ok(butterflyArbitrageFree(fit.params, sviCheckGrid(pts)));
    close(sviTotalVariance(fit.params, 0), sviTotalVariance(steep, 0), 1e-8, 'ATM variance kept');
    assert.ok(fit.params.b < steep.b);
  });

  test('null with fewer than 5 usable points; unusable points are ignored', () => {
    const pts = exactPoints(VECTOR, strikesK(4, -0.3, 0.3));
    assert.equal(fitSvi(pts), null);
    const junk: SviPoint[] = [
      { k: 0.1, w: -1, weight: 1 },
      { k: Number.NaN, w: 0.02, weight: 1 },
      { k: 0.2, w: 0.02, weight: 0 },
    ];
    assert.equal(fitSvi([...pts, ...junk]), null);
    const fit = fitSvi([...exactPoints(VECTOR, strikesK(9, -0.4, 0.4)), ...junk]);
    assert.ok(fit && fit.maxAbsError < 1e-8);
  });
});
