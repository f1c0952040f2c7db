/**
 * Commands: every state change of the exchange, as plain serialisable values. The sequencer
 * applies them one at a time in one total order; the journal stores them (with the time the
 * sequencer stamped) so that replaying the journal rebuilds exactly the same state.
 *
 * Commands carry already-validated values (exact Fixed amounts, lower-case addresses); the
 * gateway parses and checks the wire format before it builds one. Business checks that depend on
 * state (balances, margin) happen in the core and come back as rejections.
 */
import type { Fixed } from './money.ts';
import type { Bucket } from './ledger/ledger.ts';
import type { WithdrawalMove } from './wallet/wallet.ts';
import type { CancelFilter, QuoteRequest } from './linear/engine.ts';
import type { OrderRequest } from './linear/order.ts';
import type { MarginMode, OrderType, TimeInForce } from './records.ts';
import type { ClobCommand } from './clob/commands.ts';

export interface PriceObservation {
  readonly source: string;
  readonly price: Fixed;
  readonly ts: number;
}

export interface ClosePositionRequest {
  readonly marketId: string;
  readonly marginMode: MarginMode;
  /** null closes the whole position. */
  readonly quantity: Fixed | null;
  readonly type: OrderType;
  readonly price: Fixed | null;
  readonly timeInForce: TimeInForce;
}

export type Command =
  // clientId: the client's idempotency tag (wallet/movement-ids.ts); absent in journals written before it.
  | { type: 'wallet.transfer'; account: string; from: Bucket; to: Bucket; amount: Fixed; clientId?: string | null }
  | { type: 'wallet.withdraw'; account: string; amount: Fixed; clientId?: string | null }
  | { type: 'chain.deposit_observed'; txHash: string; account: string; amount: Fixed; confirmations: number }
  | { type: 'chain.deposit_reorged'; txHash: string }
  | { type: 'withdrawal.move'; id: string; move: WithdrawalMove }
  | { type: 'index.publish'; underlying: string; price: Fixed; sourceTs: number }
  | { type: 'prices.observe'; underlying: string; observations: readonly PriceObservation[] }
  | { type: 'clock.tick' }
  | { type: 'perp.place'; account: string; request: OrderRequest }
  | { type: 'perp.cancel'; account: string; orderId: number }
  | { type: 'perp.cancel_all'; account: string; filter: CancelFilter }
  | { type: 'perp.quote'; account: string; quote: QuoteRequest }
  | { type: 'perp.close'; account: string; close: ClosePositionRequest }
  // Amend a resting order (engine.ts amend): price and/or new total quantity, null where unchanged.
  | { type: 'perp.modify'; account: string; orderId: number; price: Fixed | null; quantity: Fixed | null }
  // The dead-man switch (cancel-after.ts): timeoutMs 0 disarms, else 5,000-600,000 arms it at the command's time + timeoutMs.
  | { type: 'orders.cancel_all_after'; account: string; timeoutMs: number }
  // Every live order of the account on every venue (perps, futures, options, spot; untriggered ones too).
  | { type: 'orders.cancel_all'; account: string }
  | ClobCommand;

export type CommandType = Command['type'];
export type CommandOf<T extends CommandType> = Extract<Command, { type: T }>;
