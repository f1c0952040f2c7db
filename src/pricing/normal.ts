/**
 * Standard normal density and distribution function in double precision.
 *
 * `normCdf` is W. J. Cody's rational Chebyshev approximation of the normal integral (Cody 1969,
 * "Rational Chebyshev approximations for the error function", Math. Comp. 23; as packaged in his
 * SPECFUN ANORM routine, ACM TOMS 715, 1993). It has three ranges: |x| <= 0.67449, |x| <= sqrt(32),
 * and the asymptotic tail. Its error is about 1e-16 absolute and, in the lower tail, relative too,
 * which matters because Black-76 reads deep out-of-the-money prices straight from the tail. The
 * popular Abramowitz-Stegun 7.1.26 formula is only good to 1e-7 and must not be used here.
 *
 * Assumes nothing about the argument: NaN propagates, +-Infinity map to 1 and 0.
 * Tested in normal.test.ts against 40-digit values from mpmath and by symmetry N(x) + N(-x) = 1.
 */

const INV_SQRT_2PI = 0.3989422804014327; // 1 / sqrt(2*pi)
const SQRT_32 = 5.656854249492381;
/** Beyond this the lower tail underflows to 0 in double precision (Cody's cut-off). */
const TAIL_CUTOFF = 37.5193;

// Cody's coefficients (20 significant digits in the source), written as their nearest doubles.
const A = [
  2.2352520354606837, 161.02823106855587, 1067.6894854603709, 18154.98125334356,
  0.06568233791820745,
] as const;
const B = [47.202581904688245, 976.0985517377767, 10260.932208618979, 45507.78933502673] as const;
const C = [
  0.39894151208813466, 8.883149794388377, 93.50665613217785, 597.2702763948002,
  2494.5375852903726, 6848.190450536283, 11602.65143764735, 9842.714838383978,
  1.0765576773720192e-8,
] as const;
const D = [
  22.266688044328117, 235.387901782625, 1519.3775994075547, 6485.558298266761,
  18615.571640885097, 34900.95272114598, 38912.00328609327, 19685.429676859992,
] as const;
const P = [
  0.215898534057957, 0.12740116116024736, 0.022235277870649807, 0.0014216191932278934,
  0.000029112874951168793, 0.023073441764940174,
] as const;
const Q = [
  1.284260096144911, 0.4682382124808651, 0.06598813786892856, 0.0037823963320275824,
  0.00007297515550839662,
] as const;

/** Standard normal density n(x) = exp(-x^2/2) / sqrt(2 pi). */
export function normPdf(x: number): number {
  return INV_SQRT_2PI * Math.exp(-0.5 * x * x);
}

/**
 * exp(-y^2/2) computed as exp(-ys^2/2)·exp(-(y-ys)(y+ys)/2) with ys = y rounded down to 1/16:
 * squaring a large y directly loses the low bits that the tail's relative accuracy depends on.
 */
function gaussianFactor(y: number): number {
  const ys = Math.trunc(y * 16) / 16;
  const del = (y - ys) * (y + ys);
  return Math.exp(-ys * ys * 0.5) * Math.exp(-del * 0.5);
}

/** Lower-tail probability Phi(-y) for y >= 0.67449 (the two outer ranges of Cody's algorithm). */
function upperTail(y: number): number {
  if (y <= SQRT_32) {
    let num = C[8] * y;
    let den = y;
    for (let i = 0; i < 7; i++) {
      num = (num + C[i]!) * y;
      den = (den + D[i]!) * y;
    }
    return (gaussianFactor(y) * (num + C[7])) / (den + D[7]);
  }
  if (y >= TAIL_CUTOFF) return 0;
  const z = 1 / (y * y);
  let num = P[5] * z;
  let den = z;
  for (let i = 0; i < 4; i++) {
    num = (num + P[i]!) * z;
    den = (den + Q[i]!) * z;
  }
  const r = (z * (num + P[4])) / (den + Q[4]);
  return (gaussianFactor(y) * (INV_SQRT_2PI - r)) / y;
}

/** Standard normal distribution function N(x) = P(Z <= x). */
export function normCdf(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  const y = Math.abs(x);
  if (y <= 0.67448975) {
    // Central range: N(x) = 1/2 + x·R(x^2), no cancellation because |x·R| < 1/4.
    const xsq = x * x;
    let num = A[4] * xsq;
    let den = xsq;
    for (let i = 0; i < 3; i++) {
      num = (num + A[i]!) * xsq;
      den = (den + B[i]!) * xsq;
    }
    return 0.5 + (x * (num + A[3])) / (den + B[3]);
  }
  const tail = upperTail(y);
  return x > 0 ? 1 - tail : tail;
}
