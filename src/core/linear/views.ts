/**
 * Read models of the linear engine for the REST surface: positions valued at the mark (with
 * unrealised PnL, liquidation price estimate, leverage and margin) and the account's perp margin
 * summary. Pure reads; nothing here changes state.
 *
 * Leverage and liquidation price come from position-estimate.ts `standing`, the formula the order
 * preview's estimate uses too.
 */
import { divRound, type Fixed } from '../money.ts';
import type { LinearAccount } from './account.ts';
import type { LinearEngine } from './engine.ts';
import { accountRisk, type AccountRisk } from './margin.ts';
import { standing } from './position-estimate.ts';
import type { Position } from './position.ts';
import { positionRecord } from './records.ts';
import type { MarginMode, PositionRecord } from '../records.ts';

const SCALE = 10n ** 18n;

export interface PositionView extends PositionRecord {
  readonly markPrice: Fixed | null;
  readonly unrealizedPnl: Fixed | null;
  readonly liquidationPrice: Fixed | null;
  readonly leverage: Fixed | null;
  /** Isolated: the allocated margin; cross: the position's initial margin at the mark. */
  readonly margin: Fixed | null;
}

export function positionViews(engine: LinearEngine, accountId: number, now: number): PositionView[] {
  const account = engine.findAccount(accountId);
  if (account === undefined) return [];
  const risk = accountRisk(account, engine.balance(accountId));
  const out: PositionView[] = [];
  for (const p of account.positions.values()) {
    if (p.size === 0) continue;
    out.push(positionView(engine, account, risk, p, now));
  }
  return out.sort((a, b) => (a.marketId < b.marketId ? -1 : a.marketId > b.marketId ? 1 : 0));
}

/** One position of an account (by market and mode) valued now; null when there is none or it is flat. */
export function positionViewFor(engine: LinearEngine, accountId: number, marketId: string, mode: MarginMode, now: number): PositionView | null {
  const account = engine.findAccount(accountId);
  const market = engine.markets.get(marketId);
  if (account === undefined || market === undefined) return null;
  const p = account.position(market, mode);
  if (p === undefined || p.size === 0) return null;
  return positionView(engine, account, accountRisk(account, engine.balance(accountId)), p, now);
}

export function positionView(engine: LinearEngine, _account: LinearAccount, risk: AccountRisk, p: Position, now: number): PositionView {
  const base = positionRecord(p);
  const valuation = engine.markAt(p.market, now);
  // No fresh mark: nothing valued at a mark is shown (a stale mark is never carried forward); an
  // isolated position's allocation is not a valuation.
  if (valuation === null) return withValuation(base, null, null, null, null, p.marginMode === 'isolated' ? p.isolatedMargin : null);
  const s = standing(p, valuation, risk);
  const margin = p.marginMode === 'isolated' ? p.isolatedMargin : p.market.margin.initial(s.notional);
  return withValuation(base, valuation, s.unrealized, s.liquidationPrice, s.leverage, margin);
}

/** The record with its valuation, built field by field (a spread copies through a slow path). */
function withValuation(
  r: PositionRecord,
  markPrice: Fixed | null,
  unrealizedPnl: Fixed | null,
  liquidationPrice: Fixed | null,
  leverage: Fixed | null,
  margin: Fixed | null,
): PositionView {
  return {
    id: r.id,
    accountId: r.accountId,
    marketId: r.marketId,
    marginMode: r.marginMode,
    side: r.side,
    size: r.size,
    entryPrice: r.entryPrice,
    realizedPnl: r.realizedPnl,
    isolatedMargin: r.isolatedMargin,
    funding: r.funding,
    status: r.status,
    openedAt: r.openedAt,
    updatedAt: r.updatedAt,
    markPrice,
    unrealizedPnl,
    liquidationPrice,
    leverage,
    margin,
  };
}

/**
 * The account's perp margin summary. The figures valued at a mark (unrealised PnL, equity, margins,
 * ratio) are null while a market the account holds a position or resting orders in has no fresh
 * mark: a stale mark is never shown. `availableMargin` and `withdrawable` stay: they are what the
 * venue acts on (reduce-only orders, transfers out), valued at the last mark until a fresh one.
 */
export interface PerpBalanceView {
  readonly asset: string;
  /** Cash in the perps bucket (deposits, realised PnL, fees, funding). */
  readonly balance: Fixed;
  readonly unrealizedPnl: Fixed | null;
  /** Cross collateral plus unrealised PnL of cross positions. */
  readonly equity: Fixed | null;
  readonly initialMargin: Fixed | null;
  readonly maintenanceMargin: Fixed | null;
  readonly orderMargin: Fixed | null;
  readonly isolatedMargin: Fixed;
  /** What new orders can still use. */
  readonly availableMargin: Fixed;
  /** What may be transferred out now. */
  readonly withdrawable: Fixed;
  /** Maintenance margin over equity (liquidation at 1); null without equity. */
  readonly marginRatio: Fixed | null;
}

export function perpBalanceView(engine: LinearEngine, accountId: number, asset: string, now: number): PerpBalanceView {
  const r = engine.risk(accountId);
  const withdrawable = engine.holds().transferable(accountId, asset);
  const account = engine.findAccount(accountId);
  const valued = account === undefined || everyMarkFresh(engine, account, now);
  return {
    asset,
    balance: r.balance,
    unrealizedPnl: valued ? r.crossUnrealized : null,
    equity: valued ? r.crossEquity : null,
    initialMargin: valued ? r.positionIM : null,
    maintenanceMargin: valued ? r.positionMM : null,
    orderMargin: valued ? r.orderIM : null,
    isolatedMargin: r.isolatedAllocated,
    availableMargin: r.free > 0n ? r.free : 0n,
    withdrawable,
    marginRatio: valued && r.crossEquity > 0n ? divRound(r.positionMM * SCALE, r.crossEquity, 'halfUp') : null,
  };
}

/** Whether every market the account has a position or resting orders in has a fresh mark now. */
function everyMarkFresh(engine: LinearEngine, account: LinearAccount, now: number): boolean {
  for (const p of account.positions.values()) if (p.size !== 0 && engine.markAt(p.market, now) === null) return false;
  for (const t of account.totals.values()) if (!t.isEmpty() && engine.markAt(t.market, now) === null) return false;
  return true;
}
