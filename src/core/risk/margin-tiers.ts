/**
 * Tiered margin by position notional (research/mechanics.md 1.4, Hyperliquid/Binance style).
 * Each tier has a maximum leverage; its initial margin rate is 1/maxLeverage and its maintenance
 * rate half of that. Margin is computed with a per-tier deduction so that it is continuous in
 * notional (crossing a tier boundary never makes margin jump):
 *   margin(n) = n * rate_k - deduction_k,  deduction_k = deduction_{k-1} + bound_{k-1} * (rate_k - rate_{k-1})
 * Initial margin rounds up, maintenance margin rounds up (both protect the venue).
 */
import { assert } from '../assert.ts';
import { divRound, gcd, ONE, type Fixed } from '../money.ts';
import type { MarginTier } from '../markets.ts';

interface CompiledTier {
  readonly upTo: Fixed | null;
  readonly imRate: Fixed;
  readonly mmRate: Fixed;
  readonly imDeduction: Fixed;
  readonly mmDeduction: Fixed;
  /** imRate / ONE and mmRate / ONE reduced: 50x leverage is notional / 50, not notional x 2e16 / 1e18. */
  readonly im: RateFraction;
  readonly mm: RateFraction;
}

interface RateFraction {
  readonly num: bigint;
  readonly den: bigint;
  /** den − 1, for the ceiling. */
  readonly bias: bigint;
}

export class MarginSchedule {
  private readonly tiers: CompiledTier[] = [];

  constructor(tiers: readonly MarginTier[]) {
    assert(tiers.length > 0, 'a margin schedule needs at least one tier');
    let imDeduction = 0n;
    let mmDeduction = 0n;
    let prev: CompiledTier | null = null;
    for (const t of tiers) {
      assert(t.maxLeverage >= 1 && Number.isInteger(t.maxLeverage), 'maxLeverage must be a whole number >= 1');
      const imRate = divRound(ONE, BigInt(t.maxLeverage), 'ceil');
      const mmRate = divRound(ONE, BigInt(2 * t.maxLeverage), 'ceil');
      if (prev !== null) {
        assert(prev.upTo !== null, 'only the last tier may be unbounded');
        assert(imRate >= prev.imRate, 'tiers must not lower the margin rate');
        imDeduction += mulFloor(prev.upTo, imRate - prev.imRate);
        mmDeduction += mulFloor(prev.upTo, mmRate - prev.mmRate);
      }
      const compiled: CompiledTier = {
        upTo: t.upToNotional, imRate, mmRate, imDeduction, mmDeduction, im: reduced(imRate), mm: reduced(mmRate),
      };
      this.tiers.push(compiled);
      prev = compiled;
    }
    assert(prev?.upTo === null, 'the last tier must be unbounded');
  }

  private tierFor(notional: Fixed): CompiledTier {
    for (const t of this.tiers) if (t.upTo === null || notional <= t.upTo) return t;
    return this.tiers[this.tiers.length - 1]!;
  }

  /** Initial margin for a position of absolute notional `notional`. */
  initial(notional: Fixed): Fixed {
    if (notional <= 0n) return 0n;
    const t = this.tierFor(notional);
    const margin = ceilMul(notional, t.im);
    return t.imDeduction === 0n ? margin : margin - t.imDeduction;
  }

  maintenance(notional: Fixed): Fixed {
    if (notional <= 0n) return 0n;
    const t = this.tierFor(notional);
    const margin = ceilMul(notional, t.mm);
    return t.mmDeduction === 0n ? margin : margin - t.mmDeduction;
  }

  /** Maintenance rate of the tier for this notional (used in liquidation price estimates). */
  maintenanceRate(notional: Fixed): Fixed {
    return this.tierFor(notional).mmRate;
  }

  maxLeverage(notional: Fixed): number {
    const t = this.tierFor(notional);
    return Number(divRound(ONE, t.imRate, 'floor'));
  }
}

/** ceil(notional x rate / ONE) for a non-negative notional (the hot path of every margin check). */
function ceilMul(notional: Fixed, rate: RateFraction): Fixed {
  const product = rate.num === 1n ? notional : notional * rate.num;
  return (product + rate.bias) / rate.den;
}

function reduced(rate: Fixed): RateFraction {
  const g = gcd(rate, ONE);
  return { num: rate / g, den: ONE / g, bias: ONE / g - 1n };
}

function mulFloor(a: Fixed, b: Fixed): Fixed {
  return divRound(a * b, ONE, 'floor');
}
