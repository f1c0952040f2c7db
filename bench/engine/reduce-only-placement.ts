/**
 * What an order costs its owner when the owner holds many resting reduce-only orders. Their open
 * loss at the mark is held out of the account's free collateral, which the margin gate reads for
 * every order: the account keeps that loss summed (linear/reduce-only-losses.ts) and walks its
 * orders again only after a mark moves, so placing an order costs the same with 0 or 150 of them.
 *
 * One account, long 10 BTC-PERP, places `--ro` reduce-only asks below the mark (each with an open
 * loss), then places and cancels a plain bid far from the touch `--reps` times. Reports the mean
 * time of one reduce-only placement, and the p50 and p99 of the plain placement (Exchange.execute).
 *
 * Run: node --import tsx bench/engine/reduce-only-placement.ts [--ro 150 --reps 2000]
 */
import { parseArgs } from 'node:util';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import { ExchangeDriver, perpOrder } from './support/exchange-driver.ts';

const { values: args } = parseArgs({
  options: { ro: { type: 'string', default: '150' }, reps: { type: 'string', default: '2000' } },
});
const RO = Number(args.ro);
const REPS = Number(args.reps);
const OWNER = '0x' + '1'.repeat(40);
const COUNTERPARTY = '0x' + '2'.repeat(40);

const venue = new ExchangeDriver();
venue.run({ type: 'clock.tick' });
venue.publish('BTC', '100000');
for (const account of [OWNER, COUNTERPARTY]) venue.fund(account, '100000000');
venue.place(COUNTERPARTY, perpOrder(SELL, '10', '100000'));
venue.place(OWNER, perpOrder(BUY, '10', null));

let t0 = performance.now();
for (let i = 0; i < RO; i++) venue.place(OWNER, perpOrder(SELL, '0.01', String(99_990 - i), { reduceOnly: true }));
const roMean = RO === 0 ? 0 : (performance.now() - t0) / RO;

const times: number[] = [];
for (let rep = 0; rep < REPS; rep++) {
  t0 = performance.now();
  const id = venue.place(OWNER, perpOrder(BUY, '0.01', String(96_000 + (rep % 100))));
  times.push(performance.now() - t0);
  venue.run({ type: 'perp.cancel', account: OWNER, orderId: id });
}
times.sort((a, b) => a - b);
const us = (ms: number): string => (ms * 1000).toFixed(1);
console.log(`reduce-only placement: ${RO} resting reduce-only asks, ${REPS} plain bids, node ${process.version}`);
console.log(`reduce-only ask placed: mean ${us(roMean)} us (first placements include warm-up)`);
console.log(`plain bid placed: p50 ${us(times[Math.floor(REPS / 2)]!)} us, p99 ${us(times[Math.floor(REPS * 0.99)]!)} us`);
