/**
 * The simulated index feed (FEED=simulated, the embedded default): runs the seeded multi-source price
 * model (price-model.ts) on an unref'd `setInterval(tickMs)` and delivers each tick's observations,
 * stamped with the wall clock (`Date.now()`, injectable for tests).
 *
 * Assumptions: one consumer; `start` delivers the first tick synchronously (so an index exists as soon
 * as the service is up, given enough sources report) and then one tick per `tickMs`; `stop` clears
 * the timer. Underlyings for which no source reported in a tick are not delivered that tick. An
 * exception thrown by the consumer goes to `onError` when given, otherwise it propagates (from the
 * timer it is then an uncaught exception, as for any other bug).
 * Defaults: BTC 97 000 / 55 %, ETH 3 400 / 70 %, four sources, 1 s ticks, seed 1.
 * Tested in simulated-feed.test.ts with a fake clock and a short real interval.
 */
import { DEFAULT_UNDERLYINGS, createPriceModel } from './price-model.ts';
import type { PriceModel, PriceModelOptions } from './price-model.ts';
import type { FeedPort, PriceObservation } from './port.ts';

export interface SimulatedFeedOptions extends Partial<PriceModelOptions> {
  /** Wall clock in Unix ms; default Date.now. */
  now?: () => number;
  /** Receives exceptions thrown by the consumer; default: rethrow. */
  onError?: (err: unknown) => void;
}

export const DEFAULT_FEED_SEED = 1;
export const DEFAULT_FEED_TICK_MS = 1_000;

export class SimulatedFeed implements FeedPort {
  readonly tickMs: number;
  private readonly model: PriceModel;
  private readonly now: () => number;
  private readonly onError: ((err: unknown) => void) | undefined;
  private timer: NodeJS.Timeout | null = null;

  constructor(options: SimulatedFeedOptions = {}) {
    const { now, onError, ...model } = options;
    this.tickMs = model.tickMs ?? DEFAULT_FEED_TICK_MS;
    this.model = createPriceModel({
      ...model,
      seed: model.seed ?? DEFAULT_FEED_SEED,
      underlyings: model.underlyings ?? DEFAULT_UNDERLYINGS,
      tickMs: this.tickMs,
    });
    this.now = now ?? Date.now;
    this.onError = onError;
  }

  start(onObservations: (underlying: string, observations: PriceObservation[]) => void): void {
    if (this.timer !== null) throw new Error('SimulatedFeed already started');
    const tick = (): void => {
      for (const { underlying, observations } of this.model.step(this.now())) {
        try {
          onObservations(underlying, observations);
        } catch (err) {
          if (this.onError === undefined) throw err;
          this.onError(err);
        }
      }
    };
    this.timer = setInterval(tick, this.tickMs);
    this.timer.unref();
    tick();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** The model's current true price (diagnostics and tests). */
  truePrice(underlying: string): number {
    return this.model.truePrice(underlying);
  }
}
