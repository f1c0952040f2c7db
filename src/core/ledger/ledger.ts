/**
 * The double-entry ledger. Every movement of money is one balanced transaction: a list of lines
 * (ledger account, signed delta) whose deltas sum to zero per asset. Balances are never written
 * any other way, so the sum over all ledger accounts is zero per asset at every instant.
 *
 * Ledger accounts are either a user's bucket for one asset (`wallet`, `perps`, `options`, `spot`)
 * or a system account: `chain` (the outside world: negative by what users have deposited and not
 * withdrawn), `withdrawals_pending`, `fees`, `insurance`, and per-market `clearing:<market>`
 * accounts that stand opposite realised PnL and option payouts.
 *
 * Invariants: each transaction balances per asset (asserted on post); a user bucket is never
 * negative once a command completes (the exchange checks the buckets a command touched). Holds
 * (order reserves, margin) are not ledger movements: engines keep them and report them as `locked`.
 *
 * Tested by ledger.test.ts and by the invariant checks the exchange tests run after every command.
 */
import { assert, fail } from '../assert.ts';
import type { Fixed } from '../money.ts';
import { TouchedSet } from '../touched.ts';

export const BUCKETS = ['wallet', 'perps', 'options', 'spot'] as const;
export type Bucket = (typeof BUCKETS)[number];

export const LEDGER_ENTRY_TYPES = [
  'deposit',
  'withdrawal',
  'withdrawal_refund',
  'transfer',
  'trade_fee',
  'fee_rebate',
  'funding',
  'realized_pnl',
  'option_premium',
  'settlement',
  'liquidation',
  'insurance_fund',
  'trade',
] as const;
export type LedgerEntryType = (typeof LEDGER_ENTRY_TYPES)[number];

export type SystemAccountName =
  | 'chain'
  | 'withdrawals_pending'
  | 'fees'
  | 'insurance'
  | 'treasury'
  | `clearing:${string}`;

/** Where a line lands: a user's bucket, or a system account. */
export type LedgerAccount =
  | { readonly kind: 'user'; readonly accountId: number; readonly bucket: Bucket; readonly asset: string }
  | { readonly kind: 'system'; readonly name: SystemAccountName; readonly asset: string };

export interface LedgerLine {
  readonly account: LedgerAccount;
  readonly delta: Fixed;
}

/** One line as it is recorded: what `/wallet/history` and the insurance-fund history read. */
export interface LedgerEntry {
  readonly entryId: number;
  readonly txId: number;
  readonly type: LedgerEntryType;
  readonly account: LedgerAccount;
  readonly amount: Fixed;
  readonly balanceAfter: Fixed;
  readonly ref: string | null;
  readonly txHash: string | null;
  readonly at: number;
}

export interface PostMeta {
  readonly ref?: string | null;
  readonly txHash?: string | null;
}

// Ledger account values are interned: the same (owner, bucket, asset) is always the same frozen
// object, with its key computed once. The nested lookups find it without building the key string,
// so hot paths (several accounts named on every fill) allocate nothing for them.
const KEY = Symbol('ledgerKey');
const userAccounts = new Map<Bucket, Map<string, Map<number, LedgerAccount>>>();
const systemAccounts = new Map<string, Map<string, LedgerAccount>>();

function frozen(account: LedgerAccount, key: string): LedgerAccount {
  return Object.freeze(Object.assign(account, { [KEY]: key }));
}

export function userAccount(accountId: number, bucket: Bucket, asset: string): LedgerAccount {
  let byAsset = userAccounts.get(bucket);
  if (byAsset === undefined) userAccounts.set(bucket, (byAsset = new Map()));
  let byId = byAsset.get(asset);
  if (byId === undefined) byAsset.set(asset, (byId = new Map()));
  let account = byId.get(accountId);
  if (account === undefined) {
    account = frozen({ kind: 'user', accountId, bucket, asset }, `u:${accountId}:${bucket}:${asset}`);
    byId.set(accountId, account);
  }
  return account;
}

export function systemAccount(name: SystemAccountName, asset: string): LedgerAccount {
  let byAsset = systemAccounts.get(name);
  if (byAsset === undefined) systemAccounts.set(name, (byAsset = new Map()));
  let account = byAsset.get(asset);
  if (account === undefined) {
    account = frozen({ kind: 'system', name, asset }, `s:${name}:${asset}`);
    byAsset.set(asset, account);
  }
  return account;
}

export function ledgerKey(account: LedgerAccount): string {
  const cached = (account as { [KEY]?: string })[KEY];
  if (cached !== undefined) return cached;
  return account.kind === 'user'
    ? `u:${account.accountId}:${account.bucket}:${account.asset}`
    : `s:${account.name}:${account.asset}`;
}

export interface LedgerState {
  balances: Map<string, Fixed>;
  nextTxId: number;
  nextEntryId: number;
}

export class Ledger {
  private readonly balances: Map<string, Fixed>;
  private nextTxId: number;
  private nextEntryId: number;
  /** User ledger keys changed by the current command; checked non-negative when it completes. */
  private readonly touchedUserKeys = new TouchedSet<string>();

  constructor(
    private readonly onEntry: (entry: LedgerEntry) => void,
    state?: LedgerState,
  ) {
    this.balances = state?.balances ?? new Map();
    this.nextTxId = state?.nextTxId ?? 1;
    this.nextEntryId = state?.nextEntryId ?? 1;
  }

  balance(account: LedgerAccount): Fixed {
    return this.balances.get(ledgerKey(account)) ?? 0n;
  }

  userBalance(accountId: number, bucket: Bucket, asset: string): Fixed {
    return this.balances.get(`u:${accountId}:${bucket}:${asset}`) ?? 0n;
  }

  /**
   * Applies one balanced transaction. Lines with a zero delta are dropped. Returns the tx id, or 0
   * when every line was zero (nothing to record).
   */
  post(type: LedgerEntryType, lines: readonly LedgerLine[], at: number, meta: PostMeta = {}): number {
    assertBalanced(type, lines);
    if (lines.every((l) => l.delta === 0n)) return 0;
    const txId = this.nextTxId++;
    for (const line of lines) {
      if (line.delta === 0n) continue;
      const key = ledgerKey(line.account);
      const after = (this.balances.get(key) ?? 0n) + line.delta;
      this.balances.set(key, after);
      if (line.account.kind === 'user') this.touchedUserKeys.add(key);
      this.onEntry({
        entryId: this.nextEntryId++,
        txId,
        type,
        account: line.account,
        amount: line.delta,
        balanceAfter: after,
        ref: meta.ref ?? null,
        txHash: meta.txHash ?? null,
        at,
      });
    }
    return txId;
  }

  /** A two-line transaction moving `amount` (>= 0) from one account to another. */
  move(type: LedgerEntryType, from: LedgerAccount, to: LedgerAccount, amount: Fixed, at: number, meta?: PostMeta): number {
    if (amount < 0n) fail(`ledger move of a negative amount ${amount}`);
    assert(from.asset === to.asset, 'ledger move across assets');
    return this.post(type, [{ account: from, delta: -amount }, { account: to, delta: amount }], at, meta);
  }

  /** Asserts that no user bucket touched since the last call is negative, then forgets them. */
  assertTouchedNonNegative(): void {
    const touched = this.touchedUserKeys;
    for (let i = 0; i < touched.size; i++) {
      const key = touched.at(i);
      const balance = this.balances.get(key) ?? 0n;
      if (balance < 0n) fail(`user ledger account ${key} is negative: ${balance}`);
    }
    touched.reset();
  }

  /** Discards the touched set without checking (used only when a command is being abandoned). */
  forgetTouched(): void {
    this.touchedUserKeys.reset();
  }

  /** Sum of every ledger account per asset; all zero by construction. */
  totalsByAsset(): Map<string, Fixed> {
    const totals = new Map<string, Fixed>();
    for (const [key, value] of this.balances) {
      const asset = key.slice(key.lastIndexOf(':') + 1);
      totals.set(asset, (totals.get(asset) ?? 0n) + value);
    }
    return totals;
  }

  /** Every user ledger key with a negative balance (the invariant says: none). */
  negativeUserAccounts(): string[] {
    const out: string[] = [];
    for (const [key, value] of this.balances) if (key.startsWith('u:') && value < 0n) out.push(key);
    return out;
  }

  entries(): IterableIterator<[string, Fixed]> {
    return this.balances.entries();
  }

  exportState(): LedgerState {
    return { balances: new Map(this.balances), nextTxId: this.nextTxId, nextEntryId: this.nextEntryId };
  }
}

/** Each asset's lines sum to zero (no allocation in the common one-asset case). */
function assertBalanced(type: LedgerEntryType, lines: readonly LedgerLine[]): void {
  const first = lines[0]?.account.asset;
  let sum = 0n;
  let mixed = false;
  for (const line of lines) {
    if (line.account.asset === first) sum += line.delta;
    else mixed = true;
  }
  if (sum !== 0n) fail(`ledger tx ${type} unbalanced in ${first} by ${sum}`);
  if (!mixed) return;
  const sums = new Map<string, Fixed>();
  for (const line of lines) sums.set(line.account.asset, (sums.get(line.account.asset) ?? 0n) + line.delta);
  for (const [asset, total] of sums) if (total !== 0n) fail(`ledger tx ${type} unbalanced in ${asset} by ${total}`);
}
