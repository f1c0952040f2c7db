/**
 * What one option bulk quote costs an account that quotes many instruments (issue 26): the
 * reference market maker quotes every listed option from one account, so each quote's margin check
 * must not cost what the whole account holds.
 *
 * For each N (default 10, 340 and 3,400): a fresh `Exchange` lists enough option strikes (the
 * ladders widened for N above the default listing), one maker account quotes N instruments one bid
 * and one ask each (the reference maker's own quoting functions, agents/quoting.ts), a taker lifts
 * part of the maker's ask on every tenth of them and of its bid on every tenth other (so the maker holds
 * shorts, with maintenance and worst-case short margin, and longs), and a clock tick has the option
 * board fit its marks. Then, timed by `Exchange.execute` alone:
 *   - steady: one bulk quote (cancelAll) replacing a two-level, two-sided ladder on one instrument
 *     (2 bids, 2 asks; `--levels 1`: one bid and one ask, the reference maker's own quote), the
 *     ladder moving one tick each time, nothing else happening in between;
 *   - after tick: the first such quote after a clock tick (the board fitted its marks again);
 *   - after index: the first such quote after an index move (the risk spot changed).
 * The last two are what re-valuing the account costs when its pricing inputs change (the index
 * move is BTC's: the BTC half of the account is revalued). `--full-revaluation` has every check
 * recompute the whole account (ClobEngine.fullRevaluation, the oracle of the tests: what the checks
 * cost before the margin was kept, with today's order walks).
 *
 * Run: node --import tsx bench/engine/quote-portfolio.ts [--sizes 10,340,3400 --reps 2000 --changes 100 --levels 2 --full-revaluation]
 */
import { parseArgs } from 'node:util';
import { optionQuote } from '../../src/agents/quoting.ts';
import { MARKET_MAKER_CONFIG } from '../../src/config/market-maker.ts';
import { optionInstruments, type OptionInstrument } from '../../src/core/clob/views.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange, type CoreConfig } from '../../src/core/exchange.ts';
import type { OrderRequest } from '../../src/core/linear/order.ts';
import { futureId } from '../../src/core/listings.ts';
import { formatDecimal, fromFloat, fx, toFloat, type Fixed } from '../../src/core/money.ts';
import { benchConfig } from './support/exchange-driver.ts';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10,340,3400' },
    reps: { type: 'string', default: '2000' },
    changes: { type: 'string', default: '100' },
    'full-revaluation': { type: 'boolean', default: false },
    levels: { type: 'string', default: '2' },
  },
});
const SIZES = args.sizes.split(',').map(Number);
const REPS = Number(args.reps);
const CHANGES = Number(args.changes);
/** Levels a side of the timed ladder: 1 is the reference maker's own quote (one bid, one ask). */
const LEVELS = Number(args.levels);
const YEAR = 365 * 86_400_000;
const MAKER = '0x00000000000000000000000000000000000000aa';
const TAKER = '0x00000000000000000000000000000000000000bb';
const INDEX: Record<string, string> = { BTC: '97000', ETH: '3400' };

/** The bench venue with `strikes` strikes each side of the money and room for the maker's orders. */
function config(strikes: number, orders: number): CoreConfig {
  const base = benchConfig();
  const options = base.clob.options.map((u) => ({ ...u, strikesEachSide: strikes }));
  const limits = { ...base.clob.limits, maxOpenOrdersPerAccount: orders };
  return { ...base, clob: { ...base.clob, options, limits } };
}

function request(marketId: string, side: 'buy' | 'sell', price: Fixed, quantity: string, type = 'gtc'): OrderRequest {
  return {
    marketId, side: side === 'buy' ? 0 : 1, type: 'limit', quantity: fx(quantity), price,
    timeInForce: type === 'ioc' ? 'ioc' : 'gtc', postOnly: false, reduceOnly: false, marginMode: 'cross',
    clientOrderId: null, stopPrice: null, takeProfitPrice: null, stopLossPrice: null,
    selfTradePrevention: 'cancel_maker', quoteId: type === 'ioc' ? null : 'mm',
  };
}

class Venue {
  readonly ex: Exchange;
  t = Date.UTC(2026, 10, 22, 12);
  private index = { ...INDEX };

  constructor(strikes: number, orders: number) {
    this.ex = new Exchange(config(strikes, orders));
    if (args['full-revaluation']) (this.ex.clob as { fullRevaluation?: boolean }).fullRevaluation = true;
  }

  run(command: Command): number {
    this.t += 1;
    const t0 = performance.now();
    const out = this.ex.execute(command, this.t);
    const us = (performance.now() - t0) * 1000;
    if (!out.ok) throw new Error(`${command.type} refused: ${out.code} ${out.message}`);
    return us;
  }

  publish(u: string, move = 0): void {
    if (move !== 0) this.index[u] = String(Number(this.index[u]) + move);
    this.run({ type: 'index.publish', underlying: u, price: fx(this.index[u]!), sourceTs: this.t + 1 });
  }

  fund(account: string, n: number, usdc: string): void {
    const txHash = `0x${n.toString(16).padStart(64, '0')}`;
    this.run({ type: 'chain.deposit_observed', txHash, account, amount: fx(usdc), confirmations: 1 });
    this.run({ type: 'wallet.transfer', account, from: 'wallet', to: 'options', amount: fx(usdc) });
  }

  /** The reference maker's bid and ask for `i` now (Black-76 on the future mark, its vol view). */
  levels(i: OptionInstrument): { side: 'buy' | 'sell'; price: Fixed }[] {
    const future = this.ex.linear.markets.get(futureId(i.underlying, i.expiry))!;
    const m = this.ex.clob.markets.get(i.id)!;
    const input = {
      forward: toFloat(this.ex.linear.markAt(future, this.t)!), strike: toFloat(i.strike),
      T: (i.expiry - this.t) / YEAR, type: i.type, view: MARKET_MAKER_CONFIG.vol[i.underlying]!,
      position: 0, tick: toFloat(m.units.tick),
    };
    return optionQuote(input, MARKET_MAKER_CONFIG.option)
      .map((l) => ({ side: l.side, price: fromFloat(l.price, i.priceDecimals, 'halfUp')! }));
  }

  quote(marketId: string, levels: OrderRequest[]): number {
    return this.run({
      type: 'clob.quote', account: MAKER,
      quote: { marketId, quoteId: 'mm', cancelAll: true, replaceQuoteId: null, levels },
    });
  }
}

/** The fewest strikes each side that list at least `n` option instruments. */
function strikesFor(n: number): number {
  for (let s = 8; ; s += 4) {
    const v = new Venue(s, 10);
    for (const u of Object.keys(INDEX)) v.publish(u);
    v.run({ type: 'clock.tick' });
    if (optionInstruments(v.ex.clob).length >= n || s > 400) return s;
  }
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
const figures = (xs: number[]): string => {
  const s = [...xs].sort((a, b) => a - b);
  return `p50 ${percentile(s, 0.5).toFixed(1)} µs, p99 ${percentile(s, 0.99).toFixed(1)} µs`;
};

function measure(n: number): void {
  const setupStart = performance.now();
  const v = new Venue(n <= 340 ? 8 : strikesFor(n), 4 * n + 100);
  for (const u of Object.keys(INDEX)) v.publish(u);
  v.run({ type: 'clock.tick' });
  v.fund(MAKER, 1, '2000000000');
  v.fund(TAKER, 2, '2000000000');
  // The listing expiry by expiry from the one nearest 30 days, nearest the money first, until n are
  // quoted (so even 10 instruments fit a slice and have marks; deep wings quote one side).
  const money = (i: OptionInstrument) => Math.abs(toFloat(i.strike) / Number(INDEX[i.underlying]) - 1);
  const month = (i: OptionInstrument) => Math.abs(i.expiry - v.t - 30 * 86_400_000);
  const all = optionInstruments(v.ex.clob)
    .sort((a, b) => a.underlying.localeCompare(b.underlying) || month(a) - month(b) || money(a) - money(b));
  const quoted: OptionInstrument[] = [];
  for (const i of all) {
    if (quoted.length === n) break;
    const levels = v.levels(i);
    if (levels.length === 0) continue;
    v.quote(i.id, levels.map((l) => request(i.id, l.side, l.price, '0.5')));
    quoted.push(i);
  }
  // Positions: the taker lifts part of the ask of every tenth instrument and of the bid of every tenth
  // other (the quotes stay two-sided, so the board still fits them).
  let shorts = 0;
  let longs = 0;
  quoted.forEach((i, k) => {
    const levels = v.levels(i);
    const ask = levels.find((l) => l.side === 'sell');
    const bid = levels.find((l) => l.side === 'buy');
    if (k % 10 === 0 && ask !== undefined) {
      v.run({ type: 'clob.place', account: TAKER, request: request(i.id, 'buy', ask.price, '0.2', 'ioc') });
      shorts++;
    } else if (k % 10 === 5 && bid !== undefined) {
      v.run({ type: 'clob.place', account: TAKER, request: request(i.id, 'sell', bid.price, '0.2', 'ioc') });
      longs++;
    }
  });
  v.run({ type: 'clock.tick' });
  const marked = quoted.filter((i) => v.ex.board.mark(i.id, v.t) !== null).length;
  // The target: the first quoted instrument with a two-sided ladder, near the money.
  const target = quoted.find((i) => v.levels(i).length === 2 && i.underlying === 'BTC' && i.type === 'call'
    && toFloat(i.strike) >= Number(INDEX.BTC))!;
  const ladder = (shift: number): OrderRequest[] => {
    const tick = v.ex.clob.markets.get(target.id)!.units.tick;
    const [bid, ask] = [v.levels(target).find((l) => l.side === 'buy')!, v.levels(target).find((l) => l.side === 'sell')!];
    const at = (p: Fixed, ticks: number) => p + BigInt(ticks) * tick;
    const out: OrderRequest[] = [];
    for (let k = 0; k < LEVELS; k++) out.push(request(target.id, 'buy', at(bid.price, shift - k), '0.5'));
    for (let k = 0; k < LEVELS; k++) out.push(request(target.id, 'sell', at(ask.price, shift + k), '0.5'));
    return out;
  };
  const ladders = [ladder(0), ladder(-1)];
  const setupS = (performance.now() - setupStart) / 1000;
  const steady: number[] = [];
  for (let r = 0; r < 200; r++) v.quote(target.id, ladders[r % 2]!); // warm-up
  for (let r = 0; r < REPS; r++) {
    steady.push(v.quote(target.id, ladders[r % 2]!));
    if ((r + 1) % 1000 === 0) v.run({ type: 'clock.tick' }); // marks stay fresh (untimed)
  }
  const afterTick: number[] = [];
  const afterIndex: number[] = [];
  for (let r = 0; r < CHANGES; r++) {
    v.run({ type: 'clock.tick' });
    afterTick.push(v.quote(target.id, ladders[r % 2]!));
    v.publish('BTC', r % 2 === 0 ? 1 : -1);
    afterIndex.push(v.quote(target.id, ladders[(r + 1) % 2]!));
  }
  const account = v.ex.clob.findAccount(v.ex.accounts.find(MAKER)!.id)!;
  // Kept terms recomputed at every read (kept option margin only; absent before it).
  const kept = (account as { margin?: { byUnderlying: Map<string, { terms: Map<unknown, unknown>; volatile: Set<unknown> }> } }).margin;
  const volatile = kept === undefined ? '' : `, ${[...kept.byUnderlying.values()].reduce((n, u) => n + u.volatile.size, 0)} of `
    + `${[...kept.byUnderlying.values()].reduce((n, u) => n + u.terms.size, 0)} kept margin terms volatile`;
  const funds = v.ex.assetBalances(MAKER).find((b) => b.bucket === 'options' && b.asset === 'USDC')!;
  console.log(`N=${n}: ${all.length} listed, ${quoted.length} quoted (${marked} with a fresh mark), `
    + `${account.orders.size} resting orders, ${shorts} shorts and ${longs} longs${volatile}; options locked `
    + `${formatDecimal(funds.locked)} USDC; setup ${setupS.toFixed(1)} s`);
  console.log(`  steady bulk quote (${REPS}):  ${figures(steady)}`);
  console.log(`  first after a tick (${CHANGES}): ${figures(afterTick)}`);
  console.log(`  first after an index move (${CHANGES}): ${figures(afterIndex)}`);
}

const mode = args['full-revaluation'] ? ', every check recomputing the whole account' : '';
console.log(`quote-portfolio: one option bulk quote (cancelAll, 2 bids + 2 asks) by an account quoting N instruments${mode}, node ${process.version}`);
for (const n of SIZES) measure(n);
