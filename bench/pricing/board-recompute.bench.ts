/**
 * Benchmark of the option board as the service runs it: `exchange.board.recompute` for BTC and ETH
 * on a real `Exchange` built from the service's configuration (config/core.ts), with the listings
 * the calendar gives on a fixed date (every listed expiry and strike of both underlyings) and every
 * option quoted by the reference market maker's own quoting functions (agents/quoting.ts with
 * config/market-maker.ts: Black-76 on the expiry's future mark with the maker's vol view, half-spread
 * max(tick, hVol x vega), rounded outward to the tick) through `clob.quote` commands, exactly as
 * the maker's bulk quotes arrive in the core.
 *
 * Two books: `synchronous`, every option quoted on the same forward (the maker's first pass), and
 * `asynchronous`, each option quoted on a forward off by up to ±5 bps (seeded), as when quotes were
 * refreshed at different moments while the forward moved (the maker re-quotes an option once the
 * move shifts its theo by a quarter of its half-spread, and the round robin every 12 s).
 *
 * Timed: one recompute of the whole board (both underlyings: forwards, implied vols from the book
 * mids, one warm-started SVI fit per expiry with its butterfly check and repair, the calendar
 * check, Black-76 mark and Greeks for every row, DVOL), over many iterations with the clock moving
 * 1 s per iteration as on the service's ticks; the first (cold, no warm start) recompute is
 * reported apart. Printed: median, p99 and max; per expiry the forward source, quotes used, the
 * board's fit RMSE in total variance, and the residuals in vol points (book-mid IV of every usable
 * out-of-the-money quote minus the fitted slice's IV: RMSE and max), with the overall maximum.
 *
 * Run: node --import tsx bench/pricing/board-recompute.bench.ts [iterations]
 */
import { coreConfig } from '../../src/config/core.ts';
import { MARKET_MAKER_CONFIG } from '../../src/config/market-maker.ts';
import { optionQuote } from '../../src/agents/quoting.ts';
import { optionInstruments } from '../../src/core/clob/views.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange } from '../../src/core/exchange.ts';
import type { OrderRequest } from '../../src/core/linear/order.ts';
import { futureId } from '../../src/core/listings.ts';
import { fromFloat, fx, toFloat } from '../../src/core/money.ts';
import type { ExpirySlice } from '../../src/core/options/board.ts';
import { impliedVol } from '../../src/pricing/black76.ts';
import { sviImpliedVol } from '../../src/pricing/svi.ts';

const NOW = Date.UTC(2026, 10, 22, 12);
const YEAR = 365 * 86_400_000;
const ITERATIONS = Number(process.argv[2] ?? 500);
const WARMUP = 20;
const MAKER = '0x00000000000000000000000000000000000000aa';
const INDEX: Record<string, string> = { BTC: '97000', ETH: '3400' };
const UNDERLYINGS = Object.keys(INDEX);

let ex: Exchange;
let t = NOW;

/** Park–Miller, so the asynchronous book is the same run to run. */
function prng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 16807) % 2147483647;
    return s / 2147483647;
  };
}

function run(command: Command): void {
  const out = ex.execute(command, t);
  if (!out.ok) throw new Error(`${command.type} refused: ${out.code} ${out.message}`);
}

function request(marketId: string, side: 'buy' | 'sell', price: string, quantity: string): OrderRequest {
  return {
    marketId, side: side === 'buy' ? 0 : 1, type: 'limit', quantity: fx(quantity), price: fx(price),
    timeInForce: 'gtc', postOnly: true, reduceOnly: false, marginMode: 'cross', clientOrderId: null,
    stopPrice: null, takeProfitPrice: null, stopLossPrice: null, selfTradePrevention: 'cancel_maker',
    quoteId: 'mm',
  };
}

/** Lists the board and quotes every option as the reference market maker does. */
function buildBoard(jitterBps: number): number {
  const rand = prng(11);
  for (const u of UNDERLYINGS) {
    run({ type: 'index.publish', underlying: u, price: fx(INDEX[u]!), sourceTs: t });
  }
  run({ type: 'clock.tick' });
  const txHash = `0x${'1'.padStart(64, '0')}`;
  run({ type: 'chain.deposit_observed', txHash, account: MAKER, amount: fx('60000000'), confirmations: 1 });
  run({ type: 'wallet.transfer', account: MAKER, from: 'wallet', to: 'options', amount: fx('50000000') });
  let quoted = 0;
  for (const i of optionInstruments(ex.clob)) {
    const future = ex.linear.markets.get(futureId(i.underlying, i.expiry))!;
    const forward = toFloat(ex.linear.markAt(future, t)!) * (1 + ((2 * rand() - 1) * jitterBps) / 10_000);
    const m = ex.clob.markets.get(i.id)!;
    const tick = toFloat(m.units.tick);
    const input = {
      forward, strike: toFloat(i.strike), T: (i.expiry - t) / YEAR, type: i.type,
      view: MARKET_MAKER_CONFIG.vol[i.underlying]!, position: 0, tick,
    };
    const levels = optionQuote(input, MARKET_MAKER_CONFIG.option).map((l) => {
      const price = fromFloat(l.price, i.priceDecimals, 'halfUp')!;
      return request(i.id, l.side, String(toFloat(price)), String(l.quantity));
    });
    const quote = { marketId: i.id, quoteId: 'mm', cancelAll: true, replaceQuoteId: null, levels };
    run({ type: 'clob.quote', account: MAKER, quote });
    quoted++;
  }
  return quoted;
}

function recomputeAll(): void {
  for (const u of UNDERLYINGS) ex.board.recompute(u, t);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

/** Vol-point residuals of the usable OTM book quotes against the fitted slice (the board's filters). */
function residuals(slice: ExpirySlice): number[] {
  if (slice.svi === null || slice.forward === null) return [];
  const F = toFloat(slice.forward);
  const T = (slice.expiry - t) / YEAR;
  const out: number[] = [];
  for (const r of slice.rows) {
    const K = toFloat(r.strike);
    if ((r.type === 'call') !== K >= F || r.bid === null || r.ask === null || r.bid <= 0n) continue;
    const [b, a] = [toFloat(r.bid), toFloat(r.ask)];
    if (a - b > 0.5 * ((a + b) / 2)) continue;
    const iv = impliedVol({ price: (a + b) / 2, F, K, T, type: r.type });
    if (iv === null) continue;
    out.push(100 * (iv - sviImpliedVol(slice.svi, Math.log(K / F), T)));
  }
  return out;
}

function scenario(name: string, jitterBps: number): void {
  ex = new Exchange(coreConfig({ depositConfirmations: 1, indexMaxAgeMs: 3_600_000 }));
  t = NOW;
  const quoted = buildBoard(jitterBps);
  const t0 = performance.now();
  recomputeAll();
  const cold = performance.now() - t0;
  for (let k = 0; k < WARMUP; k++) {
    t += 1000;
    recomputeAll();
  }
  const total: number[] = [];
  const per: Record<string, number[]> = Object.fromEntries(UNDERLYINGS.map((u) => [u, []]));
  for (let k = 0; k < ITERATIONS; k++) {
    t += 1000;
    const start = performance.now();
    for (const u of UNDERLYINGS) {
      const s = performance.now();
      ex.board.recompute(u, t);
      per[u]!.push(performance.now() - s);
    }
    total.push(performance.now() - start);
  }
  const fmt = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `median ${percentile(s, 0.5).toFixed(2)} ms, p99 ${percentile(s, 0.99).toFixed(2)} ms, `
      + `max ${s.at(-1)!.toFixed(2)} ms`;
  };

  let rows = 0;
  let expiries = 0;
  let maxResidual = 0;
  let maxRmse = 0;
  const lines: string[] = [];
  for (const u of UNDERLYINGS) {
    const board = ex.board.board(u)!;
    for (const e of board.expiries) {
      expiries++;
      rows += e.rows.length;
      const res = residuals(e);
      const rmse = Math.sqrt(res.reduce((s, x) => s + x * x, 0) / Math.max(res.length, 1));
      const max = res.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
      maxResidual = Math.max(maxResidual, max);
      maxRmse = Math.max(maxRmse, rmse);
      const days = ((e.expiry - t) / 86_400_000).toFixed(2).padStart(6);
      const fit = e.fitRmse === null ? 'no fit' : `rmse(w) ${e.fitRmse.toExponential(2)}`;
      const marked = e.rows.filter((r) => r.mark !== null).length;
      const date = new Date(e.expiry).toISOString().slice(0, 10);
      lines.push(`  ${u} ${date} (${days} d) forward ${e.forwardSource}, `
        + `${e.quotesUsed} quotes, ${marked}/${e.rows.length} marked, ${fit}, iv residual rmse `
        + `${rmse.toFixed(3)} / max ${max.toFixed(3)} vol pts, butterfly-free ${e.butterflyFree}, `
        + `calendar-free ${e.calendarFree}`);
    }
  }
  const dvol = UNDERLYINGS.map((u) => `${u} ${ex.board.board(u)!.dvol?.dvol.toFixed(2)}`).join(', ');
  console.log(`\n${name} book: ${expiries} expiries, ${rows} options (${quoted} quoted by the maker's `
    + `quoting functions${jitterBps > 0 ? `, forwards off by up to ±${jitterBps} bps` : ''})`);
  console.log(`whole board (BTC + ETH), ${ITERATIONS} iterations after ${WARMUP} warm-up: ${fmt(total)}`);
  for (const u of UNDERLYINGS) console.log(`  ${u} alone: ${fmt(per[u]!)}`);
  console.log(`first recompute (cold, no warm start): ${cold.toFixed(2)} ms`);
  console.log('fit residuals per expiry:');
  for (const l of lines) console.log(l);
  console.log(`max over expiries: iv residual rmse ${maxRmse.toFixed(3)} vol pts, `
    + `max |residual| ${maxResidual.toFixed(3)} vol pts; DVOL ${dvol}`);
}

console.log(`node ${process.version}; listings of ${new Date(NOW).toISOString()} `
  + '(config/core.ts; index BTC 97000, ETH 3400)');
scenario('synchronous', 0);
scenario('asynchronous', 5);
