/**
 * Unified balances for GET /portfolio/balances/stream: one BalancesGroup per address.
 *
 * Payload `{ wallet, perps, options, spot, pendingWithdrawalTotal, updatedAt }`, each bucket
 * `{ available, locked, total }` in the settlement asset (USDC), read from the core with
 * `core.assetBalances` and `core.walletBalances` (core/queries.ts) (decisions.md "Streams"). `updatedAt` is
 * when the figures were read (ISO 8601).
 *
 * Driven by published events: a `ledger` entry on one of the account's buckets, a `settlement`
 * (pending withdrawals), and the account's `order`, `fill` and `position` events (order reserves
 * and margin in use are `locked`) mark the group dirty; a `mark` event marks every group dirty,
 * since margin in use moves with the mark. Every BALANCES_INTERVAL_MS a dirty group re-reads the
 * balances and sends `event: update` only when a figure changed, so changes are coalesced per
 * interval (`updatedAt` is service time, like the REST balances'). Balances are read from the
 * core (locked amounts exist only there), which may hold commands whose journal batch is still
 * being written; unlike the event-sourced books and positions, a read is therefore sent (update or
 * a joiner's snapshot) only once everything it shows is durable (`whenDurable`), so a stream never
 * shows a balance a crash would take back. Frames are `{ type: 'snapshot' | 'update', eventId,
 * eventType, eventSeq, engineTs, sourceTs, payload }`: the contract's `{ type, payload }` inside the
 * common envelope. Every update is shared by the account's group, which keeps the last seconds of
 * them: a client reconnecting with `resume=true` and Last-Event-ID gets those it missed instead of
 * the snapshot (hub.ts Group).
 * Tested by test/streams/balances-stream.test.ts.
 */
import type { ExchangeEvent } from '../../core/events.ts';
import { dec, iso } from '../format.ts';
import { Group, type EventSink, type StreamHub } from './hub.ts';
import type { StreamConnection, StreamErrorCode } from './sse.ts';

export const BALANCES_INTERVAL_MS = 250;

export class BalancesGroup extends Group {
  private readonly members = new Set<StreamConnection>();
  /** The buckets JSON members hold (without updatedAt). */
  private held: string;
  private readAt: number;
  private seenMarkEpoch: number;
  dirty = false;
  engineTs: number;
  /** Reads taken from the live core and waiting until what they show is durable. */
  private waiting = 0;
  /** Applies those reads in the order they were taken. */
  private applied: Promise<void> = Promise.resolve();

  constructor(
    hub: StreamHub,
    private readonly views: BalancesViews,
    readonly address: string,
    onEmpty: () => void,
  ) {
    super(hub, BALANCES_INTERVAL_MS, onEmpty);
    this.seenMarkEpoch = views.markEpoch;
    this.held = this.read();
    this.readAt = hub.ctx.now();
    this.engineTs = hub.ctx.core.now();
  }

  /**
   * Brings existing members up to date, then sends the joiner's snapshot (or, resuming after
   * `resumeAfter`, the updates it missed: Group.resumeFrom), both once the figures read now are
   * durable. The joiner holds the group (retain) while it waits.
   */
  join(conn: StreamConnection, resumeAfter: number | null = null): void {
    this.retain();
    let open = true;
    conn.onClose(() => {
      open = false;
      this.members.delete(conn);
      this.release();
    });
    this.whenDurable(this.read(), this.hub.ctx.now(), () => {
      if (!open) return;
      this.members.add(conn);
      if (!this.resumeFrom(conn, resumeAfter)) conn.write(this.balancesFrame('snapshot', 'BalancesSnapshot'));
    }, conn);
  }

  failAll(code: StreamErrorCode, message: string, retryable: boolean): void {
    for (const conn of [...this.members]) conn.fail(code, message, retryable);
  }

  protected tick(): void {
    if (this.waiting > 0) return; // the read before is not out yet; dirty stays set for the next tick
    if (!this.dirty && this.seenMarkEpoch === this.views.markEpoch) return;
    if (!this.dirty) this.engineTs = Math.max(this.engineTs, this.hub.ctx.core.now());
    this.dirty = false;
    this.seenMarkEpoch = this.views.markEpoch;
    this.whenDurable(this.read(), this.hub.ctx.now(), () => undefined, null);
  }

  /**
   * The balances are read from the live core, which holds commands whose journal batch is still
   * being written; a crash would take those back. So a read is held until everything the core had
   * applied when it was taken is durable (Sequencer.barrier, asked in the same turn as the read),
   * then sent as an update if it differs from what members hold, then `then` runs. Reads are
   * applied in the order they were taken. If the journal fails the core has stopped, and every
   * stream ends with UPSTREAM_UNAVAILABLE (StreamHub.upstreamDown).
   */
  private whenDurable(figures: string, readAt: number, then: () => void, joiner: StreamConnection | null): void {
    // Settled to a flag at once: a rejection must not wait, unhandled, behind earlier reads.
    const durable = this.hub.ctx.sequencer.barrier().then(() => true, () => false);
    this.waiting++;
    const apply = () => {
      this.waiting--;
      if (figures !== this.held) {
        this.held = figures;
        this.readAt = readAt;
        this.advance();
        // built and kept even while only joiners wait, so that they may resume across it
        this.send(this.balancesFrame('update', 'BalancesUpdate'), this.members);
      }
      then();
    };
    const refuse = () => {
      this.waiting--;
      this.hub.upstreamDown();
    };
    this.applied = this.applied.then(() => durable).then((ok) => (ok ? apply() : refuse())).catch((error: unknown) => {
      this.hub.reportError(error, 'stream view failed');
      this.failAll('INTERNAL', 'the stream failed; reconnect', true);
      joiner?.fail('INTERNAL', 'the stream failed; reconnect', true);
    });
  }

  private balancesFrame(type: 'snapshot' | 'update', eventType: string): Buffer {
    const payload = `{${this.held},"updatedAt":"${iso(this.readAt)}"}`;
    return this.frame(type, eventType, this.engineTs, payload, type);
  }

  /** `"wallet":{...},"perps":{...},"options":{...},"spot":{...},"pendingWithdrawalTotal":"..."` */
  private read(): string {
    const core = this.hub.ctx.core;
    const asset = core.config.settlementAsset;
    const buckets: Record<string, { available: string; locked: string; total: string }> = {};
    for (const b of core.assetBalances(this.address)) {
      if (b.asset !== asset) continue;
      buckets[b.bucket] = { available: dec(b.available), locked: dec(b.locked), total: dec(b.total) };
    }
    const pending = dec(core.walletBalances(this.address).pendingWithdrawalTotal);
    const json = JSON.stringify({
      wallet: buckets.wallet,
      perps: buckets.perps,
      options: buckets.options,
      spot: buckets.spot,
      pendingWithdrawalTotal: pending,
    });
    return json.slice(1, -1);
  }
}

export class BalancesViews implements EventSink {
  private readonly groups = new Map<string, BalancesGroup>();
  /** Increments on every published mark event (margin in use may have moved for anyone). */
  markEpoch = 0;

  constructor(private readonly hub: StreamHub) {
    hub.addSink(this);
  }

  onEvents(events: readonly ExchangeEvent[]): void {
    if (this.groups.size === 0) return;
    for (const e of events) {
      switch (e.type) {
        case 'ledger':
          if (e.entry.account.kind === 'user') this.touch(e.entry.account.accountId, e.entry.at);
          break;
        case 'settlement':
          this.touch(e.settlement.accountId, e.settlement.updatedAt);
          break;
        case 'order':
          this.touch(e.order.accountId, e.order.updatedAt);
          break;
        case 'fill':
          this.touch(e.fill.maker.accountId, e.fill.at);
          this.touch(e.fill.taker.accountId, e.fill.at);
          break;
        case 'position':
          this.touch(e.position.accountId, e.position.updatedAt);
          break;
        case 'mark':
          this.markEpoch++;
          break;
      }
    }
  }

  /** Joins (or makes) the address's group; `resumeAfter`: see BalancesGroup.join. */
  join(conn: StreamConnection, address: string, resumeAfter: number | null = null): void {
    let group = this.groups.get(address);
    if (group === undefined) {
      group = new BalancesGroup(this.hub, this, address, () => this.groups.delete(address));
      this.groups.set(address, group);
    }
    group.join(conn, resumeAfter);
  }

  private touch(accountId: number, at: number): void {
    const address = this.hub.ctx.core.accountAddress(accountId);
    const group = address === undefined ? undefined : this.groups.get(address);
    if (group === undefined) return;
    group.dirty = true;
    if (at > group.engineTs) group.engineTs = at;
  }
}
