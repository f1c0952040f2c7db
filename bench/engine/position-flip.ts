/**
 * What a trade that flips a position through zero costs a market maker who quotes many orders.
 * A position that closes or flips cancels its reduce-only orders (they would now add to it); the
 * engine looks for them only when the position counts one resting or the market holds a
 * conditional order of the account, so a quoting account's flips cost the same with 10 or 1,000
 * plain orders resting.
 *
 * One account rests `--orders` plain bids and asks far from the touch, holds a short of 0.01 BTC,
 * then `--reps` times buys 0.02 (short to long) and sells 0.02 (long to short) with IOC orders
 * against a counterparty's resting liquidity. Reports the p50 and p99 of the flipping IOC
 * (Exchange.execute).
 *
 * Run: node --import tsx bench/engine/position-flip.ts [--orders 1000 --reps 2000]
 */
import { parseArgs } from 'node:util';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import { benchConfig, ExchangeDriver, perpOrder } from './support/exchange-driver.ts';

const { values: args } = parseArgs({
  options: { orders: { type: 'string', default: '1000' }, reps: { type: 'string', default: '2000' } },
});
const ORDERS = Number(args.orders);
const REPS = Number(args.reps);
const MAKER = '0x' + '1'.repeat(40);
const COUNTERPARTY = '0x' + '2'.repeat(40);

const config = benchConfig();
const limits = { ...config.linear.limits, maxOpenOrdersPerAccount: ORDERS + 10, maxOpenOrdersPerMarket: ORDERS + 10 };
const venue = new ExchangeDriver({ ...config, linear: { ...config.linear, limits } });
const ioc = (side: 0 | 1, quantity: string, price: string) => perpOrder(side, quantity, price, { timeInForce: 'ioc' });

venue.run({ type: 'clock.tick' });
venue.publish('BTC', '100000');
for (const account of [MAKER, COUNTERPARTY]) venue.fund(account, '100000000');
for (let i = 0; i < ORDERS; i++) {
  const side = i % 2 === 0 ? BUY : SELL;
  venue.place(MAKER, perpOrder(side, '0.01', String(side === BUY ? 96_000 - (i % 500) : 104_000 + (i % 500))));
}
venue.place(COUNTERPARTY, perpOrder(BUY, '0.01', '100000'));
venue.place(MAKER, ioc(SELL, '0.01', '100000')); // short 0.01

const times: number[] = [];
for (let rep = 0; rep < REPS; rep++) {
  for (const [makerSide, counterSide] of [[BUY, SELL], [SELL, BUY]] as const) {
    venue.place(COUNTERPARTY, perpOrder(counterSide, '0.02', '100000'));
    const t0 = performance.now();
    venue.place(MAKER, ioc(makerSide, '0.02', '100000'));
    times.push(performance.now() - t0);
  }
}
times.sort((a, b) => a - b);
const us = (ms: number): string => (ms * 1000).toFixed(1);
console.log(`position flip: ${ORDERS} resting plain orders, ${times.length} flipping IOCs, node ${process.version}`);
console.log(`flipping IOC: p50 ${us(times[Math.floor(times.length / 2)]!)} us, p99 ${us(times[Math.floor(times.length * 0.99)]!)} us`);
