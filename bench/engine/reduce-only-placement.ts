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
import { coreConfig } from '../../src/config/core.ts';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange, type Outcome } from '../../src/core/exchange.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../src/core/linear/order.ts';
import { fx } from '../../src/core/money.ts';

const { values: args } = parseArgs({
  options: { ro: { type: 'string', default: '150' }, reps: { type: 'string', default: '2000' } },
});
const RO = Number(args.ro);
const REPS = Number(args.reps);
const HOUR = 3_600_000;
const OWNER = '0x' + '1'.repeat(40);
const COUNTERPARTY = '0x' + '2'.repeat(40);

const exchange = new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3 * HOUR }));
let now = Date.UTC(2026, 10, 22, 10, 0, 0);

function run(command: Command): Outcome<unknown> & { ok: true } {
  now += 1;
  const outcome = exchange.execute(command, now);
  if (!outcome.ok) throw new Error(`${command.type}: ${outcome.code} ${outcome.message}`);
  return outcome;
}

function order(side: 0 | 1, quantity: string, price: string | null, reduceOnly = false): OrderRequest {
  return {
    marketId: 'BTC-PERP', side, type: price === null ? 'market' : 'limit', quantity: fx(quantity), price: price === null ? null : fx(price),
    timeInForce: price === null ? 'ioc' : 'gtc', postOnly: false, reduceOnly, marginMode: 'cross', ...PLAIN_ORDER,
  };
}

run({ type: 'clock.tick' });
run({ type: 'index.publish', underlying: 'BTC', price: fx('100000'), sourceTs: now });
for (const [i, account] of [OWNER, COUNTERPARTY].entries()) {
  run({ type: 'chain.deposit_observed', txHash: `0x${i}`, account, amount: fx('100000000'), confirmations: 1 });
  run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount: fx('100000000') });
}
run({ type: 'perp.place', account: COUNTERPARTY, request: order(SELL, '10', '100000') });
run({ type: 'perp.place', account: OWNER, request: order(BUY, '10', null) });

let t0 = performance.now();
for (let i = 0; i < RO; i++) run({ type: 'perp.place', account: OWNER, request: order(SELL, '0.01', String(99_990 - i), true) });
const roMean = RO === 0 ? 0 : (performance.now() - t0) / RO;

const times: number[] = [];
for (let rep = 0; rep < REPS; rep++) {
  t0 = performance.now();
  const placed = run({ type: 'perp.place', account: OWNER, request: order(BUY, '0.01', String(96_000 + (rep % 100))) });
  times.push(performance.now() - t0);
  const id = (placed.result as { order: { id: string } }).order.id;
  run({ type: 'perp.cancel', account: OWNER, orderId: Number(id) });
}
times.sort((a, b) => a - b);
const us = (ms: number): string => (ms * 1000).toFixed(1);
console.log(`reduce-only placement: ${RO} resting reduce-only asks, ${REPS} plain bids, node ${process.version}`);
console.log(`reduce-only ask placed: mean ${us(roMean)} us (first placements include warm-up)`);
console.log(`plain bid placed: p50 ${us(times[Math.floor(REPS / 2)]!)} us, p99 ${us(times[Math.floor(REPS * 0.99)]!)} us`);
