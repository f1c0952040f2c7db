/**
 * The orders and positions one command changed, snapshotted once when it ends. Both engines use it
 * the same way: while a command runs they add what they touch; at its end (`flush`) `snapshot()`
 * builds one immutable record per touched order (emitting an `order` event each) and per touched
 * position, the command's results read the same records (`orderRecordOf`, `positionRecordOf`), and
 * `finish()` emits the `position` events and empties everything for the next command.
 *
 * Allocation-light: the touched sets and the snapshot arrays are reused between commands.
 */
import { assert } from './assert.ts';
import type { ExchangeEvent } from './events.ts';
import type { FillRecord, OrderRecord, PositionRecord } from './records.ts';
import { TouchedSet } from './touched.ts';

export interface ChangeHooks<O, P> {
  orderRecord(order: O): OrderRecord;
  positionRecord(position: P): PositionRecord;
  emit(event: ExchangeEvent): void;
  /** Called for each touched position after its event (the engines forget closed positions). */
  afterPosition(position: P): void;
}

export class CommandChanges<O extends { takerFills: FillRecord[] | null }, P> {
  readonly orders = new TouchedSet<O>();
  readonly positions = new TouchedSet<P>();
  /** Snapshots by position in the touched sets, valid between `snapshot()` and `finish()`. */
  private readonly orderRecords: (OrderRecord | undefined)[] = [];
  private readonly positionRecords: (PositionRecord | undefined)[] = [];
  /** An order that ended in this command and whose record its result already holds (a cancel). */
  private endedOrder: O | null = null;
  private endedRecord: OrderRecord | null = null;

  constructor(private readonly hooks: ChangeHooks<O, P>) {}

  isEmpty(): boolean {
    return this.orders.size === 0 && this.positions.size === 0;
  }

  /** Takes every snapshot and emits the order events. */
  snapshot(): void {
    const { orders, positions, hooks } = this;
    for (let i = 0; i < orders.size; i++) {
      const order = orders.at(i);
      const record = order === this.endedOrder ? this.endedRecord! : hooks.orderRecord(order);
      this.orderRecords[i] = record;
      hooks.emit({ type: 'order', order: record });
    }
    for (let i = 0; i < positions.size; i++) this.positionRecords[i] = hooks.positionRecord(positions.at(i));
  }

  /**
   * The record of a touched order that has ended (cancelled, expired, filled): an ended order never
   * changes again, so this is also its snapshot at the end of the command, built once for both.
   */
  recordOfEnded(order: O): OrderRecord {
    assert(this.orders.has(order), 'an ended order is one the command touched');
    assert(this.endedOrder === null, 'one ended order per command keeps its early record');
    this.endedOrder = order;
    this.endedRecord = this.hooks.orderRecord(order);
    return this.endedRecord;
  }

  /** The order's snapshot of this command (or a fresh record of an order it did not touch). */
  orderRecordOf(order: O): OrderRecord {
    const at = this.orders.indexOf(order);
    return at >= 0 ? this.orderRecords[at]! : this.hooks.orderRecord(order);
  }

  positionRecordOf(position: P): PositionRecord {
    const at = this.positions.indexOf(position);
    return at >= 0 ? this.positionRecords[at]! : this.hooks.positionRecord(position);
  }

  /** Emits the position events, drops the snapshots and the takers' fills, and empties the sets. */
  finish(): void {
    const { orders, positions, hooks } = this;
    for (let i = 0; i < positions.size; i++) {
      hooks.emit({ type: 'position', position: this.positionRecords[i]! });
      this.positionRecords[i] = undefined;
      hooks.afterPosition(positions.at(i));
    }
    for (let i = 0; i < orders.size; i++) {
      orders.at(i).takerFills = null;
      this.orderRecords[i] = undefined;
    }
    this.endedOrder = null;
    this.endedRecord = null;
    orders.reset();
    positions.reset();
  }
}
