/**
 * Events: what a command did, in order. They are produced by the core while it applies a
 * command and are consumed after the command is durable: the store writes them to its history
 * tables, the stream hub fans them out, and the gateway builds responses from them. Events are
 * values (copies), never live references into core state, so a consumer cannot see later changes.
 */
import type { Fixed } from './money.ts';
import type { LedgerEntry } from './ledger/ledger.ts';
import type { FillRecord, OrderRecord, PositionRecord } from './records.ts';
import type { SettlementKind, SettlementStatus } from './wallet/wallet.ts';

export interface SettlementRecord {
  readonly id: string;
  readonly accountId: number;
  readonly kind: SettlementKind;
  readonly status: SettlementStatus;
  readonly amount: Fixed;
  readonly asset: string;
  readonly walletAddress: string;
  readonly txHash: string | null;
  readonly confirmations: number;
  readonly failureReason: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type ExchangeEvent =
  | { readonly type: 'ledger'; readonly entry: LedgerEntry }
  | { readonly type: 'settlement'; readonly settlement: SettlementRecord }
  | { readonly type: 'alarm'; readonly kind: string; readonly message: string; readonly at: number }
  | { readonly type: 'index'; readonly underlying: string; readonly price: Fixed; readonly sourceTs: number; readonly at: number }
  | { readonly type: 'order'; readonly order: OrderRecord }
  | { readonly type: 'fill'; readonly fill: FillRecord }
  | { readonly type: 'position'; readonly position: PositionRecord }
  | {
      /** Market-maker protection tripped: the account's quotes on the underlying were cancelled. */
      readonly type: 'mmp';
      readonly accountId: number;
      readonly underlying: string;
      /** When new quotes are accepted again; null until a manual reset. */
      readonly frozenUntil: number | null;
      readonly cancelled: readonly string[];
      readonly at: number;
    }
  /**
   * The option board of `underlying` was recomputed at `at` (the clock tick's time); `dvol` is the
   * DVOL it computed (percent, 2 decimals, as GET /markets/dvol serves it), null without one.
   */
  | { readonly type: 'board'; readonly underlying: string; readonly at: number; readonly dvol: Fixed | null }
  | {
      readonly type: 'mark';
      readonly marketId: string;
      readonly markPrice: Fixed | null;
      readonly indexPrice: Fixed | null;
      readonly at: number;
    };

export type ExchangeEventType = ExchangeEvent['type'];
