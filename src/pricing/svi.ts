/**
 * Raw SVI smile per expiry: evaluation, derivatives, static-arbitrage checks and a robust fit.
 *
 * Raw SVI (Gatheral 2004; Gatheral & Jacquier 2014, "Arbitrage-free SVI volatility surfaces"):
 * total variance w(k) = a + b[ρ(k − m) + √((k − m)² + σ²)] in log-moneyness k = ln(K/F), IV = √(w/T).
 * Butterfly arbitrage is absent where Durrleman's g(k) = (1 − k·w′/(2w))² − (w′²/4)(1/w + 1/4) + w″/2
 * is non-negative (Gatheral–Jacquier 2014, section 2; note w″/2, not w″²); calendar arbitrage is absent
 * when w(k, T1) <= w(k, T2) for every k.
 *
 * The fit is the quasi-explicit method (Zeliade Systems white paper, 2009; De Marco & Martini): with
 * y = (k − m)/σ, w = a + d·y + c·√(y² + 1) where c = bσ, d = ρbσ is linear in (a, c, d), so for fixed
 * (m, σ) the best (a, c, d) is a weighted least-squares problem on the box 0 <= c <= 4σ,
 * |d| <= min(c, 4σ − c), 0 <= a <= max w (slopes |w′| <= 4, Rogers–Tehranchi), solved exactly by
 * enumerating active sets (unconstrained optimum, faces, edges, corners) and keeping the KKT point.
 * An outer Nelder–Mead searches (m, ln σ) with σ ∈ [0.005, 10] and m in an interval twice as wide as
 * the quoted k range around its centre, from several deterministic starts plus an optional warm start.
 *
 * Repair: after the fit g(k) is checked on a grid over the data range ± 3 standard deviations
 * (√ of the largest quoted total variance). If it fails, the slice is shrunk toward the flat slice with
 * the same ATM total variance, w_t = (1 − t)·w + t·w(0), which is again raw SVI (b scaled by 1 − t, a
 * moved toward w(0)) and is arbitrage-free at t = 1 (w′ = w″ = 0, g = 1); bisection on t finds a small
 * passing t (to 2^-40).
 * This keeps the ATM level and dampens skew and curvature, and the result reports `repaired`.
 *
 * Pure floating-point code, no state. Tested in svi.test.ts (mechanics.md 3.4 vector, exact and noisy
 * recovery, arbitrage flags and the repair path).
 */

export interface SviParams {
  a: number;
  b: number;
  rho: number;
  m: number;
  sigma: number;
}

export interface SviPoint {
  /** Log-moneyness ln(K/F). */
  k: number;
  /** Market total variance IV²·T. */
  w: number;
  /** Non-negative weight (e.g. normalised vega or 1/spread²); points with weight 0 are ignored. */
  weight: number;
}

export interface SviFitOptions {
  /** Previous fit of the same expiry, used as an extra Nelder–Mead start. */
  warmStart?: SviParams;
  /** Nelder–Mead iteration cap per start (default 300). */
  maxIterations?: number;
}

export interface SviFit {
  params: SviParams;
  /** Unweighted root-mean-square error in total variance over the points used. */
  rmse: number;
  /** Largest absolute total-variance residual over the points used. */
  maxAbsError: number;
  /** g(k) >= 0 on the check grid (after repair, if one was needed). */
  arbitrageFree: boolean;
  /** True when the least-squares slice failed the check and was shrunk toward a flat slice. */
  repaired: boolean;
}

export function sviTotalVariance(p: SviParams, k: number): number {
  const x = k - p.m;
  return p.a + p.b * (p.rho * x + Math.sqrt(x * x + p.sigma * p.sigma));
}

/** w, w′ and w″ at k. */
export function sviDerivatives(p: SviParams, k: number): { w: number; w1: number; w2: number } {
  const x = k - p.m;
  const s2 = p.sigma * p.sigma;
  const root = Math.sqrt(x * x + s2);
  return {
    w: p.a + p.b * (p.rho * x + root),
    w1: p.b * (p.rho + x / root),
    w2: (p.b * s2) / (root * root * root),
  };
}

/** Implied volatility √(w(k)/T); 0 when the total variance is not positive. */
export function sviImpliedVol(p: SviParams, k: number, T: number): number {
  const w = sviTotalVariance(p, k);
  return w > 0 && T > 0 ? Math.sqrt(w / T) : 0;
}

/** Durrleman's density function g(k); the risk-neutral density is non-negative where g >= 0. */
export function durrlemanG(p: SviParams, k: number): number {
  const { w, w1, w2 } = sviDerivatives(p, k);
  const u = 1 - (k * w1) / (2 * w);
  return u * u - ((w1 * w1) / 4) * (1 / w + 0.25) + w2 / 2;
}

/** True when w > 0 and g(k) >= 0 at every grid point. */
export function butterflyArbitrageFree(p: SviParams, kGrid: readonly number[]): boolean {
  for (const k of kGrid) {
    if (!(sviTotalVariance(p, k) > 0) || !(durrlemanG(p, k) >= 0)) return false;
  }
  return true;
}

/** Total variance may not fall from the shorter to the longer expiry: w1(k) <= w2(k) on the grid. */
export function calendarArbitrageFree(
  paramsShort: SviParams,
  paramsLong: SviParams,
  kGrid: readonly number[],
): boolean {
  for (const k of kGrid) {
    const w1 = sviTotalVariance(paramsShort, k);
    const w2 = sviTotalVariance(paramsLong, k);
    // A relative 1e-12 allowance lets two identical slices pass despite rounding.
    if (!(w1 <= w2 + 1e-12 * Math.abs(w2))) return false;
  }
  return true;
}

/**
 * The grid the fit checks g on: 121 points over [kMin − 3s, kMax + 3s], s = √(max w) being one
 * standard deviation of log-moneyness at expiry.
 */
export function sviCheckGrid(points: readonly { k: number; w: number }[]): number[] {
  let kMin = Infinity;
  let kMax = -Infinity;
  let wMax = 0;
  for (const p of points) {
    kMin = Math.min(kMin, p.k);
    kMax = Math.max(kMax, p.k);
    wMax = Math.max(wMax, p.w);
  }
  if (!(kMin <= kMax)) return [];
  const sd = Math.sqrt(wMax);
  const lo = kMin - 3 * sd;
  const hi = kMax + 3 * sd;
  const n = 121;
  return Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1));
}

// ---------------------------------------------------------------------------------------------
// Inner problem: box-constrained weighted least squares in x = (a, c, d) for fixed (m, σ).
// ---------------------------------------------------------------------------------------------

/** Constraint rows G·x <= h over (a, c, d); h is [0, A, 0, 0, 4σ, 4σ] (see `bounds`). */
const G: readonly (readonly [number, number, number])[] = [
  [-1, 0, 0], // a >= 0
  [1, 0, 0], // a <= max w
  [0, -1, 1], // d <= c
  [0, -1, -1], // −d <= c
  [0, 1, 1], // d <= 4σ − c
  [0, 1, -1], // −d <= 4σ − c
];

/** Every active set of at most three constraints, smallest first (1 + 6 + 15 + 20 = 42). */
const ACTIVE_SETS: readonly (readonly number[])[] = (() => {
  const sets: number[][] = [[]];
  for (let i = 0; i < 6; i++) sets.push([i]);
  for (let i = 0; i < 6; i++) for (let j = i + 1; j < 6; j++) sets.push([i, j]);
  for (let i = 0; i < 6; i++) {
    for (let j = i + 1; j < 6; j++) for (let l = j + 1; l < 6; l++) sets.push([i, j, l]);
  }
  return sets;
})();

/**
 * Weighted normal equations (objective x′Mx − 2·bᵀx + const, M row-major 3×3), the bounds h, the
 * solution x and scratch space for the KKT solves, allocated once per fit so that the inner loop,
 * run a few hundred times per fit, allocates nothing.
 */
interface Normal {
  M: Float64Array;
  b: Float64Array;
  h: Float64Array;
  x: Float64Array;
  kktMat: Float64Array;
  kktRhs: Float64Array;
}

function newNormal(): Normal {
  return {
    M: new Float64Array(9),
    b: new Float64Array(3),
    h: new Float64Array(6),
    x: new Float64Array(3),
    kktMat: new Float64Array(36),
    kktRhs: new Float64Array(6),
  };
}

/** Solves the n×n system in `mat` (row-major, destroyed) for `rhs` in place; false if singular. */
function gaussSolve(mat: Float64Array, rhs: Float64Array, n: number): boolean {
  for (let col = 0; col < n; col++) {
    let piv = col;
    for (let r = col + 1; r < n; r++) {
      if (Math.abs(mat[r * n + col]!) > Math.abs(mat[piv * n + col]!)) piv = r;
    }
    const pv = mat[piv * n + col]!;
    if (Math.abs(pv) < 1e-300) return false;
    if (piv !== col) {
      for (let c = 0; c < n; c++) {
        const t = mat[col * n + c]!;
        mat[col * n + c] = mat[piv * n + c]!;
        mat[piv * n + c] = t;
      }
      const t = rhs[col]!;
      rhs[col] = rhs[piv]!;
      rhs[piv] = t;
    }
    for (let r = col + 1; r < n; r++) {
      const f = mat[r * n + col]! / pv;
      if (f === 0) continue;
      for (let c = col; c < n; c++) mat[r * n + c]! -= f * mat[col * n + c]!;
      rhs[r]! -= f * rhs[col]!;
    }
  }
  for (let r = n - 1; r >= 0; r--) {
    let s = rhs[r]!;
    for (let c = r + 1; c < n; c++) s -= mat[r * n + c]! * rhs[c]!;
    rhs[r] = s / mat[r * n + r]!;
  }
  return true;
}

/**
 * Minimiser of the quadratic restricted to the active constraints (KKT system
 * [M Gᴬᵀ; Gᴬ 0][x; λ] = [b; hᴬ]); writes x and λ into nq.kktRhs and returns false if singular.
 */
function solveActive(nq: Normal, active: readonly number[]): boolean {
  const { kktMat, kktRhs } = nq;
  const n = 3 + active.length;
  kktMat.fill(0, 0, n * n);
  for (let i = 0; i < 3; i++) {
    for (let j = 0; j < 3; j++) kktMat[i * n + j] = nq.M[i * 3 + j]!;
    kktRhs[i] = nq.b[i]!;
  }
  for (let idx = 0; idx < active.length; idx++) {
    const ci = active[idx]!;
    const row = G[ci]!;
    for (let j = 0; j < 3; j++) {
      kktMat[(3 + idx) * n + j] = row[j]!;
      kktMat[j * n + 3 + idx] = row[j]!;
    }
    kktRhs[3 + idx] = nq.h[ci]!;
  }
  return gaussSolve(kktMat, kktRhs, n);
}

function quadValue(nq: Normal, x0: number, x1: number, x2: number): number {
  const M = nq.M;
  const r0 = M[0]! * x0 + M[1]! * x1 + M[2]! * x2;
  const r1 = M[3]! * x0 + M[4]! * x1 + M[5]! * x2;
  const r2 = M[6]! * x0 + M[7]! * x1 + M[8]! * x2;
  return x0 * r0 + x1 * r1 + x2 * r2 - 2 * (nq.b[0]! * x0 + nq.b[1]! * x1 + nq.b[2]! * x2);
}

/**
 * Exact solution of the box-constrained quadratic program by active-set enumeration, into nq.x.
 * The unconstrained optimum (empty active set) comes first and is usually the answer.
 */
function solveBox(nq: Normal, maxW: number, sigma: number): void {
  const { h, x, kktRhs } = nq;
  h[1] = maxW;
  h[4] = 4 * sigma;
  h[5] = 4 * sigma;
  const feasTol = 1e-12 * (1 + maxW + 4 * sigma);
  const lamTol = 1e-12 * (1 + Math.abs(nq.b[0]!) + Math.abs(nq.b[1]!) + Math.abs(nq.b[2]!));
  let bestObj = Infinity;
  x.fill(0);
  for (const active of ACTIVE_SETS) {
    if (!solveActive(nq, active)) continue;
    const x0 = kktRhs[0]!;
    const x1 = kktRhs[1]!;
    const x2 = kktRhs[2]!;
    let feasible = true;
    for (let i = 0; i < 6 && feasible; i++) {
      const row = G[i]!;
      feasible = row[0] * x0 + row[1] * x1 + row[2] * x2 <= h[i]! + feasTol;
    }
    if (!feasible) continue;
    // A feasible point whose multipliers are all >= 0 satisfies KKT: for this strictly convex
    // problem it is the unique optimum, so the enumeration can stop. Otherwise keep the best
    // feasible point seen, which guards against multipliers lost to rounding.
    let kkt = true;
    for (let idx = 0; idx < active.length; idx++) if (kktRhs[3 + idx]! < -lamTol) kkt = false;
    const obj = kkt ? -Infinity : quadValue(nq, x0, x1, x2);
    if (obj < bestObj) {
      bestObj = obj;
      x[0] = x0;
      x[1] = x1;
      x[2] = x2;
    }
    if (kkt) return;
  }
}

/** Points prepared once per fit: columns, normalised weights and the a upper bound. */
interface FitData {
  k: Float64Array;
  w: Float64Array;
  wt: Float64Array;
  maxW: number;
  y: Float64Array;
  z: Float64Array;
  nq: Normal;
}

/**
 * Best (a, c, d) for fixed (m, σ), left in data.nq.x, and the weighted residual sum of squares it
 * leaves (computed from the residuals, not from the normal equations, to avoid cancellation).
 */
function innerFit(data: FitData, m: number, sigma: number): number {
  const { k, w, wt, y, z, nq } = data;
  const M = nq.M;
  const b = nq.b;
  M.fill(0);
  b.fill(0);
  for (let i = 0; i < k.length; i++) {
    const yi = (k[i]! - m) / sigma;
    const zi = Math.sqrt(yi * yi + 1);
    y[i] = yi;
    z[i] = zi;
    const q = wt[i]!;
    M[0]! += q;
    M[1]! += q * zi;
    M[2]! += q * yi;
    M[4]! += q * zi * zi;
    M[5]! += q * zi * yi;
    M[8]! += q * yi * yi;
    b[0]! += q * w[i]!;
    b[1]! += q * zi * w[i]!;
    b[2]! += q * yi * w[i]!;
  }
  M[3] = M[1]!;
  M[6] = M[2]!;
  M[7] = M[5]!;
  // A ridge of 1e-13 of the trace keeps M invertible when the columns are nearly collinear
  // (σ much wider than the quoted range) without moving well-posed solutions measurably.
  const ridge = 1e-13 * (M[0]! + M[4]! + M[8]!);
  M[0]! += ridge;
  M[4]! += ridge;
  M[8]! += ridge;
  solveBox(nq, data.maxW, sigma);
  const a = nq.x[0]!;
  const c = nq.x[1]!;
  const d = nq.x[2]!;
  let sse = 0;
  for (let i = 0; i < k.length; i++) {
    const r = a + d * y[i]! + c * z[i]! - w[i]!;
    sse += wt[i]! * r * r;
  }
  return sse;
}

// ---------------------------------------------------------------------------------------------
// Outer problem: Nelder–Mead over (m, ln σ) inside a box.
// ---------------------------------------------------------------------------------------------

type Vec2 = [number, number];

interface Box {
  lo: Vec2;
  hi: Vec2;
}

function clampToBox(x: Vec2, box: Box): Vec2 {
  return [
    Math.min(Math.max(x[0], box.lo[0]), box.hi[0]),
    Math.min(Math.max(x[1], box.lo[1]), box.hi[1]),
  ];
}

/**
 * Nelder–Mead (1965) in two dimensions with the standard coefficients (reflect 1, expand 2,
 * contract ½, shrink ½). Trial points are projected onto the box, which keeps σ and m in range.
 * Stops when the simplex is smaller than `xtol` in both coordinates, when its values agree, or after
 * `maxIter` steps.
 */
function nelderMead(f: (x: Vec2) => number, start: Vec2, step: Vec2, box: Box, maxIter: number): Vec2 {
  const xtol = 1e-10;
  const s0 = clampToBox(start, box);
  const pts: Vec2[] = [
    s0,
    clampToBox([s0[0] + step[0], s0[1]], box),
    clampToBox([s0[0], s0[1] + step[1]], box),
  ];
  const vals = pts.map(f);
  const trial = (from: Vec2, centroid: Vec2, coef: number): Vec2 =>
    clampToBox(
      [centroid[0] + coef * (from[0] - centroid[0]), centroid[1] + coef * (from[1] - centroid[1])],
      box,
    );
  for (let iter = 0; iter < maxIter; iter++) {
    const order = [0, 1, 2].sort((i, j) => vals[i]! - vals[j]!);
    const [ib, im, iw] = order as [number, number, number];
    const best = pts[ib]!;
    const worst = pts[iw]!;
    const spread = Math.max(Math.abs(pts[im]![0] - best[0]), Math.abs(worst[0] - best[0]),
      Math.abs(pts[im]![1] - best[1]), Math.abs(worst[1] - best[1]));
    // Stop when the simplex has collapsed, or when its values agree to 1e-12 relative (noisy data
    // leaves a flat valley; exact data drives f to ~0, where only the size test applies).
    if (spread < xtol || vals[iw]! - vals[ib]! <= 1e-12 * vals[ib]!) break;
    const centroid: Vec2 = [(best[0] + pts[im]![0]) / 2, (best[1] + pts[im]![1]) / 2];
    const xr = trial(worst, centroid, -1);
    const fr = f(xr);
    if (fr < vals[ib]!) {
      const xe = trial(worst, centroid, -2);
      const fe = f(xe);
      [pts[iw], vals[iw]] = fe < fr ? [xe, fe] : [xr, fr];
    } else if (fr < vals[im]!) {
      [pts[iw], vals[iw]] = [xr, fr];
    } else {
      // Contract toward the better of the worst point and its reflection.
      const xc = fr < vals[iw]! ? trial(worst, centroid, -0.5) : trial(worst, centroid, 0.5);
      const fc = f(xc);
      if (fc < Math.min(fr, vals[iw]!)) {
        [pts[iw], vals[iw]] = [xc, fc];
      } else {
        for (const i of [im, iw]) {
          pts[i] = [(pts[i]![0] + best[0]) / 2, (pts[i]![1] + best[1]) / 2];
          vals[i] = f(pts[i]!);
        }
      }
    }
  }
  let bi = 0;
  for (let i = 1; i < 3; i++) if (vals[i]! < vals[bi]!) bi = i;
  return pts[bi]!;
}

// ---------------------------------------------------------------------------------------------
// The fit.
// ---------------------------------------------------------------------------------------------

const SIGMA_MIN = 0.005;
const SIGMA_MAX = 10;
const MIN_POINTS = 5;

/** A point takes part in the fit when k is finite and the variance and weight are positive and finite. */
function isUsable(p: SviPoint): boolean {
  return Number.isFinite(p.k) && p.w > 0 && p.w < Infinity && p.weight > 0 && p.weight < Infinity;
}

function prepare(used: readonly SviPoint[]): FitData {
  const total = used.reduce((s, p) => s + p.weight, 0);
  const n = used.length;
  return {
    k: Float64Array.from(used, (p) => p.k),
    w: Float64Array.from(used, (p) => p.w),
    wt: Float64Array.from(used, (p) => p.weight / total),
    maxW: used.reduce((s, p) => Math.max(s, p.w), 0),
    y: new Float64Array(n),
    z: new Float64Array(n),
    nq: newNormal(),
  };
}

function toRaw(x: Float64Array, m: number, sigma: number): SviParams {
  const a = x[0]!;
  const c = x[1]!;
  const d = x[2]!;
  return { a, b: c / sigma, rho: c > 0 ? Math.max(-1, Math.min(1, d / c)) : 0, m, sigma };
}

/** Deterministic Nelder–Mead starts: around the variance minimum and the centre of the quotes. */
function startPoints(data: FitData, warm: SviParams | undefined, box: Box): Vec2[] {
  let iMin = 0;
  for (let i = 1; i < data.k.length; i++) if (data.w[i]! < data.w[iMin]!) iMin = i;
  const kMinW = data.k[iMin]!;
  const kMid = (box.lo[0] + box.hi[0]) / 2;
  const starts: Vec2[] = [
    [kMinW, Math.log(0.1)],
    [kMid, Math.log(0.3)],
    [kMinW, Math.log(0.02)],
  ];
  if (warm && Number.isFinite(warm.m) && warm.sigma > 0) starts.unshift([warm.m, Math.log(warm.sigma)]);
  return starts;
}

/** Shrink toward the flat slice w(0), just far enough to pass the butterfly check on `grid`. */
function repair(p: SviParams, grid: readonly number[]): SviParams {
  const w0 = sviTotalVariance(p, 0);
  const blend = (t: number): SviParams => ({ ...p, a: (1 - t) * p.a + t * w0, b: (1 - t) * p.b });
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 40; i++) {
    const mid = 0.5 * (lo + hi);
    if (butterflyArbitrageFree(blend(mid), grid)) hi = mid;
    else lo = mid;
  }
  return blend(hi);
}

function errors(p: SviParams, used: readonly SviPoint[]): { rmse: number; maxAbsError: number } {
  let sq = 0;
  let maxAbs = 0;
  for (const pt of used) {
    const r = Math.abs(sviTotalVariance(p, pt.k) - pt.w);
    sq += r * r;
    maxAbs = Math.max(maxAbs, r);
  }
  return { rmse: Math.sqrt(sq / used.length), maxAbsError: maxAbs };
}

/**
 * Quasi-explicit SVI fit of one expiry's total variances, then the butterfly check and, if needed,
 * the repair described at the top of this file. Returns null with fewer than 5 usable points.
 */
export function fitSvi(points: readonly SviPoint[], options: SviFitOptions = {}): SviFit | null {
  const used = points.filter(isUsable);
  if (used.length < MIN_POINTS) return null;
  const data = prepare(used);
  let kLo = Infinity;
  let kHi = -Infinity;
  for (const k of data.k) {
    kLo = Math.min(kLo, k);
    kHi = Math.max(kHi, k);
  }
  const span = Math.max(kHi - kLo, 1e-3);
  const centre = (kLo + kHi) / 2;
  const box: Box = { lo: [centre - span, Math.log(SIGMA_MIN)], hi: [centre + span, Math.log(SIGMA_MAX)] };
  const objective = (x: Vec2): number => innerFit(data, x[0], Math.exp(x[1]));
  const maxIter = options.maxIterations ?? 300;
  const step: Vec2 = [0.1 * span, 0.5];

  let best: Vec2 = box.lo;
  let bestVal = Infinity;
  for (const start of startPoints(data, options.warmStart, box)) {
    const x = nelderMead(objective, start, step, box, maxIter);
    const v = objective(x);
    if (v < bestVal) [best, bestVal] = [x, v];
  }
  // One restart from the winner with a fresh simplex guards against a collapsed Nelder–Mead simplex.
  const polished = nelderMead(objective, best, [0.01 * span, 0.05], box, maxIter);
  if (objective(polished) <= bestVal) best = polished;

  const sigma = Math.exp(best[1]);
  innerFit(data, best[0], sigma);
  let params = toRaw(data.nq.x, best[0], sigma);
  const grid = sviCheckGrid(used);
  let repaired = false;
  if (!butterflyArbitrageFree(params, grid)) {
    params = repair(params, grid);
    repaired = true;
  }
  return { params, ...errors(params, used), arbitrageFree: butterflyArbitrageFree(params, grid), repaired };
}
