/**
 * The option board and the volatility index (contract "Option board", "Volatility index (DVOL)";
 * decisions.md). The board is the only source for the chain and the IV surface: bid and ask are the
 * order books' top of book (read now), mark, iv and the Greeks are reference values from the surface
 * the core fitted on its last clock tick — null for an expiry without a fitted slice and whenever the
 * board is older than its freshness limit (a stale mark is never served). The tradable price is
 * always the order book.
 */
import { Type } from 'typebox';
import type { OptionRow, UnderlyingBoard } from '../../core/options/board.ts';
import { formatDecimal, fromFloat, type Fixed } from '../../core/money.ts';
import type { TypedApp } from '../app.ts';
import type { GatewayContext } from '../context.ts';
import { apiError } from '../errors.ts';
import { decOrNull, iso, isoOrNull } from '../format.ts';
import { IsoTime, NullableIsoTime, NullableString, OrNull, responses, StringEnum } from '../schemas/common.ts';

const PRIMARY = 'BTC';
const BOARD_MAX_AGE_MS = 5_000;

const Underlying = Type.Optional(Type.String({ pattern: '^[A-Z][A-Z0-9]{1,9}$', description: 'BTC (primary) or ETH' }));

export const DvolBlock = Type.Object({
  underlying: Type.String(),
  dvol: NullableString,
  tenorDays: Type.Integer(),
  computedAt: NullableIsoTime,
});

export const BoardView = Type.Object({
  underlyingPrice: NullableString,
  underlyingSymbol: Type.String(),
  expiries: Type.Array(IsoTime),
  expiryForwards: Type.Record(Type.String(), Type.Object({
    forwardPrice: NullableString,
    futuresMarketId: Type.String(),
    forwardSource: OrNull(StringEnum(['future', 'parity', 'index'])),
    calendarArbitrageFree: OrNull(Type.Boolean()),
  })),
  options: Type.Array(Type.Object({
    id: Type.String(),
    type: StringEnum(['call', 'put']),
    strike: Type.String(),
    expiry: IsoTime,
    bid: NullableString,
    ask: NullableString,
    mark: NullableString,
    iv: OrNull(Type.String({ description: 'mark implied volatility in percent, e.g. "55.12"' })),
    delta: NullableString,
    gamma: NullableString,
    vega: OrNull(Type.String({ description: 'USDC per vol point' })),
    theta: OrNull(Type.String({ description: 'USDC per calendar day' })),
  })),
  computedAt: NullableIsoTime,
  volatilityIndex: OrNull(DvolBlock),
});

/** A model float as a plain decimal string at `digits` places (the pricing boundary). */
function num(x: number | null, digits: number): string | null {
  if (x === null) return null;
  const f = fromFloat(x, digits, 'halfUp');
  return f === null ? null : formatDecimal(f);
}

/** An instrument's best bid and ask, or undefined when it is not listed. */
export type TopOfBook = (marketId: string) => { bestBid(): Fixed | null; bestAsk(): Fixed | null } | undefined;

/**
 * The board of `underlying`. `topOfBook` reads the instruments' books: the core's by default (the
 * REST route reads after the durability barrier), the durable book mirrors for the stream.
 */
export function boardView(ctx: GatewayContext, underlying: string, now: number, topOfBook: TopOfBook = (id) => ctx.exchange.clob.markets.get(id)) {
  const board = ctx.exchange.board.board(underlying);
  const index = ctx.exchange.indexPrice(underlying, now);
  // The board is computed on clock ticks; between the index going stale and the next tick it still
  // holds what the fresh index gave. No index now, no mark: the view never shows one without it.
  const fresh = board !== undefined && now - board.computedAt <= BOARD_MAX_AGE_MS && index !== null;
  const expiries = board?.expiries ?? [];
  return {
    underlyingPrice: decOrNull(index),
    underlyingSymbol: underlying,
    expiries: expiries.map((e) => iso(e.expiry)),
    expiryForwards: Object.fromEntries(expiries.map((e) => [iso(e.expiry), {
      forwardPrice: fresh ? decOrNull(e.forward) : null,
      futuresMarketId: e.futuresMarketId,
      forwardSource: fresh ? e.forwardSource : null,
      calendarArbitrageFree: fresh ? e.calendarFree : null,
    }])),
    options: expiries.flatMap((e) => e.rows.map((r) => rowView(r, fresh, topOfBook(r.id)))),
    computedAt: board === undefined ? null : iso(board.computedAt),
    volatilityIndex: dvolBlock(ctx, underlying, now),
  };
}

function rowView(r: OptionRow, fresh: boolean, market: ReturnType<TopOfBook>) {
  const ref = fresh && r.mark !== null;
  return {
    id: r.id,
    type: r.type,
    strike: formatDecimal(r.strike),
    expiry: iso(r.expiry),
    bid: decOrNull(market?.bestBid() ?? null),
    ask: decOrNull(market?.bestAsk() ?? null),
    mark: ref ? decOrNull(r.mark) : null,
    iv: ref ? num(r.iv === null ? null : r.iv * 100, 2) : null,
    delta: ref ? num(r.delta, 4) : null,
    gamma: ref ? num(r.gamma, 8) : null,
    vega: ref ? num(r.vega, 4) : null,
    theta: ref ? num(r.theta, 4) : null,
  };
}

/**
 * DVOL while the index is fresh: the board is computed on clock ticks, and between the index going
 * stale and the next tick it still holds the value the fresh index gave.
 */
function freshDvol(ctx: GatewayContext, underlying: string, now: number) {
  return ctx.exchange.indexPrice(underlying, now) === null ? null : ctx.exchange.board.dvolOf(underlying, now);
}

export function dvolBlock(ctx: GatewayContext, underlying: string, now: number) {
  const d = freshDvol(ctx, underlying, now);
  return { underlying, dvol: d === null ? null : num(d.dvol, 2), tenorDays: 30, computedAt: d === null ? null : iso(d.computedAt) };
}

function knownUnderlying(ctx: GatewayContext, underlying: string | undefined): string {
  const u = underlying ?? PRIMARY;
  const listed = ctx.exchange.config.linear.perps.some((p) => p.underlying === u);
  if (!listed) throw apiError('NOT_FOUND', `underlying ${u} not found`);
  return u;
}

export function optionsBoardRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.get('/markets/board', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: 'Option board: forwards per expiry, every option with top of book and reference mark, IV, Greeks; DVOL',
      description: 'bid/ask are the books\' top of book; mark, iv (percent), delta, gamma, vega (per vol point) and theta (per day) come from the raw-SVI slice fitted to the books on the core\'s last clock tick, on Black-76 with the expiry\'s forward (from its dated future, else put-call parity, else the index: forwardSource). An expiry with fewer than 5 usable quotes has no fitted slice and its rows have no mark; no row has a mark while the index is stale (underlyingPrice null). Reference values only: the tradable price is always the order book.',
      querystring: Type.Object({ underlying: Underlying }, { additionalProperties: false }),
      response: responses({ 200: BoardView }, [400, 404, 429]),
    },
  }, async (req) => boardView(ctx, knownUnderlying(ctx, req.query.underlying), ctx.now()));

  app.get('/markets/dvol', {
    config: { access: 'public' },
    schema: {
      tags: ['market-data'],
      summary: '30-day constant-maturity implied volatility (VIX method on the two expiries around 30 days)',
      description: 'dvol in percent, smoothed by the interquartile mean of the last 120 values; null while inputs are missing or stale. sourceTimestamp is the index time the computation used.',
      querystring: Type.Object({ underlying: Underlying }, { additionalProperties: false }),
      response: responses({
        200: Type.Object({
          underlying: Type.String(),
          dvol: NullableString,
          tenorDays: Type.Integer(),
          computedAt: NullableIsoTime,
          sourceTimestamp: NullableIsoTime,
          raw: NullableString,
        }),
      }, [400, 404, 429]),
    },
  }, async (req) => {
    const underlying = knownUnderlying(ctx, req.query.underlying ?? PRIMARY);
    const d = freshDvol(ctx, underlying, ctx.now());
    return {
      underlying,
      dvol: d === null ? null : num(d.dvol, 2),
      tenorDays: 30,
      computedAt: isoOrNull(d?.computedAt),
      sourceTimestamp: isoOrNull(d?.sourceTs),
      raw: d === null ? null : num(d.raw, 2),
    };
  });
}

export type { UnderlyingBoard };
