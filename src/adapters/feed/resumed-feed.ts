/**
 * The simulated feed as a service starts it: each underlying resumes from the core's last price.
 */
import type { Exchange } from '../../core/exchange.ts';
import { toFloat } from '../../core/money.ts';
import { DEFAULT_UNDERLYINGS } from './price-model.ts';
import { SimulatedFeed } from './simulated-feed.ts';

/**
 * The simulated feed resumes each underlying from its last journaled price (so a restart does not
 * jump the market back to the model's start) and draws a fresh path each run. Its sources live in
 * the service, so they stamp their prices with the service clock: a step of the system clock the
 * service clock did not take leaves them in time (an external source keeps its own clock).
 */
export function resumedSimulatedFeed(exchange: Exchange, clock: { now(): number }, onError: (e: unknown) => void): SimulatedFeed {
  const underlyings = Object.fromEntries(
    Object.entries(DEFAULT_UNDERLYINGS).map(([name, model]) => {
      const last = exchange.index.lastPrice(name);
      return [name, last === null ? model : { ...model, start: toFloat(last) }];
    }),
  );
  return new SimulatedFeed({ seed: Date.now() % 2 ** 31, underlyings, onError, now: () => clock.now() });
}
