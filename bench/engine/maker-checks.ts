/**
 * What one taker costs when it lifts many makers of one account, each asked again at its fill
 * whether it may fill (linear/maker-checks.ts `admits`). The answer needs what the owner's resting reduce-only
 * orders would lose at the mark; each account keeps that sum (linear/reduce-only-losses.ts), so
 * the cost grows with the makers lifted, not with makers × the owner's orders. Four cases, each a
 * fill-or-kill and an immediate-or-cancel taker in turn:
 * - `opening`: 200 resting asks below the mark that open a short (so each fill's loss is checked
 *   against the owner's equity), their owner also holding 200 reduce-only asks in each of
 *   `--ro-markets` ETH markets;
 * - `reducing`: 200 reduce-only asks that close their owner's long;
 * - `plain`: the opening case before the owner holds any reduce-only order (the floor);
 * - `reducing` again once the owner holds the reduce-only asks elsewhere: a fill that shrinks a
 *   position trims its reduce-only orders only when they no longer fit (engine.ts trimReduceOnly),
 *   so those other orders are not walked.
 * Each case takes `--reps` takers; the figure is the median time of `Exchange.execute` for one.
 *
 * Run: node --import tsx bench/engine/maker-checks.ts [--makers 200 --ro-markets 4 --reps 9]
 */
import { parseArgs } from 'node:util';
import { coreConfig } from '../../src/config/core.ts';
import { BUY, SELL } from '../../src/core/book/order-book.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange } from '../../src/core/exchange.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../src/core/linear/order.ts';
import { fx, formatDecimal } from '../../src/core/money.ts';

const { values: args } = parseArgs({
  options: {
    makers: { type: 'string', default: '200' },
    'ro-markets': { type: 'string', default: '4' },
    reps: { type: 'string', default: '9' },
  },
});
const MAKERS = Number(args.makers);
const RO_MARKETS = Number(args['ro-markets']);
const REPS = Number(args.reps);
const HOUR = 3_600_000;
const address = (n: number): string => `0x${n.toString(16).padStart(40, '0')}`;
const MAKER = 5;
const TAKER = 6;
const COUNTERPARTY = 2;

const exchange = new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3 * HOUR }));
let now = Date.UTC(2026, 10, 22, 10, 0, 0);

function run(command: Command): void {
  now += 10;
  const outcome = exchange.execute(command, now);
  if (!outcome.ok) throw new Error(`${command.type}: ${outcome.code} ${outcome.message}`);
}

function order(side: 0 | 1, quantity: string, price: string | null, marketId = 'BTC-PERP', extra: Partial<OrderRequest> = {}): OrderRequest {
  return {
    marketId, side, type: price === null ? 'market' : 'limit', quantity: fx(quantity), price: price === null ? null : fx(price),
    timeInForce: price === null ? 'ioc' : 'gtc', postOnly: false, reduceOnly: false, marginMode: 'cross', ...PLAIN_ORDER, ...extra,
  };
}

const place = (n: number, request: OrderRequest): void => run({ type: 'perp.place', account: address(n), request });

function fund(n: number, amount: string): void {
  run({ type: 'chain.deposit_observed', txHash: `0x${n}`, account: address(n), amount: fx(amount), confirmations: 1 });
  run({ type: 'wallet.transfer', account: address(n), from: 'wallet', to: 'perps', amount: fx(amount) });
}

function publish(): void {
  run({ type: 'index.publish', underlying: 'BTC', price: fx('100000'), sourceTs: now });
  run({ type: 'index.publish', underlying: 'ETH', price: fx('4000'), sourceTs: now });
}

const quantity = (lots: number): string => (0.01 * lots).toFixed(2);

/** Times one taker buying `MAKERS` x 0.01 BTC up to `limit`, alternating fill-or-kill and ioc. */
function timeTaker(rep: number, limit: string): number {
  now += 10;
  const request = order(BUY, quantity(MAKERS), limit, 'BTC-PERP', { timeInForce: rep % 2 === 0 ? 'fok' : 'ioc' });
  const t0 = performance.now();
  const outcome = exchange.execute({ type: 'perp.place', account: address(TAKER), request }, now);
  const ms = performance.now() - t0;
  if (!outcome.ok || outcome.result.fills.length !== MAKERS) throw new Error(`rep ${rep}: the taker did not lift every maker`);
  return ms;
}

/** Flattens the maker and the taker against the counterparty. */
function flatten(makerLong: boolean): void {
  const q = quantity(MAKERS);
  place(COUNTERPARTY, order(makerLong ? BUY : SELL, q, '100000'));
  place(MAKER, order(makerLong ? SELL : BUY, q, null));
  place(COUNTERPARTY, order(BUY, q, '100000'));
  place(TAKER, order(SELL, q, null));
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Asks below the mark (100,000): each fill would lose at the mark, so each is checked against its owner's equity. */
function opening(): number {
  const times: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    for (let i = 0; i < MAKERS; i++) place(MAKER, order(SELL, '0.01', String(99_700 + i)));
    times.push(timeTaker(rep, String(99_700 + MAKERS)));
    flatten(false);
  }
  return median(times);
}

function reducing(): number {
  const times: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    place(COUNTERPARTY, order(SELL, quantity(MAKERS), '100000'));
    place(MAKER, order(BUY, quantity(MAKERS), null));
    for (let i = 0; i < MAKERS; i++) place(MAKER, order(SELL, '0.01', String(99_990 - i), 'BTC-PERP', { reduceOnly: true }));
    times.push(timeTaker(rep, '100000'));
    place(COUNTERPARTY, order(BUY, quantity(MAKERS), '100000'));
    place(TAKER, order(SELL, quantity(MAKERS), null));
  }
  return median(times);
}

/** The maker account long 200 lots in each of `markets` ETH markets, with 200 reduce-only asks on each. */
function reduceOnlyElsewhere(markets: number): number {
  const eth = [...exchange.linear.markets.keys()].filter((id) => id.startsWith('ETH')).slice(0, markets);
  for (const id of eth) {
    const mark = Number(formatDecimal(exchange.linear.markets.get(id)!.mark!));
    place(COUNTERPARTY, order(SELL, '200', mark.toFixed(2), id));
    place(MAKER, order(BUY, '200', null, id));
    for (let i = 0; i < 200; i++) place(MAKER, order(SELL, '0.5', (mark * 0.998 - i * 0.5).toFixed(2), id, { reduceOnly: true }));
  }
  return exchange.linear.findAccount(exchange.accounts.find(address(MAKER))!.id)!.liveReduceOnly;
}

run({ type: 'clock.tick' }); // lists the dated futures
publish();
fund(COUNTERPARTY, '1000000000');
fund(MAKER, '100000000');
fund(TAKER, '1000000000');
console.log(`maker checks: ${MAKERS} makers of one account per taker, ${REPS} takers per case (fok/ioc alternating), node ${process.version}`);
opening(); // warm-up
console.log(`plain: median ${opening().toFixed(2)} ms per taker`);
console.log(`reducing (${MAKERS} reduce-only asks): median ${reducing().toFixed(2)} ms per taker`);
const held = reduceOnlyElsewhere(RO_MARKETS);
console.log(`opening, the owner holding ${held} reduce-only asks in ${RO_MARKETS} ETH markets: median ${opening().toFixed(2)} ms per taker`);
console.log(`reducing, the owner also holding ${held} reduce-only asks in ${RO_MARKETS} ETH markets: median ${reducing().toFixed(2)} ms per taker`);
