/**
 * Fee tiers by rolling 30-day traded notional (research/mechanics.md 6). A tier has a maker and a
 * taker rate in basis points; a negative maker rate is a rebate. Fees are charged in the
 * settlement asset at its precision (USDC: 6 decimals), rounding toward the venue: a fee is
 * rounded up, a rebate's magnitude rounded down (both are `ceil` of the signed amount).
 *
 * The 30-day volume is kept per account in UTC-day buckets (the current day included), fed by the
 * engines on every fill, so the tier an order sees is a pure function of the command history.
 */
import { assert } from '../assert.ts';
import { divRound, gcd, type Fixed } from '../money.ts';

export interface FeeTier {
  readonly min30dVolumeUsd: Fixed;
  readonly makerBps: Fixed;
  readonly takerBps: Fixed;
}

export type FeeRole = 'maker' | 'taker';

const BPS = 10_000n;
const DAY_MS = 86_400_000;
const WINDOW_DAYS = 30;

/** The highest tier whose volume threshold `volume30d` reaches (tiers in increasing volume, the first at 0). */
export function tierForVolume<T extends { readonly min30dVolumeUsd: Fixed }>(tiers: readonly T[], volume30d: Fixed): T {
  let tier = tiers[0]!;
  for (const t of tiers) if (volume30d >= t.min30dVolumeUsd) tier = t;
  return tier;
}

/**
 * A rate as the reduced fraction of a notional it takes, in smallest units of the settlement asset:
 * fee = ceil(notional × num / den). Reducing bps / (10,000 × 1e18 × unit) turns a 5 bps fee into
 * ceil(notional / 2e15): one single-word division instead of a multiply and a division by 1e34,
 * which is several machine words long (fees are computed for every order and both sides of a fill).
 */
interface FeeFraction {
  readonly num: bigint;
  readonly den: bigint;
  /** den − 1, for the ceiling. */
  readonly bias: bigint;
}

export class FeeSchedule {
  /** Fixed units per smallest unit of the settlement asset (1e12 for USDC's 6 decimals). */
  private readonly unit: bigint;
  /** Divisor from notional x bps to smallest units: 10,000 bps x 1e18 scale x unit. */
  private readonly divisor: bigint;
  /** The reduced fraction of every tier rate; other rates are reduced on use. */
  private readonly fractions = new Map<Fixed, FeeFraction>();

  constructor(
    readonly tiers: readonly FeeTier[],
    private readonly settlementDecimals: number,
  ) {
    this.unit = 10n ** BigInt(18 - settlementDecimals);
    this.divisor = BPS * 10n ** 18n * this.unit;
    assert(tiers.length > 0 && tiers[0]!.min30dVolumeUsd === 0n, 'the first fee tier must start at volume 0');
    for (let i = 1; i < tiers.length; i++) {
      assert(tiers[i]!.min30dVolumeUsd > tiers[i - 1]!.min30dVolumeUsd, 'fee tiers must be in increasing volume');
    }
    for (const t of tiers) for (const bps of [t.makerBps, t.takerBps]) this.fractions.set(bps, this.fraction(bps));
  }

  tierFor(volume30d: Fixed): FeeTier {
    return tierForVolume(this.tiers, volume30d);
  }

  rateFor(volume30d: Fixed, role: FeeRole): Fixed {
    const t = this.tierFor(volume30d);
    return role === 'maker' ? t.makerBps : t.takerBps;
  }

  /** Signed fee on `notional` at `bps` (positive: paid by the trader; negative: rebate). */
  fee(notional: Fixed, bps: Fixed): Fixed {
    if (bps === 0n || notional === 0n) return 0n;
    const { num, den, bias } = this.fractions.get(bps) ?? this.fraction(bps);
    const product = num === 1n ? notional : notional * num;
    // One ceiling division straight to the smallest unit (ceil of a ceil is the ceil).
    if (product > 0n) return ((product + bias) / den) * this.unit;
    return divRound(product, den, 'ceil') * this.unit;
  }

  private fraction(bps: Fixed): FeeFraction {
    const g = gcd(bps < 0n ? -bps : bps, this.divisor);
    const den = this.divisor / g;
    return { num: bps / g, den, bias: den - 1n };
  }
}

/**
 * Rolling 30-day traded notional per account, in UTC-day buckets. `volume30d` runs on every order
 * and both sides of every fill, so it is O(1): each account keeps the sum of its earlier days still
 * in the window (recomputed once per account per day) and adds the current day to it.
 */
export class VolumeTracker {
  private readonly byAccount = new Map<number, AccountVolume>();

  record(accountId: number, notional: Fixed, now: number): void {
    const day = Math.floor(now / DAY_MS);
    let v = this.byAccount.get(accountId);
    if (v === undefined) this.byAccount.set(accountId, (v = new AccountVolume()));
    v.days.set(day, (v.days.get(day) ?? 0n) + notional);
    if (v.days.size > WINDOW_DAYS + 1) {
      for (const d of v.days.keys()) if (d <= day - WINDOW_DAYS) v.days.delete(d);
    }
    if (day !== v.earlierDay) v.earlierDay = NaN; // a day the cache does not cover changed
  }

  volume30d(accountId: number, now: number): Fixed {
    const v = this.byAccount.get(accountId);
    if (v === undefined) return 0n;
    const today = Math.floor(now / DAY_MS);
    if (v.earlierDay !== today) v.recompute(today);
    return v.earlierSum + (v.days.get(today) ?? 0n);
  }
}

export class AccountVolume {
  /** Notional per UTC day number. */
  readonly days = new Map<number, Fixed>();
  /** Sum of the days in (earlierDay − 30, earlierDay), valid while `earlierDay` is the current day. */
  earlierSum: Fixed = 0n;
  earlierDay = NaN;

  recompute(today: number): void {
    let sum = 0n;
    for (const [d, v] of this.days) if (d > today - WINDOW_DAYS && d < today) sum += v;
    this.earlierSum = sum;
    this.earlierDay = today;
  }
}
