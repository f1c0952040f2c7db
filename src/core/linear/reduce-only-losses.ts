/**
 * What an account's resting cross reduce-only orders would lose at the marks (margin.ts
 * ReduceOnlySums), kept with the account between commands. Those orders reserve no margin, so
 * their open loss is held out of the account's equity wherever it bounds something: free
 * collateral (every order, every withdrawal), the bound of a reducing order, and every maker the
 * account has in a taker's way (maker-checks.ts `admits`). Summing it by walking the account's orders
 * each time made each of those reads linear in the orders: a market maker holding 150 reduce-only
 * orders paid for the walk on every order it placed, and a taker lifting 200 of its makers walked
 * its orders once per maker.
 *
 * Kept exact, not approximate: each order's share (its lots, and its loss at the risk mark) is
 * remembered, and the engine reports every change of a resting reduce-only order (`changed`: it
 * rested, filled, was trimmed or ended), so the sums move by the difference. The shares are valued
 * at each market's mark version; once a market's mark moved (or before the first read) the next
 * read walks the account's orders again. engine.audit compares the sums with a fresh walk, and so
 * does the linear property test at every read.
 */
import type { Fixed } from '../money.ts';
import type { LinearAccount } from './account.ts';
import {
  addToReduceOnlySums, countsInReduceOnlySums, reduceOnlyLossOf, type ReduceOnlySums,
} from './margin.ts';
import type { LinearMarket } from './market.ts';
import type { LinearOrder } from './order.ts';

interface Share {
  lots: number;
  loss: Fixed;
}

export class ReduceOnlyLosses {
  private readonly sums: ReduceOnlySums = { crossLoss: 0n, byMarket: new Map() };
  /** Each counted order's share as last added to `sums`. */
  private readonly shares = new Map<LinearOrder, Share>();
  /** The mark version of each market whose orders have shares, as they were valued. */
  private readonly versions = new Map<LinearMarket, number>();
  /** False until the first read, and once a change arrived while a market's mark had moved. */
  private valid = false;

  /** The sums at the current marks; walks the account's orders only when they are not kept. */
  sumsOf(account: LinearAccount): ReduceOnlySums {
    if (!this.valid || this.marksMoved()) this.recount(account);
    return this.sums;
  }

  /** The sums as kept, or null when the next read would walk the orders (for the audit: reads nothing). */
  kept(): ReduceOnlySums | null {
    return this.valid && !this.marksMoved() ? this.sums : null;
  }

  /** A resting reduce-only order changed (rested, filled, trimmed, ended): its share follows its new state. */
  changed(o: LinearOrder): void {
    if (!this.valid) return;
    const version = this.versions.get(o.market);
    if (version !== undefined && version !== o.market.markVersion) {
      this.valid = false; // its share was valued at another mark: the next read walks
      return;
    }
    const before = this.shares.get(o);
    const counts = countsInReduceOnlySums(o);
    if (before === undefined && !counts) return;
    const lots = counts ? o.remainingLots : 0;
    const loss = counts ? reduceOnlyLossOf(o) : 0n;
    addToReduceOnlySums(this.sums, o.market, lots - (before?.lots ?? 0), loss - (before?.loss ?? 0n));
    if (version === undefined) this.versions.set(o.market, o.market.markVersion);
    if (!counts) this.shares.delete(o);
    else if (before === undefined) this.shares.set(o, { lots, loss });
    else {
      before.lots = lots;
      before.loss = loss;
    }
  }

  private marksMoved(): boolean {
    for (const [market, version] of this.versions) if (market.markVersion !== version) return true;
    return false;
  }

  private recount(account: LinearAccount): void {
    this.sums.crossLoss = 0n;
    if (this.sums.byMarket.size !== 0) this.sums.byMarket.clear();
    if (this.shares.size !== 0) this.shares.clear();
    if (this.versions.size !== 0) this.versions.clear();
    for (const o of account.orders.values()) {
      if (!countsInReduceOnlySums(o)) continue;
      const share = { lots: o.remainingLots, loss: reduceOnlyLossOf(o) };
      this.shares.set(o, share);
      this.versions.set(o.market, o.market.markVersion);
      addToReduceOnlySums(this.sums, o.market, share.lots, share.loss);
    }
    this.valid = true;
  }
}
