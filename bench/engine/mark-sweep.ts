/**
 * What a mark move costs the venue when many accounts have traded perps but few have orders now.
 * After every index update the engine re-marks the underlying's markets and checks the accounts
 * with a position or a live order in them (liquidation, then the resting orders past their bound:
 * lifecycle.ts checkLiquidations). Each market keeps the accounts with live orders
 * (`accountsWithOrders`), so the check no longer passes over every account the engine knows.
 *
 * `--accounts` accounts each place and cancel one BTC-PERP bid, 20 of them then keep a resting
 * order; the figure is the p50 and p99 time of one `index.publish` command (`--reps` of them,
 * after 50 untimed). Then 10 other accounts quote 190 orders each (1,900 resting orders), which
 * the sweep asks again at every mark move: each order's bound is shared per side and position,
 * and the opening test is skipped while an account covers all its orders at once
 * (maker-checks.ts crossOpeningsCovered).
 *
 * Run: node --import tsx bench/engine/mark-sweep.ts [--accounts 100000 --reps 400]
 */
import { parseArgs } from 'node:util';
import { coreConfig } from '../../src/config/core.ts';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange, type Outcome } from '../../src/core/exchange.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../src/core/linear/order.ts';
import { fx } from '../../src/core/money.ts';

const { values: args } = parseArgs({
  options: { accounts: { type: 'string', default: '100000' }, reps: { type: 'string', default: '400' } },
});
const ACCOUNTS = Number(args.accounts);
const REPS = Number(args.reps);
const WITH_ORDERS = 20;
const QUOTERS = 10;
const QUOTES = 190; // under the per-market open-order limit (200)

const exchange = new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3 * 3_600_000 }));
let now = Date.UTC(2026, 10, 22, 10, 0, 0);
const address = (n: number): string => `0x${n.toString(16).padStart(40, '0')}`;

function run(command: Command): Outcome<unknown> & { ok: true } {
  now += 1;
  const outcome = exchange.execute(command, now);
  if (!outcome.ok) throw new Error(`${command.type}: ${outcome.code} ${outcome.message}`);
  return outcome;
}

function bid(side: 0 | 1, price: string): OrderRequest {
  return {
    marketId: 'BTC-PERP', side, type: 'limit', quantity: fx('0.001'), price: fx(price), timeInForce: 'gtc',
    postOnly: false, reduceOnly: false, marginMode: 'cross', ...PLAIN_ORDER,
  };
}

run({ type: 'clock.tick' });
run({ type: 'index.publish', underlying: 'BTC', price: fx('100000'), sourceTs: now });
for (let n = 1; n <= ACCOUNTS; n++) {
  const account = address(n);
  run({ type: 'chain.deposit_observed', txHash: `0x${n}`, account, amount: fx('1000'), confirmations: 1 });
  run({ type: 'wallet.transfer', account, from: 'wallet', to: 'perps', amount: fx('1000') });
  const placed = run({ type: 'perp.place', account, request: bid(BUY, '99000') });
  run({ type: 'perp.cancel', account, orderId: Number((placed.result as { order: { id: string } }).order.id) });
}
for (let n = 1; n <= WITH_ORDERS; n++) {
  run({ type: 'perp.place', account: address(n), request: n % 2 === 0 ? bid(BUY, String(99_500 - n)) : bid(SELL, String(100_500 + n)) });
}

/** p50 and p99 of one `index.publish` over `--reps` of them, after 50 untimed (warm-up). */
function timePublishes(): { p50: number; p99: number } {
  const times: number[] = [];
  for (let i = -50; i < REPS; i++) {
    const t0 = performance.now();
    run({ type: 'index.publish', underlying: 'BTC', price: fx(String(100_000 + (i % 7))), sourceTs: now });
    if (i >= 0) times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(REPS / 2)]!, p99: times[Math.floor(REPS * 0.99)]! };
}

const us = (ms: number): string => (ms * 1000).toFixed(0);
console.log(`mark sweep: ${ACCOUNTS} accounts that traded BTC-PERP, node ${process.version}`);
const few = timePublishes();
console.log(`${WITH_ORDERS} with one resting order each: index.publish p50 ${us(few.p50)} us, p99 ${us(few.p99)} us`);
// Market makers: QUOTERS accounts quoting QUOTES orders each, bids below and asks above the mark.
for (let n = 1; n <= QUOTERS; n++) {
  for (let i = 0; i < QUOTES; i++) {
    const buy = i % 2 === 0;
    const price = buy ? 99_000 - i * 5 - n : 101_000 + i * 5 + n;
    run({ type: 'perp.place', account: address(WITH_ORDERS + n), request: bid(buy ? BUY : SELL, String(price)) });
  }
}
const quoted = timePublishes();
console.log(`and ${QUOTERS} quoting ${QUOTES} orders each: index.publish p50 ${us(quoted.p50)} us, p99 ${us(quoted.p99)} us`);
