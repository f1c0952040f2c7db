/**
 * Market-maker protection endpoints (beyond the contract, additive; research/mechanics.md 3.8):
 * set or remove the protection of one underlying, read its state, reset a freeze. Session or an
 * API key (read for the state, trade to change it). Changes are core commands like every other.
 */
import { Type } from 'typebox';
import type { MmpConfig } from '../../core/clob/mmp.ts';
import { parseDecimal } from '../../core/money.ts';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { execute, type GatewayContext } from '../context.ts';
import { apiError } from '../errors.ts';
import { MmpConfigBody, MmpStatusView, mmpStatusView } from '../schemas/clob.ts';
import { responses } from '../schemas/common.ts';

const DESCRIPTION = `Per (account, underlying): only maker fills of orders placed through the quote
endpoints (POST /quotes, /options/quotes, /quotes/bulk) on that underlying's options count, over a
sliding window of windowMs. The sums compared are the contracts filled, |Σ signed contracts x delta| and
|Σ signed contracts x vega| (buys +, sells −; an instrument without Greeks counts quantity only). When
one reaches its limit the protection trips: the caller's quote orders on the underlying's options are
cancelled in the same sequenced step (after the taker order that tripped it has finished matching) and
new quote requests for it are refused with 422 MMP_TRIGGERED until frozenMs has passed (0: until POST
/options/mmp/reset). Plain orders are never affected. windowMs 0 removes the protection. Setting a
configuration clears the window and any freeze.`;

function positive(value: string | undefined, field: string) {
  if (value === undefined) return null;
  const r = parseDecimal(value, { positive: true });
  if (!r.ok) throw apiError('INVALID_DECIMAL', `${field} must be a positive decimal string`);
  return r.value;
}

export function clobMmpRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.post('/options/mmp', {
    config: { access: 'trade' },
    schema: {
      tags: ['options-spot'],
      summary: 'Set (or with windowMs 0 remove) market-maker protection for an underlying',
      description: DESCRIPTION,
      body: MmpConfigBody, response: responses({ 200: Type.Array(MmpStatusView) }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const address = callerAddress(req);
    const b = req.body;
    const config: MmpConfig | null = b.windowMs === 0 ? null : {
      windowMs: b.windowMs,
      frozenMs: b.frozenMs,
      quantityLimit: positive(b.quantityLimit, 'quantityLimit')!,
      deltaLimit: positive(b.deltaLimit, 'deltaLimit'),
      vegaLimit: positive(b.vegaLimit, 'vegaLimit'),
    };
    await execute(ctx, { type: 'clob.mmp_set', account: address, underlying: b.underlying, config });
    return statuses(ctx, address);
  });

  app.get('/options/mmp', {
    config: { access: 'read' },
    schema: {
      tags: ['options-spot'],
      summary: 'The caller\'s market-maker protection per underlying, with the current window and freeze',
      description: DESCRIPTION,
      response: responses({ 200: Type.Array(MmpStatusView) }),
    },
  }, async (req) => statuses(ctx, callerAddress(req)));

  app.post('/options/mmp/reset', {
    config: { access: 'trade' },
    schema: {
      tags: ['options-spot'], summary: 'Lift a market-maker protection freeze now and clear its window',
      body: Type.Object(
        { underlying: Type.String({ pattern: '^[A-Z][A-Z0-9]{1,9}$' }) },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(MmpStatusView) }, [400, 401, 403, 404, 429]),
    },
  }, async (req) => {
    const address = callerAddress(req);
    await execute(ctx, { type: 'clob.mmp_reset', account: address, underlying: req.body.underlying });
    return statuses(ctx, address);
  });
}

function statuses(ctx: GatewayContext, address: string) {
  const id = ctx.core.accountId(address);
  return id === undefined ? [] : ctx.core.mmpStatus(id, ctx.now()).map(mmpStatusView);
}
