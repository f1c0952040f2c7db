/**
 * The options fee schedule (decisions.md: `{ min30dVolumeUsd, makerBps, takerBps,
 * maxFeePctOfPremium }`; mechanics.md 6): per contract the fee is the tier's rate applied to the
 * underlying index, capped at a percentage of the premium:
 *     fee = contracts x min(rateBps / 10 000 x S, maxFeePctOfPremium / 100 x price)
 * computed exactly and rounded once, up, to the settlement asset's precision (money taken from a
 * user rounds toward the venue). Rates are non-negative. The tier follows the account's own
 * rolling 30-day options volume (contracts x index, a VolumeTracker separate from perps and spot).
 *
 * Because the cap bounds the fee by the premium, a buy order can reserve its worst-case fee from
 * its limit price alone (`maxCapPct`), whatever the index does while it rests, and a seller's fee
 * never exceeds the premium it receives. Tested in options.test.ts.
 */
import { assert } from '../assert.ts';
import { divRound, type Fixed } from '../money.ts';
import { tierForVolume, type FeeRole } from '../risk/fees.ts';
import type { OptionFeeTier } from './config.ts';

const SCALE = 10n ** 18n;

export interface FeeQuote {
  readonly fee: Fixed;
  readonly bps: Fixed;
}

export class OptionFeeSchedule {
  /** Fixed units per smallest unit of the settlement asset. */
  private readonly unit: bigint;
  private readonly divisor: bigint;
  /** The largest premium cap of any tier, as a percentage. */
  readonly maxCapPct: Fixed;
  /** The largest rate of any tier and role, in basis points of the index. */
  readonly maxBps: Fixed;

  constructor(
    readonly tiers: readonly OptionFeeTier[],
    settlementDecimals: number,
  ) {
    this.unit = 10n ** BigInt(18 - settlementDecimals);
    // contracts (1e18) x rate x index (1e36) / 10 000, down to smallest units.
    this.divisor = 10_000n * SCALE * SCALE * this.unit;
    assert(tiers.length > 0 && tiers[0]!.min30dVolumeUsd === 0n, 'the first option fee tier is at volume 0');
    let maxCap = 0n;
    let bps = 0n;
    tiers.forEach((t, i) => {
      const ordered = i === 0 || t.min30dVolumeUsd > tiers[i - 1]!.min30dVolumeUsd;
      assert(ordered, 'option fee tiers must be in increasing volume');
      assert(t.makerBps >= 0n && t.takerBps >= 0n, 'option fee rates are non-negative');
      const cap = t.maxFeePctOfPremium;
      assert(cap > 0n && cap <= 100n * SCALE, 'premium cap must be in (0, 100] %');
      if (t.maxFeePctOfPremium > maxCap) maxCap = t.maxFeePctOfPremium;
      for (const r of [t.makerBps, t.takerBps]) if (r > bps) bps = r;
    });
    this.maxCapPct = maxCap;
    this.maxBps = bps;
  }

  tierFor(volume30d: Fixed): OptionFeeTier {
    return tierForVolume(this.tiers, volume30d);
  }

  rateFor(volume30d: Fixed, role: FeeRole): Fixed {
    const t = this.tierFor(volume30d);
    return role === 'maker' ? t.makerBps : t.takerBps;
  }

  /** Fee of `contracts` at premium `price` per contract with the index at `index`. */
  fee(contracts: Fixed, price: Fixed, index: Fixed, bps: Fixed, capPct: Fixed): Fixed {
    if (contracts === 0n) return 0n;
    const byIndex = bps * index;
    const byPremium = capPct * price * 100n;
    const perContract = byIndex < byPremium ? byIndex : byPremium;
    if (perContract <= 0n) return 0n;
    return divRound(perContract * contracts, this.divisor, 'ceil') * this.unit;
  }

  /** Fee of a fill for an account at its current tier. */
  feeFor(volume30d: Fixed, role: FeeRole, contracts: Fixed, price: Fixed, index: Fixed): FeeQuote {
    const t = this.tierFor(volume30d);
    const bps = role === 'maker' ? t.makerBps : t.takerBps;
    return { fee: this.fee(contracts, price, index, bps, t.maxFeePctOfPremium), bps };
  }
}
