/**
 * Micro-benchmark of a full option-board recompute in src/pricing: 16 expiries × 30 strikes
 * (2 underlyings × 8 expiries), i.e. implied vols from noisy book mids, one quasi-explicit SVI fit per
 * expiry, then ~1000 Black-76 prices with Greeks from the fitted smiles, plus DVOL.
 *
 * Quotes come from known SVI slices with seeded multiplicative noise (deterministic run to run).
 * Prints the median and worst time of each stage over the timed rounds after a warm-up, and the
 * median fit RMSE (in total variance) so speed is never bought with a worse fit.
 * Run: node --import tsx bench/pricing/board-fit.bench.ts
 */
import { black76, impliedVol } from '../../src/pricing/black76.ts';
import type { OptionType } from '../../src/pricing/black76.ts';
import { computeDvol, interpolate30, pickDvolExpiries, sviVariance } from '../../src/pricing/dvol.ts';
import type { DvolExpiry } from '../../src/pricing/dvol.ts';
import { fitSvi, sviTotalVariance } from '../../src/pricing/svi.ts';
import type { SviFit, SviParams, SviPoint } from '../../src/pricing/svi.ts';

const DAY_MS = 86_400_000;
const NOW = 1_767_225_600_000;
const EXPIRY_DAYS = [1, 2, 7, 14, 23, 37, 65, 93];
const UNDERLYINGS = [{ F: 60_000 }, { F: 3_000 }];
const STRIKES_PER_EXPIRY = 30;
const WARMUP = 5;
const ROUNDS = 30;

function prng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 16807) % 2147483647;
    return s / 2147483647;
  };
}

interface Slice {
  F: number;
  T: number;
  expiryMs: number;
  strikes: number[];
  /** Noisy book mid per strike and type. */
  mids: Map<string, number>;
}

function makeBoard(): Slice[] {
  const rand = prng(7);
  const slices: Slice[] = [];
  for (const { F } of UNDERLYINGS) {
    for (const days of EXPIRY_DAYS) {
      const T = days / 365;
      const atm = 0.55 * 0.55 * T;
      const gen: SviParams = { a: atm * 0.6, b: 0.4 * Math.sqrt(T), rho: -0.3, m: 0.02, sigma: 0.1 };
      const width = 4 * Math.sqrt(atm);
      const strikes = Array.from({ length: STRIKES_PER_EXPIRY }, (_, i) =>
        Math.round(F * Math.exp(-width + (2 * width * i) / (STRIKES_PER_EXPIRY - 1))),
      );
      const mids = new Map<string, number>();
      for (const K of strikes) {
        const sigma = Math.sqrt(sviTotalVariance(gen, Math.log(K / F)) / T);
        for (const type of ['call', 'put'] as OptionType[]) {
          const p = black76({ F, K, T, sigma, type }).price;
          mids.set(`${K}${type}`, p * (1 + 0.01 * (rand() - 0.5)));
        }
      }
      slices.push({ F, T, expiryMs: NOW + days * DAY_MS, strikes, mids });
    }
  }
  return slices;
}

function sviPoints(s: Slice): SviPoint[] {
  const points: SviPoint[] = [];
  for (const K of s.strikes) {
    const type: OptionType = K >= s.F ? 'call' : 'put';
    const iv = impliedVol({ price: s.mids.get(`${K}${type}`)!, F: s.F, K, T: s.T, type });
    if (iv === null) continue;
    const { vega } = black76({ F: s.F, K, T: s.T, sigma: iv, type });
    points.push({ k: Math.log(K / s.F), w: iv * iv * s.T, weight: vega });
  }
  return points;
}

function priceBoard(slices: Slice[], fits: (SviFit | null)[]): number {
  let checksum = 0;
  slices.forEach((s, i) => {
    const fit = fits[i];
    if (!fit) return;
    for (const K of s.strikes) {
      const sigma = Math.sqrt(sviTotalVariance(fit.params, Math.log(K / s.F)) / s.T);
      for (const type of ['call', 'put'] as OptionType[]) {
        checksum += black76({ F: s.F, K, T: s.T, sigma, type }).delta;
      }
    }
  });
  return checksum;
}

/** DVOL as the board computes it: each expiry's fitted slice integrated over all strikes (svi-variance). */
function dvol(slices: Slice[], fits: (SviFit | null)[]): number | null {
  const first = slices.map((s, i) => ({ s, fit: fits[i] })).filter((x) => x.s.F === UNDERLYINGS[0]!.F && x.fit);
  const pick = pickDvolExpiries(first.map((x) => x.s.expiryMs), NOW);
  if (!pick) return null;
  const variance = (ms: number) => {
    const { s, fit } = first.find((x) => x.s.expiryMs === ms)!;
    const sigma2 = sviVariance(fit!.params, s.T);
    return sigma2 === null ? null : { sigma2, T: s.T, expiryMs: ms };
  };
  const near = variance(pick.nearMs);
  const far = variance(pick.farMs);
  return near && far ? interpolate30(near, far, NOW)?.dvol ?? null : null;
}

/** The VIX sum over the listed ladder's book mids, for comparison (truncated at the ladder's ends). */
function ladderDvol(slices: Slice[]): number | null {
  const first = slices.filter((s) => s.F === UNDERLYINGS[0]!.F);
  const pick = pickDvolExpiries(first.map((s) => s.expiryMs), NOW);
  if (!pick) return null;
  const toDvol = (ms: number): DvolExpiry => {
    const s = first.find((x) => x.expiryMs === ms)!;
    const options = s.strikes.flatMap((K) =>
      (['call', 'put'] as OptionType[]).map((type) => ({ strike: K, type, mid: s.mids.get(`${K}${type}`)! })),
    );
    return { expiryMs: ms, forward: s.F, options };
  };
  return computeDvol({ nowMs: NOW, near: toDvol(pick.nearMs), far: toDvol(pick.farMs) })?.dvol ?? null;
}

function stats(xs: number[]): string {
  const sorted = [...xs].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  return `median ${median.toFixed(2)} ms, max ${sorted.at(-1)!.toFixed(2)} ms`;
}

function main(): void {
  const slices = makeBoard();
  const times: Record<'iv' | 'fit' | 'price' | 'dvol' | 'total', number[]> = {
    iv: [],
    fit: [],
    price: [],
    dvol: [],
    total: [],
  };
  let fits: (SviFit | null)[] = [];
  let dv: number | null = null;
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    const t0 = performance.now();
    const points = slices.map(sviPoints);
    const t1 = performance.now();
    // Warm start from the previous round's fit, as the live board does.
    const prev = fits;
    fits = points.map((p, i) => fitSvi(p, prev[i] ? { warmStart: prev[i]!.params } : {}));
    const t2 = performance.now();
    priceBoard(slices, fits);
    const t3 = performance.now();
    dv = dvol(slices, fits);
    const t4 = performance.now();
    if (round < WARMUP) continue;
    times.iv.push(t1 - t0);
    times.fit.push(t2 - t1);
    times.price.push(t3 - t2);
    times.dvol.push(t4 - t3);
    times.total.push(t4 - t0);
  }
  const coldStart = performance.now();
  slices.map(sviPoints).forEach((p) => fitSvi(p));
  const cold = performance.now() - coldStart;

  const options = slices.length * STRIKES_PER_EXPIRY * 2;
  const rmses = fits.map((f) => f?.rmse ?? Number.NaN).sort((a, b) => a - b);
  console.log(`board: ${slices.length} expiries x ${STRIKES_PER_EXPIRY} strikes, ${options} options`);
  console.log(`implied vols (${slices.length * STRIKES_PER_EXPIRY}): ${stats(times.iv)}`);
  console.log(`SVI fits, warm-started (${slices.length}): ${stats(times.fit)}`);
  console.log(`SVI fits, cold (${slices.length}), one run: ${cold.toFixed(2)} ms`);
  console.log(`Black-76 + Greeks (${options}): ${stats(times.price)}`);
  console.log(`DVOL (svi-variance): ${stats(times.dvol)} (value ${dv?.toFixed(2)}; the VIX sum over the listed ladder: ${ladderDvol(slices)?.toFixed(2)})`);
  console.log(`full recompute: ${stats(times.total)}`);
  console.log(`fit rmse (total variance): median ${rmses[rmses.length >> 1]!.toExponential(2)}, ` +
    `max ${rmses.at(-1)!.toExponential(2)}; repaired ${fits.filter((f) => f?.repaired).length}`);
}

main();
