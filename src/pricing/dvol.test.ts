/**
 * Tests for dvol.ts: DVOL on hand-built quotes against a calculation tabulated by hand in this file
 * (strikes, ΔK and Q written out), a flat-vol surface priced with black76 (DVOL ≈ that vol), the
 * expiry picker, the null cases and the interquartile-mean smoother.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { black76 } from './black76.ts';
import { computeDvol, expiryVariance, interpolate30, iqmSmoother, pickDvolExpiries, sviVariance } from './dvol.ts';
import { sviTotalVariance } from './svi.ts';
import type { DvolExpiry, DvolOption } from './dvol.ts';

const DAY_MS = 86_400_000;
const NOW = 1_767_225_600_000; // 2026-01-01T00:00:00Z, any fixed instant works

function opts(type: 'call' | 'put', mids: Record<number, number>): DvolOption[] {
  return Object.entries(mids).map(([strike, mid]) => ({ strike: Number(strike), type, mid }));
}

/** Near expiry, 23 days, F 60 300 so K0 = 60 000. */
const NEAR: DvolExpiry = {
  expiryMs: NOW + 23 * DAY_MS,
  forward: 60_300,
  options: [
    // 56 000 has no bid (one miss: the walk continues to 55 000); ITM calls are ignored.
    ...opts('put', { 55_000: 120, 56_000: 0, 57_000: 300, 58_000: 450, 59_000: 700, 60_000: 1_050 }),
    ...opts('put', { 62_000: 2_340 }),
    // 63 000 and 64 000 have no bid: the walk stops there, so 65 000 is left out.
    ...opts('call', { 58_000: 2_750, 60_000: 1_350, 61_000: 950, 62_000: 640 }),
    ...opts('call', { 63_000: 0, 64_000: 0, 65_000: 90 }),
  ],
};

/** Far expiry, 37 days, F 60 800 so K0 = 60 000 (62 000 is above F). */
const FAR: DvolExpiry = {
  expiryMs: NOW + 37 * DAY_MS,
  forward: 60_800,
  options: [
    ...opts('put', { 56_000: 700, 58_000: 1_100, 60_000: 1_700 }),
    ...opts('call', { 60_000: 2_500, 62_000: 1_700, 64_000: 1_100, 66_000: 700 }),
  ],
};

describe('computeDvol on hand-built quotes', () => {
  test('matches the VIX formula evaluated term by term', () => {
    // [K, ΔK, Q] as read off the quotes above by hand.
    const nearTerms = [
      [55_000, 2_000, 120], // lowest strike: one-sided ΔK = 57 000 − 55 000
      [57_000, 1_500, 300], // (58 000 − 55 000)/2
      [58_000, 1_000, 450],
      [59_000, 1_000, 700],
      [60_000, 1_000, (1_050 + 1_350) / 2], // K0: average of put and call
      [61_000, 1_000, 950],
      [62_000, 1_000, 640], // highest strike used: one-sided
    ] as const;
    const farTerms = [
      [56_000, 2_000, 700],
      [58_000, 2_000, 1_100],
      [60_000, 2_000, (1_700 + 2_500) / 2],
      [62_000, 2_000, 1_700],
      [64_000, 2_000, 1_100],
      [66_000, 2_000, 700],
    ] as const;
    const T1 = 23 / 365;
    const T2 = 37 / 365;
    type Terms = readonly (readonly [number, number, number])[];
    const variance = (terms: Terms, T: number, F: number, K0: number) =>
      (2 / T) * terms.reduce((s, [K, dK, Q]) => s + (dK / (K * K)) * Q, 0) - (1 / T) * (F / K0 - 1) ** 2;
    const s1 = variance(nearTerms, T1, 60_300, 60_000);
    const s2 = variance(farTerms, T2, 60_800, 60_000);
    const N1 = 23 * 1_440;
    const N2 = 37 * 1_440;
    const nearWeight = (N2 - 43_200) / (N2 - N1);
    const farWeight = (43_200 - N1) / (N2 - N1);
    const s30 = (T1 * s1 * nearWeight + T2 * s2 * farWeight) * (525_600 / 43_200);
    const expected = 100 * Math.sqrt(s30);

    const res = computeDvol({ nowMs: NOW, near: NEAR, far: FAR });
    assert.ok(res);
    assert.ok(Math.abs(res.sigma2Near - s1) < 1e-12, `near ${res.sigma2Near} vs ${s1}`);
    assert.ok(Math.abs(res.sigma2Far - s2) < 1e-12, `far ${res.sigma2Far} vs ${s2}`);
    assert.ok(Math.abs(res.dvol - expected) < 1e-9, `dvol ${res.dvol} vs ${expected}`);
    assert.equal(res.nearExpiryMs, NEAR.expiryMs);
    assert.equal(res.farExpiryMs, FAR.expiryMs);
    // Sanity on the magnitude of the hand-built book: a plausible crypto vol.
    assert.ok(res.dvol > 20 && res.dvol < 120, `dvol ${res.dvol}`);
  });

});

describe('computeDvol on a model surface and bad inputs', () => {
  test('a flat-vol black76 surface gives DVOL ≈ that vol', () => {
    for (const vol of [0.3, 0.55, 0.9]) {
      const slice = (days: number, F: number): DvolExpiry => {
        const T = days / 365;
        const options: DvolOption[] = [];
        for (let K = 10_000; K <= 250_000; K += 1_000) {
          for (const type of ['call', 'put'] as const) {
            options.push({ strike: K, type, mid: black76({ F, K, T, sigma: vol, type }).price });
          }
        }
        return { expiryMs: NOW + days * DAY_MS, forward: F, options };
      };
      const res = computeDvol({ nowMs: NOW, near: slice(23, 60_300), far: slice(37, 60_800) });
      assert.ok(res);
      assert.ok(Math.abs(res.dvol - vol * 100) < 0.5, `vol ${vol}: dvol ${res.dvol}`);
    }
  });

  test('null when inputs are insufficient', () => {
    const oneStrike: DvolExpiry = { ...NEAR, options: opts('put', { 60_000: 1_000 }) };
    assert.equal(computeDvol({ nowMs: NOW, near: oneStrike, far: FAR }), null);
    const forwardBelowStrikes: DvolExpiry = { ...FAR, forward: 50_000 };
    assert.equal(computeDvol({ nowMs: NOW, near: NEAR, far: forwardBelowStrikes }), null);
    assert.equal(computeDvol({ nowMs: NOW, near: FAR, far: NEAR }), null);
    assert.equal(computeDvol({ nowMs: NEAR.expiryMs, near: NEAR, far: FAR }), null);
    const noMids: DvolExpiry = { ...FAR, options: FAR.options.map((o) => ({ ...o, mid: 0 })) };
    assert.equal(computeDvol({ nowMs: NOW, near: NEAR, far: noMids }), null);
    assert.equal(expiryVariance({ ...NEAR, forward: Number.NaN }, NOW), null);
  });
});

describe('pickDvolExpiries', () => {
  const e = (days: number) => NOW + days * DAY_MS;
  test('near is the last expiry under 30 days, far the first at or beyond', () => {
    const picked = pickDvolExpiries([e(2), e(9), e(23), e(37), e(65)], NOW);
    assert.deepEqual(picked, { nearMs: e(23), farMs: e(37) });
    const unsorted = pickDvolExpiries([e(65), e(30), e(29.9), e(-1)], NOW);
    assert.deepEqual(unsorted, { nearMs: e(29.9), farMs: e(30) });
  });
  test('null without an expiry on each side of 30 days', () => {
    assert.equal(pickDvolExpiries([e(2), e(9)], NOW), null);
    assert.equal(pickDvolExpiries([e(31), e(60)], NOW), null);
    assert.equal(pickDvolExpiries([], NOW), null);
  });
});

describe('iqmSmoother', () => {
  test('interquartile mean of the values of the last N periods', () => {
    const s = iqmSmoother(8, 1000);
    assert.equal(s.value(0), null);
    s.push(50, 0);
    assert.equal(s.value(0), 50);
    [1, 100, 52, 48, 51, 49, 1000].forEach((v, i) => s.push(v, (i + 1) * 1000));
    // Sorted: 1 48 49 50 51 52 100 1000; drop two at each end: mean(49, 50, 51, 52).
    assert.equal(s.value(7000), 50.5);
    s.push(Number.NaN, 8000);
    assert.equal(s.value(7000), 50.5);
    // The window rolls: 50 and 1 leave, 53 and 54 arrive.
    s.push(53, 8000);
    s.push(54, 9000);
    // Sorted: 48 49 51 52 53 54 100 1000; middle four 51 52 53 54.
    assert.equal(s.value(9000), 52.5);
  });

  test('one value per period: faster ticks do not shorten the window', () => {
    const s = iqmSmoother(4, 1000);
    s.push(10, 0);
    s.push(99, 10); // 10 ms later, same period: not kept
    s.push(20, 1000);
    assert.equal(s.value(1000), 15);
  });

  test('after a gap in the inputs the values from before it have left the window', () => {
    const s = iqmSmoother(120, 1000);
    for (let t = 0; t < 120_000; t += 1000) s.push(59.76, t);
    // Two hours without a value (an index outage), then the first raw value after it.
    s.push(86.19, 7_320_000);
    // Before (a window of the last 120 values, however old): 59.76.
    assert.equal(s.value(7_320_000), 86.19);
    assert.equal(s.value(7_500_000), null, 'nothing in the last 120 s');
  });

  test('default window is 120 one-second values and spikes do not move it', () => {
    const s = iqmSmoother();
    for (let i = 0; i < 200; i++) s.push(i % 10 === 0 ? 500 : 55 + (i % 3) * 0.1, i * 1000);
    const v = s.value(199_000);
    assert.ok(v !== null && Math.abs(v - 55.1) < 0.1, `${v}`);
    assert.throws(() => iqmSmoother(0), RangeError);
    assert.throws(() => iqmSmoother(120, 0), RangeError);
  });
});

describe('sviVariance: the variance of a fitted smile over all strikes', () => {
  const flat = (vol: number, T: number) => ({ a: vol * vol * T, b: 0, rho: 0, m: 0, sigma: 0.1 });

  test('a flat slice of any level and tenor returns its own volatility within 0.001 vol point', () => {
    for (const vol of [0.05, 0.3, 0.55, 1.2, 2.5]) {
      for (const days of [0.2, 1, 7, 30, 90, 365]) {
        const T = days / 365;
        const v = sviVariance(flat(vol, T), T);
        assert.ok(v !== null);
        assert.ok(Math.abs(100 * Math.sqrt(v) - 100 * vol) < 0.001, `${vol} at ${days} d: ${100 * Math.sqrt(v)}`);
      }
    }
  });

  test('a smile: agrees with the VIX sum over a dense, wide ladder, and exceeds the truncated one', () => {
    const T = 30 / 365;
    const svi = { a: 0.012, b: 0.09, rho: -0.35, m: 0.02, sigma: 0.12 };
    const F = 100_000;
    const ladder = (lo: number, hi: number, step: number): DvolExpiry => {
      const options: DvolOption[] = [];
      for (let K = lo; K <= hi; K += step) {
        const k = Math.log(K / F);
        const sigma = Math.sqrt(sviTotalVariance(svi, k) / T);
        for (const type of ['call', 'put'] as const) options.push({ strike: K, type, mid: black76({ F, K, T, sigma, type }).price });
      }
      return { expiryMs: NOW + 30 * DAY_MS, forward: F, options };
    };
    const integral = sviVariance(svi, T)!;
    const wide = expiryVariance(ladder(5_000, 1_000_000, 250), NOW)!;
    const narrow = expiryVariance(ladder(80_000, 116_000, 4_000), NOW)!;
    const vol = (s2: number) => 100 * Math.sqrt(s2);
    assert.ok(Math.abs(vol(integral) - vol(wide.sigma2)) < 0.05, `${vol(integral)} vs ${vol(wide.sigma2)}`);
    assert.ok(vol(narrow.sigma2) < vol(integral) - 1, `truncated ${vol(narrow.sigma2)} vs ${vol(integral)}`);
    // A variance index sits above the at-the-money vol in a smile with a minimum near the money.
    assert.ok(vol(integral) > 100 * Math.sqrt(sviTotalVariance(svi, 0) / T));
  });

  test('null without positive variance at the money or without time', () => {
    assert.equal(sviVariance({ a: 0, b: 0, rho: 0, m: 0, sigma: 0.1 }, 0.1), null);
    assert.equal(sviVariance(flat(0.5, 0.1), 0), null);
  });
});

describe('interpolate30', () => {
  test('two equal variances interpolate to themselves', () => {
    const v = { sigma2: 0.3025, T: 0 };
    const r = interpolate30({ ...v, T: 20 / 365, expiryMs: NOW + 20 * DAY_MS }, { ...v, T: 40 / 365, expiryMs: NOW + 40 * DAY_MS }, NOW)!;
    assert.ok(Math.abs(r.dvol - 55) < 1e-9, String(r.dvol));
  });
});
