/**
 * The index feed port: how spot prices from external sources reach the exchange. The embedded
 * default is the simulated feed (simulated-feed.ts, a seeded multi-source model); the push feed
 * (push-feed.ts) forwards prices published through the admin index endpoint. A real adapter (exchange
 * websockets) implements the same interface.
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
