/**
 * Option expiry and cash settlement (research/mechanics.md 3.7), run on every clock tick:
 *
 *  1. At the first tick at or after an expiry, every instrument of that expiry stops trading (the
 *     checks already refuse orders from the expiry instant on), its resting orders become
 *     `expired` and it enters `settling`.
 *  2. The settlement price is the 30-minute TWAP of the index before expiry,
 *     index.twap(underlying, expiry − 30 min, expiry), and it counts only if the index was seen
 *     fresh on a clock tick inside that window (the board's TWAP would otherwise hold a price from
 *     before the window across a feed outage). Until both hold, the instruments stay `settling`
 *     and every later tick tries again: a settlement is never made on an invented or stale price;
 *     an expiry whose window passed without a fresh index stays settling for the operator.
 *  3. Each position is paid max(S−K, 0) (call) or max(K−S, 0) (put) per contract: shorts pay and
 *     longs receive through the instrument's clearing account (money-moves.ts), positions close
 *     with their PnL against the premium basis, and the instrument leaves the listing.
 *  4. Only once every instrument settling in the tick is posted, the insurance fund covers an
 *     account left with a negative options balance, once: an account pays what it owes on one
 *     instrument from what it receives on another (a spread), and the fund pays only a net deficit.
 *     Covering per instrument would let a net-positive spread keep both its long payoff and the
 *     fund's top-up of its short leg.
 *  5. An account that paid on net and whose options balance is now below what its resting option
 *     buys hold has those buys cancelled (reason INSUFFICIENT_MARGIN), so a hold never exceeds its
 *     funds.
 * Tested in expiry.test.ts with the clock driven across expiries.
 */
import { BUY } from '../book/order-book.ts';
import { divRound, type Fixed } from '../money.ts';
import type { ClobEngine } from './engine.ts';
import { intrinsic } from './margin.ts';
import type { ClobMarket } from './market.ts';
import { coverShortfalls, postPayoffs } from './money-moves.ts';
import type { ClobOrder } from './order.ts';
import { reportPnl } from './records.ts';

const SCALE = 10n ** 18n;

/** Notes, on a tick, which (underlying, expiry) settlement windows have seen a fresh index. */
export function observeWindows(engine: ClobEngine, now: number): void {
  const window = engine.limits.settlementWindowMs;
  for (const [expiry, markets] of engine.byExpiry) {
    if (now < expiry - window || now > expiry) continue;
    for (const m of markets) {
      const key = `${m.underlying}|${expiry}`;
      if (engine.windowSeen.has(key) || engine.freshIndex(m.underlying, now) === null) continue;
      engine.windowSeen.add(key);
    }
  }
}

export function settleDue(engine: ClobEngine, now: number): void {
  /** Net amount each account was paid (negative: paid out) in this tick's settlements. */
  const net = new Map<number, Fixed>();
  for (const [expiry, markets] of [...engine.byExpiry]) {
    if (expiry > now) continue;
    for (const m of markets) if (m.status === 'open') expireMarket(engine, m);
    const twaps = new Map<string, Fixed | null>();
    const left: ClobMarket[] = [];
    for (const m of markets) {
      const u = m.underlying;
      const seen = engine.windowSeen.has(`${u}|${expiry}`);
      const from = expiry - engine.limits.settlementWindowMs;
      if (!twaps.has(u)) twaps.set(u, seen ? engine.deps.index.twap(u, from, expiry) : null);
      const twap = twaps.get(u)!;
      if (twap === null) left.push(m);
      else for (const [id, amount] of settleMarket(engine, m, twap, now)) net.set(id, (net.get(id) ?? 0n) + amount);
    }
    for (const u of twaps.keys()) if (twaps.get(u) !== null) engine.windowSeen.delete(`${u}|${expiry}`);
    if (left.length === 0) engine.byExpiry.delete(expiry);
    else engine.byExpiry.set(expiry, left);
  }
  if (net.size === 0) return;
  coverShortfalls(engine.postingContext(), net.keys());
  for (const [accountId, amount] of net) if (amount < 0n) cancelUnfundedBuys(engine, accountId);
}

function expireMarket(engine: ClobEngine, m: ClobMarket): void {
  const resting: ClobOrder[] = [];
  m.book.forEachResting((o) => resting.push(o as ClobOrder));
  for (const o of resting) engine.cancelOrder(o, 'expired');
  m.status = 'settling';
}

/** Posts an instrument's payoffs and closes its positions; returns the amounts posted per account. */
function settleMarket(engine: ClobEngine, m: ClobMarket, settlementPrice: Fixed, now: number): Map<number, Fixed> {
  const payoff = intrinsic(m.option!, settlementPrice);
  const amounts = new Map<number, Fixed>();
  for (const [accountId, p] of m.positions) {
    if (p.size === 0) continue;
    const value = payoff * m.units.size(Math.abs(p.size));
    amounts.set(accountId, p.size > 0 ? divRound(value, SCALE, 'floor') : -divRound(value, SCALE, 'ceil'));
  }
  const posted = postPayoffs(engine.postingContext(), m.spec.id, amounts);
  for (const [accountId, p] of [...m.positions]) {
    if (p.size === 0) continue;
    p.realizedPnl += reportPnl((posted.get(accountId) ?? 0n) - p.cost, engine.settlementDecimals);
    p.size = 0;
    p.cost = 0n;
    p.status = 'closed';
    p.updatedAt = now;
    engine.findAccount(accountId)?.positionChanged(m);
    engine.touchPosition(p);
  }
  m.status = 'expired';
  engine.markets.delete(m.spec.id);
  return posted;
}

function cancelUnfundedBuys(engine: ClobEngine, accountId: number): void {
  const account = engine.findAccount(accountId);
  if (account === undefined) return;
  const asset = engine.settlementAsset;
  if (engine.userBalance(accountId, 'options', asset) >= account.held('options', asset)) return;
  for (const o of [...account.orders.values()]) {
    if (!o.market.isOption || o.side !== BUY) continue;
    o.rejectReason = 'INSUFFICIENT_MARGIN';
    engine.cancelOrder(o, 'cancelled');
  }
}
