/**
 * The store benchmarks' commands: IOC market buys of 0.001 BTC-PERP that fill against a resting
 * sell, run through the core (the full-path engine adapter's exchange), each with every event it
 * emitted (two orders, a fill, three ledger lines, two positions), as bench/gateway/orders.ts
 * journals them.
 */
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import type { Command } from '../../src/core/commands.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../src/core/linear/order.ts';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import type { ExchangeEvent } from '../../src/core/events.ts';
import { fullAdapter } from '../engine/adapters/full.ts';

/** The event types the history projections consume (Journal.projectedTypes() of the service). */
export const PROJECTED_TYPES: ReadonlySet<ExchangeEvent['type']> = new Set(['order', 'fill', 'ledger', 'settlement']);

const MAKER = `0x${'3'.repeat(40)}`;
const TAKER = `0x${'1'.repeat(40)}`;

function order(side: 0 | 1, price: bigint | null): OrderRequest {
  return {
    marketId: 'BTC-PERP',
    side,
    type: price === null ? 'market' : 'limit',
    quantity: 10n ** 15n,
    price,
    timeInForce: price === null ? 'ioc' : 'gtc',
    postOnly: false,
    reduceOnly: false,
    marginMode: 'cross',
    ...PLAIN_ORDER,
  };
}

export function filledOrders(count: number): CommittedCommand[] {
  const venue = fullAdapter.newBook();
  const out: CommittedCommand[] = [];
  for (let i = 0; i < count; i++) {
    const ts = venue.now + i;
    const rest = venue.exchange.execute({ type: 'perp.place', account: MAKER, request: order(SELL, 10_001n * 10n ** 18n) }, ts);
    const command: Command = { type: 'perp.place', account: TAKER, request: order(BUY, null) };
    const taken = venue.exchange.execute(command, ts);
    if (!rest.ok || !taken.ok) throw new Error('setup order refused');
    out.push({ ts, command, events: taken.events });
  }
  return out;
}
