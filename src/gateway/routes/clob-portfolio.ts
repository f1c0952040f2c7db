/**
 * The portfolio read models of the options and spot venue:
 *
 *   /portfolio/balances  the payload of the balances stream (decisions.md "Streams"): per bucket
 *                        `{ available, locked, total }` in USDC (locked: order holds and margin in
 *                        use), `pendingWithdrawalTotal`, `updatedAt`, plus (additive) the spot
 *                        bucket's other assets in their own units.
 *   /portfolio/me        options funds (balance, buy holds, initial and maintenance margin, what is
 *                        available, unrealised PnL of marked positions, net Greeks per underlying,
 *                        the positions), spot holdings valued at a fresh index, the perp margin
 *                        summary, and the wallet bucket.
 */
import { Type } from 'typebox';
import { mul } from '../../core/money.ts';
import type { GatewayContext } from '../context.ts';
import { dec, decOrNull, iso } from '../format.ts';
import { OptionPositionSchema, optionAccountSummary, optionPositionView } from '../schemas/clob.ts';
import { IsoTime, NullableString } from '../schemas/common.ts';

const Amount = Type.String();

export const PortfolioView = Type.Object({
  updatedAt: IsoTime,
  options: Type.Object({
    balance: Amount,
    reserved: Type.String({ description: 'held by resting option buys (premium and fee)' }),
    initialMargin: Type.String({ description: 'of the worst-case shorts: positions plus resting sells' }),
    maintenanceMargin: Type.String({ description: 'of the short positions' }),
    available: Type.String({ description: 'balance − reserved − initialMargin' }),
    unrealizedPnl: Type.String({ description: 'of positions with a mark' }),
    greeks: Type.Array(Type.Object({ underlying: Type.String(), delta: Amount, vega: Amount })),
    positions: Type.Array(OptionPositionSchema),
  }),
  spot: Type.Object({
    assets: Type.Array(Type.Object({
      asset: Type.String(),
      available: Amount,
      locked: Amount,
      total: Amount,
      indexPrice: NullableString,
      valueUsd: NullableString,
    })),
    valueUsd: Type.String({ description: 'USDC plus the assets with a fresh index' }),
  }),
  perps: Type.Object({
    balance: Amount,
    // null while a market the account holds perps in has no fresh mark (GET /perps/balances)
    equity: NullableString,
    unrealizedPnl: NullableString,
    initialMargin: NullableString,
    maintenanceMargin: NullableString,
    availableMargin: Amount,
  }),
  wallet: Type.Object({ balance: Amount, pendingWithdrawalTotal: Amount }),
});

const row = (r: { asset: string; available: bigint; locked: bigint; total: bigint }) => ({
  asset: r.asset, available: dec(r.available), locked: dec(r.locked), total: dec(r.total),
});

export function balancesView(ctx: GatewayContext, address: string) {
  const asset = ctx.core.config.settlementAsset;
  const rows = ctx.core.assetBalances(address);
  const bucket = (name: string) => {
    const { available, locked, total } = row(rows.find((r) => r.bucket === name && r.asset === asset)!);
    return { available, locked, total };
  };
  return {
    wallet: bucket('wallet'),
    perps: bucket('perps'),
    options: bucket('options'),
    spot: bucket('spot'),
    pendingWithdrawalTotal: dec(ctx.core.walletBalances(address).pendingWithdrawalTotal),
    updatedAt: iso(ctx.now()),
    spotAssets: rows.filter((r) => r.bucket === 'spot' && r.asset !== asset).map(row),
  };
}

export function portfolioView(ctx: GatewayContext, address: string) {
  const core = ctx.core;
  const now = ctx.now();
  const id = core.accountId(address) ?? -1;
  const perps = core.perpBalance(id, now);
  const wallet = core.walletBalances(address);
  const positions = core.optionPositions(id, now).map(optionPositionView);
  return {
    updatedAt: iso(now),
    options: { ...optionAccountSummary(core.optionAccount(id, now)), positions },
    spot: spotView(ctx, address, now),
    perps: {
      balance: dec(perps.balance),
      equity: decOrNull(perps.equity),
      unrealizedPnl: decOrNull(perps.unrealizedPnl),
      initialMargin: decOrNull(perps.initialMargin),
      maintenanceMargin: decOrNull(perps.maintenanceMargin),
      availableMargin: dec(perps.availableMargin),
    },
    wallet: {
      balance: dec(wallet.walletBalance),
      pendingWithdrawalTotal: dec(wallet.pendingWithdrawalTotal),
    },
  };
}

/** Spot holdings, each base asset valued at its fresh index (null while the index is stale). */
function spotView(ctx: GatewayContext, address: string, now: number) {
  const core = ctx.core;
  const usdc = core.config.settlementAsset;
  let valueUsd = 0n;
  const assets = core.assetBalances(address).filter((r) => r.bucket === 'spot').map((r) => {
    const index = r.asset === usdc ? null : core.indexPrice(r.asset, now);
    const value = r.asset === usdc ? r.total : index === null ? null : mul(r.total, index, 'floor');
    if (value !== null) valueUsd += value;
    return { ...row(r), indexPrice: decOrNull(index), valueUsd: decOrNull(value) };
  });
  return { assets, valueUsd: dec(valueUsd) };
}
