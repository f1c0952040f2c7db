/**
 * Seeded, deterministic model of several synthetic spot sources per underlying, for the simulated
 * index feed. Pure: no clock, no Math.random; the seed and `nowMs` are arguments, so the same seed
 * and the same sequence of `step` times give the same observations.
 *
 * Model (floats are allowed inside this file only; every emitted price goes through money.ts
 * `fromFloat` rounded half up to the underlying's `decimals`, default 2):
 *   - a shared "true" price per underlying: geometric random walk with annualised volatility σ and no
 *     drift in expectation: ln S ← ln S − σ²·dt/2 + σ·√dt·Z, dt = tickMs / (365·24·3600·1000) years,
 *     Z standard normal (Box–Muller over a mulberry32 PRNG);
 *   - each source reports S·(1 + noiseBps/10⁴·Z_source), independent noise (default 3 bp);
 *   - imperfections, drawn independently per source and tick: an outage (probability `outageProb`
 *     per tick to go down, `recoverProb` per tick to come back, so outages last 1/recoverProb ticks on
 *     average and the source's last ts goes stale), a missed tick (`skipProb`, the source is late),
 *     and rare outliers (`outlierProb`, default 1 in 2 000 reports, price × (1 ± outlierPct), 3 %)
 *     that the index clamp must absorb.
 * Each underlying and each (underlying, source) pair has its own PRNG stream derived from the seed and
 * the names, and every stream draws the same numbers per tick whatever happens, so adding a source or
 * changing a probability leaves the other paths unchanged.
 * `dt` comes from `tickMs`, not from the gap between `nowMs` values, so timer jitter does not change
 * the path. Tested in price-model.test.ts (determinism, plausibility over 100 000 ticks, outlier
 * rate, index accuracy against the true price).
 */
import { fromFloat } from '../../core/money.ts';
import type { PriceObservation } from './port.ts';

export interface UnderlyingModel {
  /** Starting true price (e.g. 97 000 for BTC). */
  start: number;
  /** Annualised volatility as a decimal (0.55 = 55 %). */
  annualVol: number;
  /** Fractional digits of emitted prices; default 2. */
  decimals?: number;
}

export interface PriceModelOptions {
  seed: number;
  underlyings: Readonly<Record<string, UnderlyingModel>>;
  /** Source names; default DEFAULT_SOURCES. */
  sources?: readonly string[];
  tickMs: number;
  /** Standard deviation of each source's independent noise, in bp; default 3. */
  noiseBps?: number;
  /** Per-tick probability that an available source misses the tick; default 0.02. */
  skipProb?: number;
  /** Per-tick probability that a source goes down; default 0.0005. */
  outageProb?: number;
  /** Per-tick probability that a down source comes back; default 0.05 (20 ticks on average). */
  recoverProb?: number;
  /** Per-report probability of an outlier; default 1/2000. */
  outlierProb?: number;
  /** Relative size of an outlier; default 0.03 (3 %). */
  outlierPct?: number;
}

export interface UnderlyingObservations {
  underlying: string;
  observations: PriceObservation[];
}

export interface PriceModel {
  /** Advances one tick and returns the reports of the available sources (underlyings with none omitted). */
  step(nowMs: number): UnderlyingObservations[];
  /** The current true price (a float; for tests and diagnostics). */
  truePrice(underlying: string): number;
}

export const DEFAULT_SOURCES: readonly string[] = [
  'coinbase-sim',
  'kraken-sim',
  'bitstamp-sim',
  'binance-sim',
];

export const DEFAULT_UNDERLYINGS: Readonly<Record<string, UnderlyingModel>> = {
  BTC: { start: 97_000, annualVol: 0.55, decimals: 2 },
  ETH: { start: 3_400, annualVol: 0.7, decimals: 2 },
};

const YEAR_MS = 365 * 24 * 3600 * 1000;

/** mulberry32: a small, fast 32-bit PRNG; uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A stream seed from the model seed and a label (FNV-1a over the label, mixed with the seed). */
function streamSeed(seed: number, label: string): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (let k = 0; k < label.length; k++) h = Math.imul(h ^ label.charCodeAt(k), 0x01000193);
  return h >>> 0;
}

/** Standard normals by Box–Muller (both values of each pair are used). */
function normals(uniform: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const z = spare;
      spare = null;
      return z;
    }
    const u1 = 1 - uniform(); // (0, 1], so the log is finite
    const u2 = uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    spare = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  };
}

interface SourceState {
  readonly name: string;
  readonly uniform: () => number;
  readonly normal: () => number;
  down: boolean;
}

interface UnderlyingState {
  readonly name: string;
  readonly vol: number;
  readonly decimals: number;
  readonly normal: () => number;
  logPrice: number;
  readonly sources: SourceState[];
}

function checkProbability(name: string, p: number): void {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`${name} must be a probability in [0, 1]`);
}

function validate(o: PriceModelOptions, sources: readonly string[]): void {
  if (!(o.tickMs > 0) || !Number.isFinite(o.tickMs)) throw new RangeError('tickMs must be positive');
  if (sources.length === 0 || new Set(sources).size !== sources.length) {
    throw new RangeError('sources must be a non-empty list of distinct names');
  }
  for (const [name, u] of Object.entries(o.underlyings)) {
    if (!(u.start > 0) || !Number.isFinite(u.start)) throw new RangeError(`${name}: start must be > 0`);
    if (!(u.annualVol >= 0) || !Number.isFinite(u.annualVol)) throw new RangeError(`${name}: bad annualVol`);
    const d = u.decimals ?? 2;
    if (!Number.isInteger(d) || d < 0 || d > 8) throw new RangeError(`${name}: decimals must be 0..8`);
  }
  for (const key of ['skipProb', 'outageProb', 'recoverProb', 'outlierProb'] as const) {
    checkProbability(key, o[key] ?? 0);
  }
  if (!((o.noiseBps ?? 0) >= 0) || !((o.outlierPct ?? 0) >= 0) || (o.outlierPct ?? 0) >= 1) {
    throw new RangeError('noiseBps must be >= 0 and outlierPct in [0, 1)');
  }
}

function initState(o: PriceModelOptions, sources: readonly string[]): UnderlyingState[] {
  return Object.entries(o.underlyings).map(([name, u]) => ({
    name,
    vol: u.annualVol,
    decimals: u.decimals ?? 2,
    normal: normals(mulberry32(streamSeed(o.seed, `walk:${name}`))),
    logPrice: Math.log(u.start),
    sources: sources.map((s) => {
      const uniform = mulberry32(streamSeed(o.seed, `source:${name}:${s}`));
      return { name: s, uniform, normal: normals(uniform), down: false };
    }),
  }));
}

/** Builds a model; see the file comment for the dynamics and the defaults. */
export function createPriceModel(o: PriceModelOptions): PriceModel {
  const sources = o.sources ?? DEFAULT_SOURCES;
  validate(o, sources);
  const p = {
    noise: (o.noiseBps ?? 3) / 10_000,
    skip: o.skipProb ?? 0.02,
    outage: o.outageProb ?? 0.0005,
    recover: o.recoverProb ?? 0.05,
    outlier: o.outlierProb ?? 1 / 2000,
    outlierPct: o.outlierPct ?? 0.03,
  };
  const dt = o.tickMs / YEAR_MS;
  const state = initState(o, sources);

  /** One source's report for this tick, or null; always draws five numbers. */
  type Report = PriceObservation | null;
  const report = (s: SourceState, truth: number, u: UnderlyingState, nowMs: number): Report => {
    const transition = s.uniform();
    const skip = s.uniform();
    const outlier = s.uniform();
    const side = s.uniform();
    const z = s.normal();
    s.down = s.down ? transition >= p.recover : transition < p.outage;
    if (s.down || skip < p.skip) return null;
    let x = truth * (1 + p.noise * z);
    if (outlier < p.outlier) x *= side < 0.5 ? 1 - p.outlierPct : 1 + p.outlierPct;
    const price = fromFloat(x, u.decimals, 'halfUp');
    return price === null || price <= 0n ? null : { source: s.name, price, ts: nowMs };
  };

  return {
    step(nowMs: number): UnderlyingObservations[] {
      const out: UnderlyingObservations[] = [];
      for (const u of state) {
        u.logPrice += -0.5 * u.vol * u.vol * dt + u.vol * Math.sqrt(dt) * u.normal();
        const truth = Math.exp(u.logPrice);
        const observations: PriceObservation[] = [];
        for (const s of u.sources) {
          const r = report(s, truth, u, nowMs);
          if (r !== null) observations.push(r);
        }
        if (observations.length > 0) out.push({ underlying: u.name, observations });
      }
      return out;
    },
    truePrice(underlying: string): number {
      const u = state.find((x) => x.name === underlying);
      if (u === undefined) throw new RangeError(`unknown underlying ${underlying}`);
      return Math.exp(u.logPrice);
    },
  };
}
