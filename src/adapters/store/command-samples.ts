/**
 * Realistic commands of every type, built as their producers build them (the gateway's order and
 * quote requests, the reference market maker's ladders and option quotes, the simulated feed's
 * observations, the chain watcher's deposits and withdrawal moves), from a seeded random source.
 * The journal codec's tests round-trip them and bench/store/command-codec.ts measures on them;
 * `optionBulkQuote` and `perpQuoteLadder` are the market maker's two most frequent records.
 */
import type { Command } from '../../core/commands.ts';
import type { OrderRequest } from '../../core/linear/order.ts';
import type { Fixed } from '../../core/money.ts';

/** A deterministic random source in [0, 1) (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Random = () => number;
const MAKER = `0x${'5c7d'.repeat(10)}`;
const T0 = Date.UTC(2026, 10, 27, 12);

const int = (r: Random, below: number) => Math.floor(r() * below);
const pick = <T>(r: Random, list: readonly T[]): T => list[int(r, list.length)]!;
const hex = (r: Random, bytes: number) => '0x' + Array.from({ length: bytes }, () => int(r, 256).toString(16).padStart(2, '0')).join('');
/** `units` steps of 10^-decimals, as a Fixed. */
const fixed = (units: number, decimals: number): Fixed => BigInt(units) * 10n ** BigInt(18 - decimals);
const address = (r: Random) => (r() < 0.3 ? MAKER : hex(r, 20));
const perpMarket = (r: Random) => pick(r, ['BTC-PERP', 'ETH-PERP', 'BTC-25DEC26', 'ETH-26MAR27']);
const spotMarket = (r: Random) => pick(r, ['BTC-USDC', 'ETH-USDC']);

function optionMarket(r: Random): string {
  const btc = r() < 0.6;
  const strike = btc ? 60_000 + 1_000 * int(r, 80) : 2_000 + 50 * int(r, 60);
  return `${btc ? 'BTC' : 'ETH'}-${pick(r, ['28NOV26', '04DEC26', '25DEC26', '26MAR27'])}-${strike}-${r() < 0.5 ? 'C' : 'P'}`;
}

/** An order request as gateway/order-requests.ts builds it. */
function orderRequest(r: Random, marketId: string, options: Partial<OrderRequest> = {}): OrderRequest {
  const market = r() < 0.15;
  const trigger = r() < 0.1;
  return {
    marketId,
    side: r() < 0.5 ? 0 : 1,
    type: market ? 'market' : 'limit',
    quantity: fixed(1 + int(r, 5_000), 4),
    price: market ? null : fixed(9_000_000 + int(r, 2_000_000), 1),
    timeInForce: market ? 'ioc' : pick(r, ['gtc', 'gtc', 'gtc', 'ioc', 'fok']),
    postOnly: !market && r() < 0.2,
    reduceOnly: r() < 0.1,
    marginMode: r() < 0.8 ? 'cross' : 'isolated',
    clientOrderId: r() < 0.3 ? `cl-${int(r, 1e9)}` : null,
    stopPrice: trigger ? fixed(9_500_000 + int(r, 1_000_000), 1) : null,
    takeProfitPrice: r() < 0.05 ? fixed(11_000_000, 1) : null,
    stopLossPrice: r() < 0.05 ? fixed(8_000_000, 1) : null,
    selfTradePrevention: pick(r, ['cancel_maker', 'cancel_maker', 'cancel_taker', 'cancel_both']),
    quoteId: null,
    ...options,
  };
}

/** One level of a market maker's ladder: a post-only-free limit quote tagged 'mm'. */
function quoteLevel(marketId: string, side: 0 | 1, price: Fixed, quantity: Fixed): OrderRequest {
  return {
    marketId, side, type: 'limit', quantity, price, timeInForce: 'gtc', postOnly: false, reduceOnly: false,
    marginMode: 'cross', clientOrderId: null, stopPrice: null, takeProfitPrice: null, stopLossPrice: null,
    selfTradePrevention: 'cancel_maker', quoteId: 'mm',
  };
}

/** The market maker's option quote: a bid and an ask on one option, replacing its quotes there. */
export function optionBulkQuote(r: Random = seededRandom(1)): Command {
  const marketId = optionMarket(r);
  const bid = 100 + int(r, 50_000);
  const levels = [quoteLevel(marketId, 0, fixed(bid, 1), fixed(5, 1)), quoteLevel(marketId, 1, fixed(bid + 5 + int(r, 400), 1), fixed(5, 1))];
  return { type: 'clob.quote', account: MAKER, quote: { marketId, quoteId: 'mm', cancelAll: true, replaceQuoteId: null, levels } };
}

/** The market maker's perp ladder: five bids and five asks around the mark (config/market-maker.ts). */
export function perpQuoteLadder(r: Random = seededRandom(1)): Command {
  const marketId = 'BTC-PERP';
  const mid = 970_000 + int(r, 20_000);
  const levels: OrderRequest[] = [];
  for (let i = 0; i < 5; i++) {
    const offset = 2 + i * 3 + int(r, 3);
    levels.push(quoteLevel(marketId, 0, fixed(mid - offset * 2, 1), fixed(25, 2)));
    levels.push(quoteLevel(marketId, 1, fixed(mid + offset * 2, 1), fixed(25, 2)));
  }
  return { type: 'perp.quote', account: MAKER, quote: { marketId, quoteId: 'mm', cancelAll: true, replaceQuoteId: null, levels } };
}

/** One realistic command of each type, in the order of core/commands.ts. */
export function commandOfEachType(r: Random): Command[] {
  const account = address(r);
  const usdc = () => fixed(1 + int(r, 10_000_000), 2);
  const sources = ['coinbase-sim', 'kraken-sim', 'bitstamp-sim', 'binance-sim', 'okx', 'bybit'];
  const observations = Array.from({ length: 2 + int(r, 14) }, (_, i) => ({
    source: sources[i % sources.length]!, price: fixed(9_700_000 + int(r, 10_000), 2), ts: T0 + int(r, 1000),
  }));
  const moves = [{ to: 'processing' as const }, { to: 'sent' as const, txHash: hex(r, 32) }, { to: 'confirmed' as const, confirmations: 3 },
    { to: 'insufficient_liquidity' as const }, { to: 'failed' as const, reason: 'reverted' }];
  const option = optionMarket(r);
  const price = (): Fixed | null => (r() < 0.5 ? null : fixed(1 + int(r, 100_000), 1));
  return [
    { type: 'wallet.transfer', account, from: 'wallet', to: pick(r, ['perps', 'options', 'spot'] as const), amount: usdc(), clientId: r() < 0.5 ? null : `t-${int(r, 1e6)}` },
    { type: 'wallet.withdraw', account, amount: usdc(), clientId: null },
    { type: 'chain.deposit_observed', txHash: hex(r, 32), account, amount: usdc(), confirmations: int(r, 12) },
    { type: 'chain.deposit_reorged', txHash: hex(r, 32) },
    { type: 'withdrawal.move', id: `wd_${int(r, 100_000)}`, move: pick(r, moves) },
    { type: 'index.publish', underlying: pick(r, ['BTC', 'ETH']), price: fixed(9_700_000 + int(r, 10_000), 2), sourceTs: T0 },
    { type: 'prices.observe', underlying: pick(r, ['BTC', 'ETH']), observations },
    { type: 'clock.tick' },
    {
      type: 'perp.place', account,
      request: r() < 0.3 ? { ...orderRequest(r, perpMarket(r), { marginMode: 'isolated' }), leverage: fixed(10 + int(r, 490), 1) } : orderRequest(r, perpMarket(r)),
    },
    { type: 'perp.cancel', account, orderId: 1 + int(r, 10_000_000) },
    { type: 'perp.cancel_all', account, filter: r() < 0.5 ? {} : { marketId: perpMarket(r), marginMode: 'cross' } },
    r() < 0.5 ? perpQuoteLadder(r) : {
      type: 'perp.quote', account, quote: { marketId: 'ETH-PERP', quoteId: 'q1', cancelAll: false, replaceQuoteId: 'q1', levels: [
        quoteLevel('ETH-PERP', 0, fixed(34_000, 1), fixed(4, 0)), quoteLevel('ETH-PERP', 1, fixed(34_010, 1), fixed(4, 0))] },
    },
    { type: 'perp.modify', account, orderId: 1 + int(r, 10_000_000), price: price(), quantity: r() < 0.3 ? null : fixed(1 + int(r, 100), 3) },
    { type: 'perp.close', account, close: { marketId: perpMarket(r), marginMode: 'cross', quantity: r() < 0.5 ? null : fixed(1, 3), type: 'market', price: null, timeInForce: 'ioc' } },
    { type: 'orders.cancel_all_after', account, timeoutMs: r() < 0.2 ? 0 : 5_000 + int(r, 595_001) },
    { type: 'orders.cancel_all', account },
    { type: 'clob.place', account, request: orderRequest(r, r() < 0.7 ? option : spotMarket(r), { marginMode: 'cross' }) },
    { type: 'clob.cancel', account, orderId: 1 + int(r, 10_000_000) },
    { type: 'clob.cancel_all', account, filter: r() < 0.5 ? { underlying: 'BTC' } : { marketId: option, quoteId: 'mm' } },
    { type: 'clob.modify', account, orderId: 1 + int(r, 10_000_000), price: price(), quantity: fixed(1 + int(r, 100), 1) },
    optionBulkQuote(r),
    { type: 'clob.strategy', account, strategy: { name: r() < 0.5 ? null : 'call spread', allOrNone: true, cancelOnFailure: false, legs: [
      { marketId: option, side: 0, quantity: fixed(1, 0), price: fixed(int(r, 50_000), 1) },
      { marketId: optionMarket(r), side: 1, quantity: fixed(1, 0), price: fixed(int(r, 50_000), 1) }] } },
    { type: 'clob.mmp_set', account, underlying: 'BTC', config: r() < 0.2 ? null : { windowMs: 5_000, frozenMs: 10_000, quantityLimit: fixed(100, 0), deltaLimit: r() < 0.5 ? null : fixed(25, 1), vegaLimit: null } },
    { type: 'clob.mmp_reset', account, underlying: 'ETH' },
    { type: 'treasury.grant', account: MAKER, asset: pick(r, ['BTC', 'ETH']), amount: fixed(10, 0) },
  ];
}
