/**
 * The push feed (FEED=push, and the admin override `POST /admin/index`): `publish` forwards one
 * observation with source 'push' to the consumer, synchronously.
 *
 * Assumptions: one consumer; before `start` or after `stop` a publish is refused (returns false) so an
 * operator can tell the price went nowhere. Prices must be positive and timestamps finite integers
 * (RangeError otherwise); the admin route validates the decimal string before calling.
 * Note for the index: a single 'push' source needs `minSources` 1, and when mixed with the simulated
 * sources it is only one more constituent (clamped to their median), not an override; an engine
 * that wants an override must treat the 'push' source specially.
 * Tested in push-feed.test.ts.
 */
import type { Fixed } from '../../core/money.ts';
import type { FeedPort, PriceObservation } from './port.ts';

export const PUSH_SOURCE = 'push';

export class PushFeed implements FeedPort {
  private consumer: ((underlying: string, observations: PriceObservation[]) => void) | null = null;

  start(onObservations: (underlying: string, observations: PriceObservation[]) => void): void {
    if (this.consumer !== null) throw new Error('PushFeed already started');
    this.consumer = onObservations;
  }

  stop(): void {
    this.consumer = null;
  }

  /** Forwards one observation; false when the feed is not started. */
  publish(underlying: string, price: Fixed, ts: number): boolean {
    if (price <= 0n) throw new RangeError('price must be positive');
    if (!Number.isSafeInteger(ts)) throw new RangeError('ts must be an integer number of milliseconds');
    if (this.consumer === null) return false;
    this.consumer(underlying, [{ source: PUSH_SOURCE, price, ts }]);
    return true;
  }
}
