/**
 * The core's configuration: assets and their precision, and the wallet rules. Market listings,
 * fee tiers and margin tiers join this file's siblings as the engines arrive.
 */
import type { CoreConfig } from '../core/exchange.ts';
import type { Settings } from './env.ts';

export function coreConfig(settings: Pick<Settings, 'depositConfirmations'>): CoreConfig {
  return {
    settlementAsset: 'USDC',
    assetDecimals: { USDC: 6, BTC: 8, ETH: 8 },
    spotAssets: ['BTC', 'ETH'],
    depositConfirmations: settings.depositConfirmations,
    withdrawalMaxAttempts: 20,
  };
}
