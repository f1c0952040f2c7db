/**
 * What the scenario benchmarks of the engine share: one in-process Exchange driven by commands at a
 * clock that moves a fixed step per command, failing loudly on any refusal (a benchmark that
 * measures rejections by accident measures nothing), and perps order requests from short fields.
 */
import { coreConfig } from '../../../src/config/core.ts';
import type { Command } from '../../../src/core/commands.ts';
import { Exchange, type CoreConfig, type Outcome } from '../../../src/core/exchange.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../../src/core/linear/order.ts';
import { fx } from '../../../src/core/money.ts';

const HOUR = 3_600_000;

/** The benchmarks' venue: deposits credited at one confirmation, the index fresh for three hours. */
export function benchConfig(): CoreConfig {
  return coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3 * HOUR });
}

export class ExchangeDriver {
  readonly exchange: Exchange;
  now = Date.UTC(2026, 10, 22, 10, 0, 0);
  private deposits = 0;

  constructor(config: CoreConfig = benchConfig(), private readonly stepMs = 1) {
    this.exchange = new Exchange(config);
  }

  /** Applies `command` one step later; throws on a refusal. */
  run(command: Command): Outcome<unknown> & { ok: true } {
    this.now += this.stepMs;
    const outcome = this.exchange.execute(command, this.now);
    if (!outcome.ok) throw new Error(`${command.type}: ${outcome.code} ${outcome.message}`);
    return outcome;
  }

  /** Deposits `usdc` for `account` and moves it to its perps bucket. */
  fund(account: string, usdc: string): void {
    const txHash = `0x${(++this.deposits).toString(16)}`;
    this.run({ type: 'chain.deposit_observed', txHash, account, amount: fx(usdc), confirmations: 1 });
    this.run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount: fx(usdc) });
  }

  publish(underlying: string, price: string): void {
    this.run({ type: 'index.publish', underlying, price: fx(price), sourceTs: this.now });
  }

  /** Places a perps order; returns its engine id. */
  place(account: string, request: OrderRequest): number {
    const placed = this.run({ type: 'perp.place', account, request });
    return Number((placed.result as { order: { id: string } }).order.id);
  }
}

/** A cross limit order (gtc), or a market order (ioc) when `price` is null. */
export function perpOrder(side: 0 | 1, quantity: string, price: string | null, extra: Partial<OrderRequest> = {}): OrderRequest {
  return {
    marketId: 'BTC-PERP', side, type: price === null ? 'market' : 'limit', quantity: fx(quantity), price: price === null ? null : fx(price),
    timeInForce: price === null ? 'ioc' : 'gtc', postOnly: false, reduceOnly: false, marginMode: 'cross', ...PLAIN_ORDER, ...extra,
  };
}
