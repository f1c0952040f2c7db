/**
 * The list of markets (GET /perps/markets: every perp, future, spot pair and option with its mark,
 * index, tick and step), read every 2 s while any component watches it, once for all of them.
 */
import { useEffect } from 'preact/hooks';
import type { Market } from '../../../sdk/src/index.ts';
import { Store, useStore } from '../lib/store.ts';
import { reportError } from '../lib/notify.ts';
import { market } from './account.ts';

export type { Market };

const markets = new Store<readonly Market[]>([]);
let watchers = 0;
let timer: ReturnType<typeof setInterval> | null = null;
let failing = false;

async function refresh(): Promise<void> {
  try {
    markets.set(await market.markets());
    failing = false;
  } catch (e) {
    if (!failing) reportError(e, 'reading the markets');
    failing = true;
  }
}

export function useMarkets(): readonly Market[] {
  useEffect(() => {
    if (watchers++ === 0) {
      void refresh();
      timer = setInterval(refresh, 2_000);
    }
    return () => {
      if (--watchers === 0 && timer !== null) clearInterval(timer);
    };
  }, []);
  return useStore(markets);
}

export function useMarket(marketId: string): Market | undefined {
  return useMarkets().find((m) => m.id === marketId);
}
