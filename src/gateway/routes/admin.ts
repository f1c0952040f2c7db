/**
 * Operator endpoints (decisions.md "Running the service"), registered only when ADMIN_TOKEN is
 * set (otherwise every /admin path is 404) and guarded by `Authorization: Bearer <ADMIN_TOKEN>`.
 * They act through the same chain port and core commands as everything else.
 */
import { Type } from 'typebox';
import type { TypedApp } from '../app.ts';
import { execute, type GatewayContext } from '../context.ts';
import { parseAmount, parsePrice } from '../decimals.ts';
import { apiError } from '../errors.ts';
import { dec, iso } from '../format.ts';
import { Decimal } from '../validation.ts';
import { Address, IsoTime, responses } from '../schemas/common.ts';

const UNDERLYING = Type.String({ pattern: '^[A-Z][A-Z0-9]{1,9}$', description: 'e.g. BTC' });

export function adminRoutes(app: TypedApp, ctx: GatewayContext): void {
  const asset = ctx.core.config.settlementAsset;
  const decimals = ctx.core.config.assetDecimals[asset] ?? 6;
  const simulated = () => {
    if (ctx.simulatedChain === null) throw apiError('CONFLICT', 'the chain is not the embedded simulated chain');
    return ctx.simulatedChain;
  };

  app.post('/admin/chain/deposits', {
    config: { access: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Put a USDC deposit from walletAddress on the simulated chain',
      description: 'The deposit is credited to the account\'s wallet bucket once it has DEPOSIT_CONFIRMATIONS blocks.',
      body: Type.Object({ walletAddress: Address, amount: Decimal() }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ txHash: Type.String(), depositAddress: Type.String() }) }, [400, 401, 409]),
    },
  }, async (req) => {
    const amount = parseAmount(req.body.amount, 'amount', decimals);
    const owner = req.body.walletAddress.toLowerCase();
    const chain = simulated();
    return { txHash: chain.deposit(owner, amount), depositAddress: chain.depositAddress(owner) };
  });

  app.post('/admin/chain/reorg', {
    config: { access: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Roll the simulated chain back by `depth` blocks (their transactions are dropped)',
      body: Type.Object({ depth: Type.Integer({ minimum: 1, maximum: 1000 }) }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ head: Type.Integer(), droppedTxs: Type.Integer() }) }, [400, 401, 409]),
    },
  }, async (req) => simulated().reorg(req.body.depth));

  app.post('/admin/index', {
    config: { access: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Publish an index price for an underlying (the push feed; an override in tests)',
      body: Type.Object({ underlying: UNDERLYING, price: Decimal() }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ underlying: Type.String(), price: Type.String(), sourceTs: IsoTime }) }, [400, 401]),
    },
  }, async (req) => {
    const price = parsePrice(req.body.price, 'price', 18);
    const now = ctx.now();
    const quote = await execute(ctx, { type: 'index.publish', underlying: req.body.underlying, price, sourceTs: now });
    return { underlying: req.body.underlying, price: dec(quote.price), sourceTs: iso(quote.sourceTs) };
  });
}
