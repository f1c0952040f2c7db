/**
 * Wallet routes (contract "Wallet", decisions.md "Money"), all session only: deposit address,
 * balances, per-asset inventory, bucket transfers, withdrawals, ledger history and settlement
 * records. Transfers and withdrawals go through the sequencer and are answered once durable.
 */
import { Type } from 'typebox';
import { getAddress } from 'viem';
import type { SettlementRecord } from '../../core/events.ts';
import type { WalletBalances } from '../../core/exchange.ts';
import { BUCKETS, LEDGER_ENTRY_TYPES } from '../../core/ledger/ledger.ts';
import { SETTLEMENT_STATUSES } from '../../core/wallet/wallet.ts';
import type { TypedApp } from '../app.ts';
import { callerAddress } from '../auth/identity.ts';
import { execute, histories, type GatewayContext } from '../context.ts';
import { HISTORY_ONLY } from '../durable-reads.ts';
import { parseAmount } from '../decimals.ts';
import { apiError } from '../errors.ts';
import { dec, iso } from '../format.ts';
import { Decimal } from '../validation.ts';
import { IsoTime, listLimit, NullableString, responses, StringEnum } from '../schemas/common.ts';
import { CLIENT_ID_PATTERN } from '../schemas/orders.ts';

const Bucket = StringEnum(BUCKETS);
const Amount = Type.String({ description: 'decimal string' });

const BalanceView = Type.Object({
  onchainDepositTotal: Amount,
  pendingDepositTotal: Amount,
  walletBalance: Amount,
  perpsBalance: Amount,
  optionsBalance: Amount,
  spotBalance: Amount,
  pendingWithdrawalTotal: Amount,
});

const SettlementView = Type.Object({
  id: Type.String(),
  kind: StringEnum(['deposit', 'withdraw'] as const),
  status: StringEnum(SETTLEMENT_STATUSES),
  amount: Amount,
  asset: Type.String(),
  walletAddress: Type.String(),
  txHash: NullableString,
  confirmations: Type.Integer(),
  failureReason: NullableString,
  createdAt: IsoTime,
  updatedAt: IsoTime,
});

const balances = (b: WalletBalances) => ({
  onchainDepositTotal: dec(b.onchainDepositTotal),
  pendingDepositTotal: dec(b.pendingDepositTotal),
  walletBalance: dec(b.walletBalance),
  perpsBalance: dec(b.perpsBalance),
  optionsBalance: dec(b.optionsBalance),
  spotBalance: dec(b.spotBalance),
  pendingWithdrawalTotal: dec(b.pendingWithdrawalTotal),
});

const settlementView = (s: SettlementRecord) => ({
  id: s.id,
  kind: s.kind,
  status: s.status,
  amount: dec(s.amount),
  asset: s.asset,
  walletAddress: getAddress(s.walletAddress),
  txHash: s.txHash,
  confirmations: s.confirmations,
  failureReason: s.failureReason,
  createdAt: iso(s.createdAt),
  updatedAt: iso(s.updatedAt),
});

/** The idempotency tag of a transfer or withdrawal (core/wallet/movement-ids.ts). */
const ClientTransferId = Type.String({
  pattern: CLIENT_ID_PATTERN,
  description: 'idempotency tag, 1-36 of [A-Za-z0-9._:/-], unique per account across transfers and withdrawals for 24 h',
});
const CLIENT_TRANSFER_ID_RULE =
  'Optional clientTransferId (1-36 of [A-Za-z0-9._:/-]): transfers and withdrawals share one id space per account, and an id ' +
  'used by an accepted transfer or withdrawal is refused for 24 h with 409 CONFLICT, whose message names what the first ' +
  'attempt did (the withdrawal id, or the transfer\'s ledger entry id); nothing moves twice. A refused attempt reserves ' +
  'nothing. Retry a request whose response was lost with the same id.';

export function walletRoutes(app: TypedApp, ctx: GatewayContext): void {
  const asset = ctx.core.config.settlementAsset;
  const usdcDecimals = ctx.core.config.assetDecimals[asset] ?? 6;
  const accountId = (address: string) => ctx.core.accountId(address);

  app.get('/wallet/deposit-address', {
    config: { access: 'session' },
    schema: {
      tags: ['wallet'],
      summary: 'The account\'s USDC deposit address',
      response: responses({
        200: Type.Object({ address: Type.String(), chainId: Type.Integer(), asset: Type.String(), confirmationsRequired: Type.Integer() }),
      }),
    },
  }, async (req) => ({
    address: ctx.chain.depositAddress(callerAddress(req)),
    chainId: ctx.chain.chainId,
    asset,
    confirmationsRequired: ctx.core.config.depositConfirmations,
  }));

  app.get('/wallet/balance', {
    config: { access: 'session' },
    schema: {
      tags: ['wallet'],
      summary: 'USDC balance of each bucket',
      description: 'onchainDepositTotal is the lifetime total of credited deposits; pendingDepositTotal (additive) is seen on chain but not yet confirmed; pendingWithdrawalTotal is requested and not yet confirmed or refunded.',
      response: responses({ 200: BalanceView }),
    },
  }, async (req) => {
    return balances(ctx.core.walletBalances(callerAddress(req)));
  });

  app.get('/wallet/assets', {
    config: { access: 'session' },
    schema: {
      tags: ['wallet'],
      summary: 'Per asset and bucket: available, locked (order reserves, margin in use) and total',
      response: responses({
        200: Type.Array(Type.Object({ asset: Type.String(), bucket: Bucket, available: Amount, locked: Amount, total: Amount })),
      }),
    },
  }, async (req) => {
    return ctx.core.assetBalances(callerAddress(req)).map((a) => ({
      asset: a.asset,
      bucket: a.bucket,
      available: dec(a.available),
      locked: dec(a.locked),
      total: dec(a.total),
    }));
  });

  app.post('/wallet/transfer', {
    config: { access: 'session' },
    schema: {
      tags: ['wallet'],
      summary: 'Move USDC between two of the caller\'s buckets (atomic, double-entry)',
      description: 'amount must be positive and at most what the source bucket can release (its balance minus order reserves and margin in use); otherwise 400 INSUFFICIENT_BALANCE naming the bucket and the available amount. ' +
        `${CLIENT_TRANSFER_ID_RULE} A transfer's ledger entries carry ref "<from>-><to>".`,
      body: Type.Object({ from: Bucket, to: Bucket, amount: Decimal(), clientTransferId: Type.Optional(ClientTransferId) }, { additionalProperties: false }),
      response: responses({ 200: BalanceView }, [400, 401, 403, 409, 429]),
    },
  }, async (req) => {
    const amount = parseAmount(req.body.amount, 'amount', usdcDecimals);
    if (req.body.from === req.body.to) throw apiError('VALIDATION_ERROR', '`from` and `to` must be different buckets');
    const result = await execute(ctx, {
      type: 'wallet.transfer',
      account: callerAddress(req),
      from: req.body.from,
      to: req.body.to,
      amount,
      clientId: req.body.clientTransferId ?? null,
    });
    return balances(result);
  });

  app.post('/wallet/withdraw', {
    config: { access: 'session' },
    schema: {
      tags: ['wallet'],
      summary: 'Withdraw USDC from the wallet bucket to the signed-in address',
      description: 'Debited at once and counted in pendingWithdrawalTotal; the payout proceeds on chain (see /wallet/settlements). A failed payout is refunded to the wallet bucket. ' +
        CLIENT_TRANSFER_ID_RULE,
      body: Type.Object({ amount: Decimal(), clientTransferId: Type.Optional(ClientTransferId) }, { additionalProperties: false }),
      response: responses({ 200: Type.Object({ withdrawalId: Type.String() }) }, [400, 401, 403, 409, 429]),
    },
  }, async (req) => {
    const amount = parseAmount(req.body.amount, 'amount', usdcDecimals);
    const clientId = req.body.clientTransferId ?? null;
    const settlement = await execute(ctx, { type: 'wallet.withdraw', account: callerAddress(req), amount, clientId });
    return { withdrawalId: settlement.id };
  });

  app.get('/wallet/history', {
    config: { access: 'session', ...HISTORY_ONLY },
    schema: {
      tags: ['wallet'],
      summary: 'Ledger entries of the caller\'s buckets, newest first',
      description: 'Page backwards with `before` = the smallest id already seen.',
      querystring: Type.Object(
        { limit: listLimit(500, 100), before: Type.Optional(Type.Integer({ minimum: 1 })) },
        { additionalProperties: false },
      ),
      response: responses({
        200: Type.Array(Type.Object({
          id: Type.String(),
          type: StringEnum(LEDGER_ENTRY_TYPES),
          amount: Amount,
          txHash: NullableString,
          createdAt: IsoTime,
          bucket: Type.String(),
          asset: Type.String(),
          balanceAfter: Amount,
          ref: NullableString,
        })),
      }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req));
    if (id === undefined) return [];
    const entries = await (await histories(ctx)).wallet.history(id, req.query.limit ?? 100, req.query.before);
    return entries.map((e) => ({
      id: String(e.id),
      type: e.type,
      amount: dec(e.amount),
      txHash: e.txHash,
      createdAt: iso(e.createdAt),
      bucket: e.bucket,
      asset: e.asset,
      balanceAfter: dec(e.balanceAfter),
      ref: e.ref,
    }));
  });

  app.get('/wallet/settlements', {
    config: { access: 'session', ...HISTORY_ONLY },
    schema: {
      tags: ['wallet'],
      summary: 'Deposit and withdrawal records, newest first',
      description: 'Filter by kind and status; page backwards with `before` = the id of the last record seen.',
      querystring: Type.Object(
        {
          kind: Type.Optional(StringEnum(['deposit', 'withdraw'] as const)),
          status: Type.Optional(StringEnum(SETTLEMENT_STATUSES)),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
          before: Type.Optional(Type.String({ maxLength: 64 })),
        },
        { additionalProperties: false },
      ),
      response: responses({ 200: Type.Array(SettlementView) }),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req));
    if (id === undefined) return [];
    const history = (await histories(ctx)).wallet;
    let before: { createdAt: number; id: string } | undefined;
    if (req.query.before !== undefined) {
      const cursor = await history.settlement(req.query.before);
      if (cursor === undefined || cursor.accountId !== id) throw apiError('NOT_FOUND', `settlement ${req.query.before} not found`);
      before = { createdAt: cursor.createdAt, id: cursor.id };
    }
    const rows = await history.settlements({
      accountId: id,
      kind: req.query.kind,
      status: req.query.status,
      limit: req.query.limit ?? 50,
      before,
    });
    return rows.map(settlementView);
  });

  app.get('/wallet/settlements/:id', {
    config: { access: 'session', ...HISTORY_ONLY },
    schema: {
      tags: ['wallet'],
      summary: 'One settlement record of the caller',
      params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
      response: responses({ 200: SettlementView }, [401, 403, 404, 429]),
    },
  }, async (req) => {
    const id = accountId(callerAddress(req));
    const record = await (await histories(ctx)).wallet.settlement(req.params.id);
    if (record === undefined || record.accountId !== id) throw apiError('NOT_FOUND', `settlement ${req.params.id} not found`);
    return settlementView(record);
  });
}
