/**
 * The core's configuration: assets and their precision, wallet rules, index construction, and the
 * linear engine's markets, fees and limits (config/markets.ts), and the CLOB engine's spot pairs,
 * option ladders, fees and limits (config/clob-markets.ts).
 */
import type { CoreConfig } from '../core/exchange.ts';
import { clobConfig } from './clob-markets.ts';
import type { Settings } from './env.ts';
import { futureSpec, LINEAR_LIMITS, lifecycleSettings, PERP_FEE_TIERS, perpSpec, UNDERLYINGS } from './markets.ts';

/** The settings the core's configuration depends on (the service, the snapshot worker and the audit build the same core). */
export function coreSettings(settings: Settings): Parameters<typeof coreConfig>[0] {
  return { depositConfirmations: settings.depositConfirmations, indexMaxAgeMs: settings.indexMaxAgeMs, fundingIntervalMs: settings.fundingIntervalMs };
}

export function coreConfig(
  settings: Pick<Settings, 'depositConfirmations'> & Partial<Pick<Settings, 'indexMaxAgeMs' | 'fundingIntervalMs'>>,
): CoreConfig {
  return {
    settlementAsset: 'USDC',
    assetDecimals: { USDC: 6, BTC: 8, ETH: 8 },
    spotAssets: ['BTC', 'ETH'],
    depositConfirmations: settings.depositConfirmations,
    withdrawalMaxAttempts: 20,
    movementIdRetentionMs: 86_400_000,
    index: {
      maxAgeMs: settings.indexMaxAgeMs ?? 10_000,
      minSources: 2,
      clampBps: 50,
      decimals: 8,
      twapRetentionMs: 2 * 3_600_000,
    },
    linear: {
      perps: UNDERLYINGS.map(perpSpec),
      futureSpec: (underlying, expiry) => {
        const u = UNDERLYINGS.find((x) => x.symbol === underlying);
        if (u === undefined) throw new Error(`no configuration for underlying ${underlying}`);
        return futureSpec(u, expiry);
      },
      feeTiers: PERP_FEE_TIERS,
      limits: LINEAR_LIMITS,
      lifecycle: lifecycleSettings(settings.fundingIntervalMs ?? 3_600_000),
    },
    clob: clobConfig(),
  };
}
