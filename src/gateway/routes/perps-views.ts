/**
 * Helpers that turn the linear engine's live state into wire views for the perps routes.
 */
import type { MarginMode } from '../../core/records.ts';
import type { GatewayContext } from '../context.ts';
import { apiError } from '../errors.ts';
import { positionView } from '../schemas/orders.ts';

/** The caller's position in a market and mode, valued now, or null when flat. */
export function positionViewOf(ctx: GatewayContext, address: string, marketId: string, mode: MarginMode) {
  const accountId = ctx.core.accountId(address);
  if (accountId === undefined) return null;
  const p = ctx.core.perpPosition(accountId, marketId, mode, ctx.now());
  return p === null ? null : positionView(p);
}

/**
 * A market filter names a listed perp or future (expired futures included: their history stays
 * readable); an unknown id is a 404, as on the public reads, never an empty answer that hides a typo.
 */
export function checkMarketFilter(ctx: GatewayContext, marketId: string | undefined): void {
  if (marketId !== undefined && !ctx.core.linearMarkets().has(marketId)) throw apiError('NOT_FOUND', `market ${marketId} not found`);
}
