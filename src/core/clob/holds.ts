/**
 * The CLOB engine's holds on the spot and options buckets (exchange.ts `BucketHolds`): what the
 * wallet shows as `locked` and what a transfer out may take.
 *
 *   spot     locked = held by open orders (per asset); transferable = balance − locked.
 *   options  locked = held by buy orders + initial margin of the worst-case shorts, at most the
 *            balance; transferable = balance − held − initial margin (never below 0).
 * Tested through the transfer refusals in spot.test.ts and options.test.ts.
 */
import type { Fixed } from '../money.ts';
import { ClobAccount } from './account.ts';
import type { ClobEngine } from './engine.ts';
import { accountFunds } from './option-margin.ts';

export function spotHolds(e: ClobEngine) {
  const held = (accountId: number, asset: string) => e.findAccount(accountId)?.held('spot', asset) ?? 0n;
  return {
    locked: held,
    transferable: (accountId: number, asset: string): Fixed => {
      const free = e.userBalance(accountId, 'spot', asset) - held(accountId, asset);
      return free > 0n ? free : 0n;
    },
  };
}

export function optionHolds(e: ClobEngine) {
  const funds = (accountId: number) => {
    const account = e.findAccount(accountId) ?? new ClobAccount(accountId);
    return accountFunds(e, account, e.deps.now());
  };
  return {
    locked: (accountId: number, asset: string): Fixed => {
      if (asset !== e.settlementAsset) return 0n;
      const f = funds(accountId);
      const used = f.reserved + f.initialMargin;
      return used > f.balance ? (f.balance > 0n ? f.balance : 0n) : used;
    },
    transferable: (accountId: number, asset: string): Fixed => {
      if (asset !== e.settlementAsset) return 0n;
      const f = funds(accountId);
      return f.available > 0n ? f.available : 0n;
    },
  };
}
