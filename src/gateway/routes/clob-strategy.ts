/**
 * Multi-leg strategies (contract "POST /orders/strategy", alias /options/orders/strategy) and
 * their dry run. A strategy is one sequenced command: every leg fills in full now at its limit or
 * nothing executes (422 STRATEGY_NOT_FILLED), and the combined post-trade result passes the margin
 * and balance gate. Legs may be options or spot pairs, each on a different market.
 */
import type { StrategyRequest } from '../../core/clob/strategy.ts';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { execute, type GatewayContext } from '../context.ts';
import { parsePrice, parseSize } from '../decimals.ts';
import { apiError } from '../errors.ts';
import {
  legPreviewView, StrategyBody, StrategyPreviewView, StrategyResultView, strategyLegView,
} from '../schemas/clob.ts';
import { responses } from '../schemas/common.ts';
import { clobMarketSpec } from './clob-trading.ts';

interface Body {
  strategyName?: string;
  allOrNone?: boolean;
  cancelOnFailure?: boolean;
  legs: { market: string; side: 'buy' | 'sell'; quantity: string; price: string }[];
}

function strategyRequest(ctx: GatewayContext, body: Body): StrategyRequest {
  return {
    name: body.strategyName ?? null,
    allOrNone: body.allOrNone ?? true,
    cancelOnFailure: body.cancelOnFailure ?? false,
    legs: body.legs.map((l, i) => {
      const spec = clobMarketSpec(ctx, l.market);
      return {
        marketId: spec.id,
        side: l.side === 'buy' ? 0 : 1,
        quantity: parseSize(l.quantity, `legs.${i}.quantity`, spec.sizeDecimals),
        price: parsePrice(l.price, `legs.${i}.price`, spec.priceDecimals),
      };
    }),
  };
}

const DESCRIPTION = `Atomic fill-or-kill over 2 to 8 legs { market, side, quantity, price } on distinct
markets (options or spot). First every leg passes the order checks (market, state, tick, step, size,
band), then every leg must be fillable in full at its limit now (the caller's own resting orders do not
count: self-trade prevention cancels them), then the combined post-trade result must pass the gate
(options: free collateral after premiums, fee bounds and the initial margin of the resulting positions
may not be negative unless the strategy improves it, 422 INSUFFICIENT_MARGIN; spot: the spot bucket must
fund the buy legs net of the sell legs' proceeds, 400 INSUFFICIENT_BALANCE). Only then do all legs
execute, at the makers' prices; otherwise 422 STRATEGY_NOT_FILLED (or the failing check's code) and
nothing changed. allOrNone defaults to true; false is refused (400 VALIDATION_ERROR). cancelOnFailure is
accepted and has no effect: nothing of a strategy ever rests. A per-leg timeInForce is accepted and
ignored.`;

export function clobStrategyRoutes(app: TypedApp, ctx: GatewayContext): void {
  for (const path of ['/orders/strategy', '/options/orders/strategy']) {
    app.post(path, {
      config: { access: 'trade', orderAction: true },
      schema: {
        tags: ['options-spot'],
        summary: 'Execute a multi-leg strategy: every leg fills in full, or nothing executes',
        description: DESCRIPTION,
        body: StrategyBody, response: responses({ 200: StrategyResultView }, [400, 401, 403, 404, 422, 429]),
      },
    }, async (req) => {
      const address = callerAddress(req);
      const strategy = strategyRequest(ctx, req.body);
      if (!strategy.allOrNone) {
        throw apiError('VALIDATION_ERROR', 'only all-or-none strategies are supported (allOrNone true)');
      }
      const r = await execute(ctx, { type: 'clob.strategy', account: address, strategy });
      const accountId = ctx.core.accountId(address) ?? -1;
      const legs = r.legs.map((l) => strategyLegView(l, accountId));
      return { strategyId: r.strategyId, strategyName: r.name, fullyFilled: r.fullyFilled, legs };
    });
  }

  for (const path of ['/orders/strategy/preview', '/options/orders/strategy/preview']) {
    app.post(path, {
      config: { access: 'read' },
      schema: {
        tags: ['options-spot'],
        summary: 'Dry-run a strategy: per-leg fillable quantity, notional and fee, and whether it executes',
        description: 'The same checks as POST /orders/strategy against the current state, with no side '
          + 'effect; `approved` false carries the code of the first failing check in `reason`. Legs are '
          + 'listed up to the first leg that fails its own checks.',
        body: StrategyBody, response: responses({ 200: StrategyPreviewView }, [400, 401, 403, 404, 429]),
      },
    }, async (req) => {
      const strategy = strategyRequest(ctx, req.body);
      const id = ctx.core.accountId(callerAddress(req)) ?? -1;
      const { legs, rejection } = ctx.core.previewStrategy(id, strategy, ctx.now());
      return {
        approved: rejection === null,
        ...(rejection === null ? {} : { reason: rejection.code, message: rejection.message }),
        legs: legs.map(legPreviewView),
      };
    });
  }
}

