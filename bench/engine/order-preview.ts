/**
 * What a perps order preview costs (Exchange.previewPerpOrder, the core of POST
 * /perps/orders/preview): the live order's checks without executing, and the position the order
 * would leave (position-estimate.ts). The previewing account holds cross and isolated positions in
 * BTC-PERP and a cross position in ETH-PERP (its risk figures are cached per mark version, so a
 * preview revalues none of them); a counterparty rests a ladder on both sides of BTC-PERP.
 *
 * Reports the p50 and p99 of `--reps` previews of each kind: a cross bid that would rest, a cross
 * market buy that sweeps the asks, an isolated market sell that reduces the isolated position.
 *
 * Run: node --import tsx bench/engine/order-preview.ts [--reps 5000]
 */
import { parseArgs } from 'node:util';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import type { OrderRequest } from '../../src/core/linear/order.ts';
import { ExchangeDriver, perpOrder } from './support/exchange-driver.ts';

const { values: args } = parseArgs({
  options: { reps: { type: 'string', default: '5000' } },
});
const REPS = Number(args.reps);
const OWNER = '0x' + '1'.repeat(40);
const COUNTERPARTY = '0x' + '2'.repeat(40);

const venue = new ExchangeDriver();
venue.run({ type: 'clock.tick' });
venue.publish('BTC', '100000');
venue.publish('ETH', '3000');
for (const account of [OWNER, COUNTERPARTY]) venue.fund(account, '100000000');
for (let i = 1; i <= 20; i++) {
  venue.place(COUNTERPARTY, perpOrder(SELL, '1', String(100_000 + i * 10)));
  venue.place(COUNTERPARTY, perpOrder(BUY, '1', String(100_000 - i * 10)));
}
venue.place(OWNER, perpOrder(BUY, '2', null));
venue.place(OWNER, perpOrder(BUY, '1', null, { marginMode: 'isolated' }));
venue.place(COUNTERPARTY, { ...perpOrder(SELL, '5', '3001'), marketId: 'ETH-PERP' });
venue.place(OWNER, { ...perpOrder(BUY, '5', null), marketId: 'ETH-PERP' });

const kinds: [string, OrderRequest][] = [
  ['cross bid, rests', perpOrder(BUY, '0.5', '99000')],
  ['cross market buy, sweeps', perpOrder(BUY, '3', null)],
  ['isolated market sell, reduces', perpOrder(SELL, '0.5', null, { marginMode: 'isolated' })],
];
const us = (ms: number): string => (ms * 1000).toFixed(1);
console.log(`order preview: ${REPS} previews of each kind, node ${process.version}`);
for (const [name, request] of kinds) {
  const times: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    const t0 = performance.now();
    const preview = venue.exchange.previewPerpOrder(OWNER, request, venue.now);
    times.push(performance.now() - t0);
    if (preview.rejection !== null) throw new Error(`${name}: ${preview.rejection.code} ${preview.rejection.message}`);
  }
  times.sort((a, b) => a - b);
  console.log(`${name}: p50 ${us(times[Math.floor(REPS / 2)]!)} us, p99 ${us(times[Math.floor(REPS * 0.99)]!)} us`);
}
