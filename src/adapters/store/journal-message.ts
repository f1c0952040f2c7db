/**
 * How a committed command crosses to the journal worker: one flat array of values per command
 * instead of the command's event objects.
 *
 * Why: a batch reaches the worker by structured clone, paid on the event loop when it is posted and
 * again in the worker when it is received. The clone writes every property name of every object:
 * an order record is 24 names and 24 values. A flat array carries the values only. Measured on a
 * filled order's events (bench/store/journal-message.ts): 10.3 -> 5.6 us per command on the event
 * loop, 14.0 -> 6.3 us in the worker.
 *
 * Layout: [ts, command, (tag, ...fields)*]. The command stays an object (the journal stores it as
 * JSON). Each projected event is its tag followed by its record's fields in the order of the field
 * lists below; an event type without a list (settlements: rare) travels whole behind OTHER. Pack
 * and unpack are written out field by field, because a loop over the lists measured twice as slow.
 * The lists are checked complete against the record types when the project compiles, and the
 * tests round-trip records whose every field holds a different value (journal-message.test.ts), so
 * a field left out or read back out of place fails.
 */
import type { ExchangeEvent } from '../../core/events.ts';
import type { LedgerEntry } from '../../core/ledger/ledger.ts';
import type { FillRecord, FillSide, OrderRecord } from '../../core/records.ts';
import type { CommittedCommand } from '../../runtime/journal-port.ts';

export type PackedCommand = unknown[];

export const ORDER_FIELDS = [
  'id', 'engine', 'accountId', 'clientOrderId', 'marketId', 'side', 'type', 'price', 'quantity', 'filledQuantity',
  'remainingQuantity', 'avgFillPrice', 'status', 'timeInForce', 'postOnly', 'reduceOnly', 'marginMode', 'stopPrice',
  'takeProfitPrice', 'stopLossPrice', 'quoteId', 'rejectReason', 'createdAt', 'updatedAt', 'leverage',
] as const satisfies readonly (keyof OrderRecord)[];
/** A fill's own fields; its two sides follow, each in FILL_SIDE_FIELDS order (maker, then taker). */
export const FILL_FIELDS = ['tradeId', 'engine', 'marketId', 'price', 'quantity', 'takerSide', 'at'] as const satisfies readonly (keyof FillRecord)[];
export const FILL_SIDE_FIELDS = [
  'accountId', 'orderId', 'side', 'liquidity', 'fee', 'feeBps', 'realizedPnl', 'marginMode',
] as const satisfies readonly (keyof FillSide)[];
/** The ledger account stays an object: the lines of one account share it, and a clone writes it once. */
export const LEDGER_FIELDS = [
  'entryId', 'txId', 'type', 'account', 'amount', 'balanceAfter', 'ref', 'txHash', 'at',
] as const satisfies readonly (keyof LedgerEntry)[];

// Compile-time completeness: a field added to a record and not to its list fails the build.
type Missing<T, L extends readonly unknown[]> = Exclude<keyof T, L[number]>;
type AllListed = [
  Missing<OrderRecord, typeof ORDER_FIELDS>,
  Missing<FillRecord, [...typeof FILL_FIELDS, 'maker', 'taker']>,
  Missing<FillSide, typeof FILL_SIDE_FIELDS>,
  Missing<LedgerEntry, typeof LEDGER_FIELDS>,
] extends [never, never, never, never] ? true : never;
const allListed: AllListed = true;
void allListed;

const ORDER = 1;
const FILL = 2;
const LEDGER = 3;
const OTHER = 0;

/** The command with its events of the `projected` types, flattened. */
export function packCommitted(c: CommittedCommand, projected: ReadonlySet<ExchangeEvent['type']>): PackedCommand {
  const out: unknown[] = [c.ts, c.command];
  for (const e of c.events) {
    if (!projected.has(e.type)) continue;
    if (e.type === 'order') {
      const o = e.order;
      out.push(
        ORDER, o.id, o.engine, o.accountId, o.clientOrderId, o.marketId, o.side, o.type, o.price, o.quantity, o.filledQuantity,
        o.remainingQuantity, o.avgFillPrice, o.status, o.timeInForce, o.postOnly, o.reduceOnly, o.marginMode, o.stopPrice,
        o.takeProfitPrice, o.stopLossPrice, o.quoteId, o.rejectReason, o.createdAt, o.updatedAt, o.leverage,
      );
    } else if (e.type === 'fill') {
      const f = e.fill;
      out.push(FILL, f.tradeId, f.engine, f.marketId, f.price, f.quantity, f.takerSide, f.at);
      pushSide(out, f.maker);
      pushSide(out, f.taker);
    } else if (e.type === 'ledger') {
      const l = e.entry;
      out.push(LEDGER, l.entryId, l.txId, l.type, l.account, l.amount, l.balanceAfter, l.ref, l.txHash, l.at);
    } else {
      out.push(OTHER, e);
    }
  }
  return out;
}

/** The command and its projected events, as they were before packing. */
export function unpackCommitted(a: PackedCommand): CommittedCommand {
  const events: ExchangeEvent[] = [];
  // Object literals evaluate in source order: each `a[i++]` takes the next field of the list.
  let i = 2;
  const side = (): FillSide => ({
    accountId: a[i++], orderId: a[i++], side: a[i++], liquidity: a[i++], fee: a[i++], feeBps: a[i++], realizedPnl: a[i++], marginMode: a[i++],
  } as FillSide);
  while (i < a.length) {
    const tag = a[i++];
    if (tag === ORDER) {
      const order = {
        id: a[i++], engine: a[i++], accountId: a[i++], clientOrderId: a[i++], marketId: a[i++], side: a[i++], type: a[i++],
        price: a[i++], quantity: a[i++], filledQuantity: a[i++], remainingQuantity: a[i++], avgFillPrice: a[i++], status: a[i++],
        timeInForce: a[i++], postOnly: a[i++], reduceOnly: a[i++], marginMode: a[i++], stopPrice: a[i++], takeProfitPrice: a[i++],
        stopLossPrice: a[i++], quoteId: a[i++], rejectReason: a[i++], createdAt: a[i++], updatedAt: a[i++], leverage: a[i++],
      } as OrderRecord;
      events.push({ type: 'order', order });
    } else if (tag === FILL) {
      const fill = {
        tradeId: a[i++], engine: a[i++], marketId: a[i++], price: a[i++], quantity: a[i++], takerSide: a[i++], at: a[i++],
        maker: side(), taker: side(),
      } as FillRecord;
      events.push({ type: 'fill', fill });
    } else if (tag === LEDGER) {
      const entry = {
        entryId: a[i++], txId: a[i++], type: a[i++], account: a[i++], amount: a[i++], balanceAfter: a[i++], ref: a[i++],
        txHash: a[i++], at: a[i++],
      } as LedgerEntry;
      events.push({ type: 'ledger', entry });
    } else if (tag === OTHER) {
      events.push(a[i++] as ExchangeEvent);
    } else {
      throw new Error(`journal message: unknown event tag ${String(tag)}`);
    }
  }
  return { ts: a[0] as number, command: a[1] as CommittedCommand['command'], events };
}

function pushSide(out: unknown[], s: FillSide): void {
  out.push(s.accountId, s.orderId, s.side, s.liquidity, s.fee, s.feeBps, s.realizedPnl, s.marginMode);
}
