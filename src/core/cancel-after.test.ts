/**
 * The dead-man switch in the core (cancel-after.ts, Exchange `orders.cancel_all_after` and the
 * clock tick), with explicit command times: a switch fires on the first tick at or after its
 * deadline and not one millisecond before, cancelling the account's live orders on every venue
 * (a resting perp order, an untriggered stop, a resting spot order) with the usual order events,
 * and nobody else's; a re-arm moves the deadline, 0 disarms, a re-arm after the deadline is too
 * late (the orders go first); bad timeouts are refused and change nothing; `orders.cancel_all`
 * cancels everything at once. Replaying the journal, or restoring a state image (snapshot) and
 * replaying the rest, fires the same switch at the same tick.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addr, ClobVenue, clobRequest } from '../../test/support/clob-venue.ts';
import { CANCEL_AFTER_MAX_MS, CANCEL_AFTER_MIN_MS, CancelAfter, validCancelAfter } from './cancel-after.ts';
import type { Command } from './commands.ts';
import type { ExchangeEvent } from './events.ts';
import { Exchange, type CancelAfterResult } from './exchange.ts';
import { PLAIN_ORDER, type OrderRequest } from './linear/order.ts';
import { fx } from './money.ts';
import { STATE_SCHEMA } from './snapshot/state-classes.ts';
import { encodeState, restoreState } from './snapshot/state-image.ts';

const T0 = Date.UTC(2026, 0, 6, 12);
const [A, B, C] = [addr(0xa), addr(0xb), addr(0xc)];

describe('CancelAfter', () => {
  test('takeDue returns the switches at or before now, once, by account id; the rest stay', () => {
    const s = new CancelAfter();
    assert.deepEqual(s.takeDue(T0), []);
    s.arm(7, T0 + 10);
    s.arm(3, T0 + 10);
    s.arm(5, T0 + 20);
    assert.deepEqual(s.takeDue(T0 + 9), []);
    assert.equal(s.isDue(7, T0 + 9), false);
    assert.equal(s.isDue(7, T0 + 10), true);
    assert.deepEqual(s.takeDue(T0 + 10), [3, 7]);
    assert.deepEqual(s.takeDue(T0 + 10), [], 'a fired switch is gone');
    assert.equal(s.deadline(5), T0 + 20);
    s.arm(5, T0 + 30); // re-armed later: the kept lower bound (T0 + 20) only costs one walk
    assert.deepEqual(s.takeDue(T0 + 25), []);
    s.disarm(5);
    assert.deepEqual(s.takeDue(T0 + 40), []);
    assert.equal(s.size, 0);
  });

  test('valid timeouts: 0, or an integer from 5,000 to 600,000', () => {
    for (const ok of [0, CANCEL_AFTER_MIN_MS, 60_000, CANCEL_AFTER_MAX_MS]) assert.ok(validCancelAfter(ok), String(ok));
    for (const bad of [-1, 1, 4_999, 600_001, 5_000.5, NaN, Infinity]) assert.ok(!validCancelAfter(bad), String(bad));
  });
});

function perpRequest(side: 0 | 1, quantity: string, price: string | null, extra: Partial<OrderRequest> = {}): OrderRequest {
  return {
    marketId: 'BTC-PERP', side, type: price === null ? 'market' : 'limit', quantity: fx(quantity),
    price: price === null ? null : fx(price), timeInForce: price === null ? 'ioc' : 'gtc', postOnly: false,
    reduceOnly: false, marginMode: 'cross', ...PLAIN_ORDER, ...extra,
  };
}

/** A venue where A and B each hold a resting perp bid, an untriggered perp stop and a resting spot bid. */
class World {
  readonly v = new ClobVenue(T0);
  readonly journal: { command: Command; ts: number }[] = [];
  readonly orders = new Map<string, string[]>();

  constructor() {
    this.v.index('BTC', '100000');
    for (const who of [A, B]) {
      this.v.fund(who, '50000', 'perps');
      this.v.fund(who, '50000', 'spot');
      const ids = [
        this.place({ type: 'perp.place', account: who, request: perpRequest(0, '0.01', '95000') }),
        this.place({ type: 'perp.place', account: who, request: perpRequest(0, '0.01', null, { stopPrice: fx('101000') }) }),
        this.place({ type: 'clob.place', account: who, request: clobRequest({ market: 'BTC-USDC', side: 'buy', qty: '0.01', price: '95000' }) }),
      ];
      this.orders.set(who, ids);
    }
  }

  private place(command: Command): string {
    const r = this.v.ok<{ order: { id: string; status: string } }>(command);
    assert.ok(r.order.status === 'open' || r.order.status === 'untriggered', r.order.status);
    return r.order.id;
  }

  /** Runs a command at `at` (kept in the journal when accepted); its outcome with its events. */
  run(command: Command, at: number) {
    const out = this.v.run(command, at);
    if (out.ok) this.journal.push({ command, ts: at });
    return out;
  }

  arm(who: string, timeoutMs: number, at: number): CancelAfterResult {
    const out = this.run({ type: 'orders.cancel_all_after', account: who, timeoutMs }, at);
    assert.ok(out.ok, out.ok ? '' : out.message);
    return out.result as CancelAfterResult;
  }

  tick(at: number): ExchangeEvent[] {
    const out = this.run({ type: 'clock.tick' }, at);
    assert.ok(out.ok);
    return out.events;
  }

  /** Ids of the account's live orders on both engines. */
  live(who: string, ex: Exchange = this.v.ex): string[] {
    const id = ex.accounts.find(who)!.id;
    const perp = [...(ex.linear.findAccount(id)?.orders.keys() ?? [])];
    const clob = [...(ex.clob.findAccount(id)?.orders.keys() ?? [])];
    return [...perp, ...clob].map(String).sort();
  }
}

const cancelledIn = (events: readonly ExchangeEvent[]) =>
  events.flatMap((e) => (e.type === 'order' && e.order.status === 'cancelled' ? [e.order.id] : [])).sort();

describe('the dead-man switch in the exchange', () => {
  test('fires on the first tick at or after the deadline, cancelling every live order of the account only', () => {
    const w = new World();
    const armedAt = T0 + 1_000;
    const r = w.arm(A, 10_000, armedAt);
    assert.deepEqual(r, { timeoutMs: 10_000, deadline: armedAt + 10_000, cancelled: [] });
    assert.equal(w.v.ex.cancelAfterDeadline(A), armedAt + 10_000);
    assert.deepEqual(cancelledIn(w.tick(armedAt + 9_999)), [], 'not one millisecond before');
    assert.deepEqual(w.live(A), [...w.orders.get(A)!].sort());
    const events = w.tick(armedAt + 10_000);
    assert.deepEqual(cancelledIn(events), [...w.orders.get(A)!].sort(), 'perp bid, untriggered stop and spot bid, each with its order event');
    assert.deepEqual(w.live(A), []);
    assert.deepEqual(w.live(B), [...w.orders.get(B)!].sort(), 'another account keeps its orders');
    assert.equal(w.v.ex.cancelAfterDeadline(A), null, 'a fired switch disarms');
    assert.equal(w.v.locked(A, 'spot'), '0', 'the spot hold is released');
    assert.deepEqual(cancelledIn(w.tick(armedAt + 20_000)), [], 'fires once');
  });

  test('a re-arm before the deadline moves it; a switch a tick finds late still fires at that tick', () => {
    const w = new World();
    w.arm(A, 10_000, T0 + 1_000);
    assert.equal(w.arm(A, 10_000, T0 + 8_000).deadline, T0 + 18_000, 'each account has one switch: re-armed');
    assert.deepEqual(cancelledIn(w.tick(T0 + 11_000)), [], 'the first deadline no longer counts');
    assert.deepEqual(cancelledIn(w.tick(T0 + 17_999)), []);
    // No tick between 17,999 and 60,000 (downtime): the first tick after it fires.
    assert.deepEqual(cancelledIn(w.tick(T0 + 60_000)), [...w.orders.get(A)!].sort());
  });

  test('0 disarms; disarming an account never seen opens nothing', () => {
    const w = new World();
    w.arm(A, 5_000, T0 + 1_000);
    assert.deepEqual(w.arm(A, 0, T0 + 2_000), { timeoutMs: 0, deadline: null, cancelled: [] });
    assert.deepEqual(cancelledIn(w.tick(T0 + 100_000)), []);
    assert.equal(w.live(A).length, 3);
    const accounts = w.v.ex.accounts.count();
    assert.deepEqual(w.arm(C, 0, T0 + 100_001), { timeoutMs: 0, deadline: null, cancelled: [] });
    assert.equal(w.v.ex.accounts.count(), accounts);
  });

  test('a re-arm or disarm after the deadline, before the tick, is too late: the orders go first', () => {
    const w = new World();
    w.arm(A, 5_000, T0 + 1_000);
    const late = w.arm(A, 5_000, T0 + 6_500);
    assert.deepEqual(late.cancelled.sort(), [...w.orders.get(A)!].sort());
    assert.equal(late.deadline, T0 + 11_500, 'and the switch is armed again');
    w.arm(B, 5_000, T0 + 7_000);
    assert.deepEqual(w.arm(B, 0, T0 + 12_000).cancelled.sort(), [...w.orders.get(B)!].sort());
    assert.equal(w.v.ex.cancelAfterDeadline(B), null);
  });

  test('a bad timeout is refused and changes nothing', () => {
    const w = new World();
    const accounts = w.v.ex.accounts.count();
    for (const timeoutMs of [1, 4_999, 600_001, 7_500.5, -5_000]) {
      const out = w.run({ type: 'orders.cancel_all_after', account: C, timeoutMs }, T0 + 1_000);
      assert.equal(out.ok ? 'accepted' : out.code, 'VALIDATION_ERROR', String(timeoutMs));
    }
    assert.equal(w.v.ex.accounts.count(), accounts, 'no account opened');
    assert.equal(w.v.ex.cancelAfterDeadline(C), null);
  });

  test('orders.cancel_all cancels every live order of the account on both engines; an unknown account has none', () => {
    const w = new World();
    const out = w.run({ type: 'orders.cancel_all', account: A }, T0 + 1_000);
    assert.ok(out.ok);
    assert.deepEqual((out.result as { cancelled: string[] }).cancelled.sort(), [...w.orders.get(A)!].sort());
    assert.deepEqual(cancelledIn(out.events), [...w.orders.get(A)!].sort());
    assert.equal(w.live(B).length, 3);
    const accounts = w.v.ex.accounts.count();
    const none = w.run({ type: 'orders.cancel_all', account: C }, T0 + 1_001);
    assert.deepEqual(none.ok && none.result, { cancelled: [] });
    assert.equal(w.v.ex.accounts.count(), accounts);
  });

  test('a replay of the journal, and a snapshot plus the rest of it, fire the same switch at the same tick', () => {
    const w = new World();
    const replayed = new World(); // the same setup, deterministic; the switch's commands are replayed below
    const freshCore = () => new ClobVenue(T0).ex;
    w.arm(A, 30_000, T0 + 1_000);
    w.tick(T0 + 2_000);
    const image = encodeState(w.v.ex, freshCore(), STATE_SCHEMA);
    w.tick(T0 + 30_999);
    w.tick(T0 + 31_000);
    assert.deepEqual(w.live(A), []);

    for (const c of w.journal) assert.ok(replayed.v.ex.execute(c.command, c.ts).ok);
    assert.deepEqual(replayed.live(A), [], 'the replay fired it');
    assert.deepEqual(replayed.live(B), w.live(B));

    const restored = freshCore();
    restoreState(restored, image, STATE_SCHEMA);
    assert.equal(restored.cancelAfterDeadline(A), T0 + 31_000, 'the snapshot holds the deadline');
    const early = restored.execute({ type: 'clock.tick' }, T0 + 30_999);
    assert.deepEqual(early.ok && cancelledIn(early.events), []);
    const fired = restored.execute({ type: 'clock.tick' }, T0 + 31_000);
    assert.deepEqual(fired.ok && cancelledIn(fired.events), [...w.orders.get(A)!].sort());
    assert.deepEqual(w.live(A, restored), []);
  });
});
