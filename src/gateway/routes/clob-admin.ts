/**
 * Operator endpoint of the spot venue (registered only with ADMIN_TOKEN, like every /admin route):
 * `POST /admin/treasury/grant` credits spot inventory of a base asset (BTC, ETH) to an account's
 * spot bucket from the `treasury` system account, through the `treasury.grant` core command. It is
 * the funding tool for market makers and tests: base assets cannot be deposited on chain in this
 * version (deposits and withdrawals are USDC), so without it nobody could sell spot first. USDC is
 * never granted: it only enters through deposits.
 */
import { Type } from 'typebox';
import type { TypedApp } from '../app.ts';
import { execute, type GatewayContext } from '../context.ts';
import { parseAmount } from '../decimals.ts';
import { apiError } from '../errors.ts';
import { dec } from '../format.ts';
import { Address, responses } from '../schemas/common.ts';
import { Decimal } from '../validation.ts';

const Asset = Type.String({ pattern: '^[A-Z][A-Z0-9]{1,9}$', description: 'a spot base asset, e.g. BTC' });
const GrantView = Type.Object({
  walletAddress: Type.String(),
  asset: Type.String(),
  amount: Type.String(),
  spotBalance: Type.String(),
});

export function clobAdminRoutes(app: TypedApp, ctx: GatewayContext): void {
  app.post('/admin/treasury/grant', {
    config: { access: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Credit spot inventory of a base asset from the treasury (operator / market-maker funding)',
      body: Type.Object(
        { walletAddress: Address, asset: Asset, amount: Decimal() },
        { additionalProperties: false },
      ),
      response: responses({ 200: GrantView }, [400, 401]),
    },
  }, async (req) => {
    const { asset } = req.body;
    if (asset === ctx.core.config.settlementAsset || !ctx.core.config.spotAssets.includes(asset)) {
      throw apiError('VALIDATION_ERROR', `asset must be one of ${ctx.core.config.spotAssets.join(', ')}`);
    }
    const amount = parseAmount(req.body.amount, 'amount', ctx.core.config.assetDecimals[asset] ?? 8);
    const account = req.body.walletAddress.toLowerCase();
    const r = await execute(ctx, { type: 'treasury.grant', account, asset, amount });
    const walletAddress = req.body.walletAddress;
    return { walletAddress, asset, amount: dec(r.amount), spotBalance: dec(r.balance) };
  });
}
