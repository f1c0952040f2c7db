/**
 * Public market data of the linear engine: the market list (with its alias), order book
 * snapshots and the perp fee schedule. Expired dated futures leave the list at once. The list also
 * carries the spot pairs of the CLOB engine, so `/perps/orderbook/{id}` serves their books too.
 */
import { Type } from 'typebox';
import { BUY, SELL } from '../../core/book/order-book.ts';
import { bookDepth } from '../../core/clob/views.ts';
import { formatDecimal, unitOf } from '../../core/money.ts';
import type { LinearMarketView } from '../../core/queries.ts';
import type { TypedApp } from '../app.ts';
import { histories, type GatewayContext } from '../context.ts';
import { apiError } from '../errors.ts';
import { dec, decOrNull, iso } from '../format.ts';
import { NullableIsoTime, NullableString, responses, StringEnum } from '../schemas/common.ts';
import { spotMarketViews } from './clob-market-list.ts';

export const MAX_BOOK_LEVELS = 5000;

export const MarketView = Type.Object({
  id: Type.String(),
  symbol: Type.String(),
  marketType: StringEnum(['spot', 'perp', 'future']),
  baseSymbol: Type.String(),
  quoteSymbol: Type.String(),
  markPrice: NullableString,
  priceDecimals: Type.Integer(),
  sizeDecimals: Type.Integer(),
  expiry: Type.Optional(Type.String({ format: 'date-time', description: 'dated futures only' })),
  indexMarketId: Type.String(),
  indexPrice: NullableString,
  underlying: Type.String(),
  tickSize: Type.String(),
  stepSize: Type.String(),
  minSize: Type.String(),
  maxSize: Type.String(),
  priceBandPct: Type.String({ description: 'limit prices must be within this percentage of the mark' }),
  maxLeverage: Type.Integer({ description: 'of the first margin tier' }),
  status: Type.String(),
});

/**
 * A level is the pair [price, size]. Written as an array of two strings, not a tuple: TypeBox's
 * tuple is `items: [...]`, which OpenAPI 3.1 (JSON Schema 2020-12) does not allow.
 */
const Level = Type.Array(Type.String(), { minItems: 2, maxItems: 2, description: '[price, size]' });

export const BookSnapshot = Type.Object({
  bids: Type.Array(Level),
  asks: Type.Array(Level),
});

export function linearMarketView(ctx: GatewayContext, m: LinearMarketView, now: number) {
  const s = m.spec;
  return {
    id: s.id,
    symbol: s.symbol,
    marketType: s.type as 'perp' | 'future',
    baseSymbol: s.baseSymbol,
    quoteSymbol: s.quoteSymbol,
    markPrice: decOrNull(ctx.core.markPrice(s.id, now)),
    priceDecimals: s.priceDecimals,
    sizeDecimals: s.sizeDecimals,
    ...(s.expiry === null ? {} : { expiry: iso(s.expiry) }),
    indexMarketId: s.indexMarketId,
    indexPrice: decOrNull(ctx.core.indexPrice(s.underlying, now)),
    underlying: s.underlying,
    tickSize: dec(unitOf(s.priceDecimals)),
    stepSize: dec(unitOf(s.sizeDecimals)),
    minSize: dec(s.minSize),
    maxSize: dec(s.maxSize),
    priceBandPct: formatDecimal(BigInt(s.priceBandBps) * 10n ** 16n),
    maxLeverage: s.marginTiers[0]?.maxLeverage ?? 1,
    status: m.status,
  };
}

/** Book levels [price, size] best first, from the book's flat depth array. */
export function bookSides(m: LinearMarketView, depth: number) {
  const out: number[] = [];
  const side = (s: 0 | 1) => {
    const n = m.book.depth(s, depth, out);
    const levels: [string, string][] = [];
    for (let i = 0; i < n; i++) levels.push([dec(m.units.price(out[2 * i]!)), dec(m.units.size(out[2 * i + 1]!))]);
    return levels;
  };
  return { bids: side(BUY), asks: side(SELL) };
}

export function perpsMarketRoutes(app: TypedApp, ctx: GatewayContext): void {
  const list = async () => {
    const now = ctx.now();
    const linear = [...ctx.core.linearMarkets().values()]
      .filter((m) => m.status === 'open' && (m.spec.expiry === null || m.spec.expiry > now))
      .sort((a, b) => (a.spec.expiry ?? 0) - (b.spec.expiry ?? 0) || (a.spec.id < b.spec.id ? -1 : 1))
      .map((m) => linearMarketView(ctx, m, now));
    return [...linear, ...spotMarketViews(ctx, now)]; // spot pairs (CLOB engine), marked at the index
  };
  const listSchema = {
    config: { access: 'public' as const },
    schema: {
      tags: ['market-data'],
      summary: 'Perpetual, dated-future and spot markets (expired futures leave the list at once)',
      response: responses({ 200: Type.Array(MarketView) }, [429]),
    },
  };
  app.get('/perps/markets', listSchema, list);
  app.get('/markets/linear', listSchema, list);

  app.get('/perps/orderbook/:marketId', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Order book snapshot of a perp, future or spot pair: levels [price, size], best first',
      description: `depth limits the levels per side (default: the full book, at most ${MAX_BOOK_LEVELS} levels).`,
      params: Type.Object({ marketId: Type.String({ maxLength: 40 }) }),
      querystring: Type.Object({ depth: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_BOOK_LEVELS })) }, { additionalProperties: false }),
      response: responses({ 200: BookSnapshot }, [400, 404, 429]),
    },
  }, async (req) => {
    const depth = req.query.depth ?? MAX_BOOK_LEVELS;
    const market = ctx.core.linearMarkets().get(req.params.marketId);
    if (market !== undefined && market.status === 'open') return bookSides(market, depth);
    // Spot pairs are listed in /perps/markets too, so their books are served here as well.
    const spot = ctx.core.clobMarkets().get(req.params.marketId);
    if (spot === undefined || spot.isOption) {
      throw apiError('NOT_FOUND', `market ${req.params.marketId} not found`);
    }
    const d = bookDepth(spot, depth);
    return { bids: d.bids.map(([p, s]) => [dec(p), dec(s)]), asks: d.asks.map(([p, s]) => [dec(p), dec(s)]) };
  });

  app.get('/perps/insurance-fund', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Insurance fund balance, 24 h flows, hourly balance history (7 days) and positions it holds',
      description: 'The fund receives liquidation fees and funding rounding residues, pays deficits of bankrupt accounts and takes over positions the book cannot absorb (unwound at the mark or better). Its positions are listed additively.',
      response: responses({
        200: Type.Object({
          asset: Type.String(),
          balance: Type.String(),
          updatedAt: NullableIsoTime,
          inflow24h: Type.String(),
          outflow24h: Type.String(),
          history: Type.Array(Type.Object({ at: Type.String({ format: 'date-time' }), balance: Type.String() })),
          positions: Type.Array(Type.Object({ marketId: Type.String(), side: Type.String(), size: Type.String(), entryPrice: NullableString })),
        }),
      }, [429]),
    },
  }, async () => insuranceFundView(ctx, ctx.now()));

  app.get('/perps/fees', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Perp fee tiers by rolling 30-day traded notional (negative makerBps is a rebate)',
      response: responses({
        200: Type.Array(Type.Object({ min30dVolumeUsd: Type.String(), makerBps: Type.String(), takerBps: Type.String() })),
      }, [429]),
    },
  }, async () =>
    ctx.core.perpFeeTiers().map((t) => ({
      min30dVolumeUsd: dec(t.min30dVolumeUsd),
      makerBps: dec(t.makerBps),
      takerBps: dec(t.takerBps),
    })),
  );
}

const HOUR = 3_600_000;

/** The fund's ledger account read back: balance, flows and an hourly history. */
async function insuranceFundView(ctx: GatewayContext, now: number) {
  const asset = ctx.core.config.settlementAsset;
  const entries = await (await histories(ctx)).wallet.systemHistory('insurance', asset, now - 7 * 24 * HOUR);
  const balance = ctx.core.insuranceFundBalance();
  let inflow = 0n;
  let outflow = 0n;
  for (const e of entries) {
    if (e.at < now - 24 * HOUR) continue;
    if (e.amount > 0n) inflow += e.amount;
    else outflow -= e.amount;
  }
  const hourly = new Map<number, bigint>();
  for (const e of entries) hourly.set(Math.floor(e.at / HOUR) * HOUR + HOUR, e.balanceAfter);
  return {
    asset,
    balance: dec(balance),
    updatedAt: entries.length === 0 ? null : iso(entries[entries.length - 1]!.at),
    inflow24h: dec(inflow),
    outflow24h: dec(outflow),
    history: [...hourly].map(([at, b]) => ({ at: iso(Math.min(at, now)), balance: dec(b) })),
    positions: ctx.core.insuranceFundPositions().map((p) => ({
      marketId: p.marketId,
      side: p.side,
      size: dec(p.size),
      entryPrice: decOrNull(p.entryPrice),
    })),
  };
}
