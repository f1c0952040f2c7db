/**
 * The index feed port: how spot prices from external sources reach the exchange. The embedded
 * default is the simulated feed (simulated-feed.ts, a seeded multi-source model). The push feed
 * (FEED=push) is the admin index endpoint itself: each `POST /admin/index` is an `index.publish`
 * command, which the index board takes as the index while it is fresh (core/prices/index-board.ts),
 * so it needs no adapter object. A real adapter (exchange websockets) implements this interface.
 *
 * Contract for implementations:
 *   - `start` registers the single consumer and begins delivering; observations arrive grouped per
 *     underlying (e.g. 'BTC'), one entry per source that reported, `ts` in Unix milliseconds of the
 *     observation (not of delivery), prices as exact Fixed decimals (> 0);
 *   - a source that is down simply stops reporting: staleness is judged by the consumer against its
 *     own clock (src/pricing/index-price.ts drops quotes older than its maxAgeMs);
 *   - `stop` ends delivery; no callback runs after it returns.
 * No logic here, nothing to test.
 */
import type { Fixed } from '../../core/money.ts';

export interface PriceObservation {
  readonly source: string;
  readonly price: Fixed;
  readonly ts: number;
}

export interface FeedPort {
  start(onObservations: (underlying: string, observations: PriceObservation[]) => void): void;
  stop(): void;
}
