/**
 * Ledger postings of the CLOB venue. Every movement is one balanced transaction per asset:
 *
 *  - swap (spot `trade`, option `option_premium`): the buyer pays the quote amount rounded up to
 *    the settlement precision, the seller receives it rounded down, the residue (at most one
 *    smallest unit) goes to the insurance fund; for spot the base asset moves seller -> buyer in
 *    the same transaction. Spot amounts live in the `spot` buckets, premiums in `options`.
 *  - fees: one `trade_fee` transaction for the fees charged on a fill (to the `fees` account) and
 *    one `fee_rebate` for negative ones (from it).
 *  - settlement (`settlement`): shorts pay and longs receive the option payoff through the
 *    instrument's `clearing:<id>` account; what remains in it after rounding goes to insurance.
 *    Once every instrument settling in the tick is posted, an account left negative (net across
 *    them) is made whole by the insurance fund, so no user bucket ends negative.
 * Tested through the engine tests (ledger sums to zero per asset after every command).
 */
import { fail } from '../assert.ts';
import { divRound, unitOf, type Fixed } from '../money.ts';
import { postFees } from '../ledger/fee-postings.ts';
import { systemAccount, userAccount, type Bucket, type Ledger, type LedgerLine } from '../ledger/ledger.ts';

export interface PostingContext {
  readonly ledger: Ledger;
  readonly settlementAsset: string;
  readonly settlementDecimals: number;
  readonly at: number;
}

export function roundAt(amount: Fixed, decimals: number, mode: 'floor' | 'ceil'): Fixed {
  const unit = unitOf(decimals);
  return divRound(amount, unit, mode) * unit;
}

export interface Swap {
  readonly bucket: Bucket;
  readonly buyer: number;
  readonly seller: number;
  /** Exact quote amount (price x quantity). */
  readonly amount: Fixed;
  /** Spot: the base asset and quantity that move seller -> buyer; null for options. */
  readonly base: { readonly asset: string; readonly quantity: Fixed } | null;
  readonly ref: string;
}

/** Posts a swap; returns what the buyer paid and the seller received. */
export function postSwap(c: PostingContext, s: Swap): { paid: Fixed; received: Fixed } {
  const asset = c.settlementAsset;
  const paid = roundAt(s.amount, c.settlementDecimals, 'ceil');
  const received = roundAt(s.amount, c.settlementDecimals, 'floor');
  const lines: LedgerLine[] = [
    { account: userAccount(s.buyer, s.bucket, asset), delta: -paid },
    { account: userAccount(s.seller, s.bucket, asset), delta: received },
    { account: systemAccount('insurance', asset), delta: paid - received },
  ];
  if (s.base !== null) {
    lines.push({ account: userAccount(s.seller, s.bucket, s.base.asset), delta: -s.base.quantity });
    lines.push({ account: userAccount(s.buyer, s.bucket, s.base.asset), delta: s.base.quantity });
  }
  c.ledger.post(s.bucket === 'spot' ? 'trade' : 'option_premium', lines, c.at, { ref: s.ref });
  return { paid, received };
}

/** Posts the fees of one fill (positive: charged; negative: rebated; ledger/fee-postings.ts). */
export function postFillFees(
  c: PostingContext, bucket: Bucket, fees: readonly { accountId: number; fee: Fixed }[], ref: string,
): void {
  const lines = fees.map(({ accountId, fee }) => ({ account: userAccount(accountId, bucket, c.settlementAsset), delta: -fee }));
  postFees(c.ledger, c.settlementAsset, lines, c.at, { ref });
}

/**
 * Posts an instrument's settlement: `amounts` are signed exact payoffs per account (long > 0,
 * short < 0). Shorts pay rounded up, longs receive rounded down, through `clearing:<instrument>`;
 * the residue goes to insurance, leaving the clearing account at zero. A short may be left
 * negative here: coverShortfalls runs once every instrument settling in the tick is posted, so an
 * account's receipts on one instrument pay what it owes on another before the fund does.
 * Returns the posted amounts.
 */
export function postPayoffs(
  c: PostingContext, instrument: string, amounts: ReadonlyMap<number, Fixed>,
): Map<number, Fixed> {
  const asset = c.settlementAsset;
  const clearing = systemAccount(`clearing:${instrument}`, asset);
  const posted = new Map<number, Fixed>();
  const lines: LedgerLine[] = [];
  let sum = 0n;
  for (const [accountId, amount] of amounts) {
    const d = c.settlementDecimals;
    const rounded = amount < 0n ? -roundAt(-amount, d, 'ceil') : roundAt(amount, d, 'floor');
    if (rounded === 0n) continue;
    posted.set(accountId, rounded);
    lines.push({ account: userAccount(accountId, 'options', asset), delta: rounded });
    sum += rounded;
  }
  if (lines.length === 0) return posted;
  lines.push({ account: clearing, delta: -sum });
  c.ledger.post('settlement', lines, c.at, { ref: instrument });
  // Shorts round up and longs down, so the clearing account can only be left holding money.
  const residue = c.ledger.balance(clearing);
  if (residue < 0n) fail(`settlement of ${instrument} paid out ${-residue} more than it collected`);
  if (residue > 0n) {
    const insurance = systemAccount('insurance', asset);
    c.ledger.move('insurance_fund', clearing, insurance, residue, c.at, { ref: `settlement:${instrument}` });
  }
  return posted;
}

/**
 * Makes whole from the insurance fund every account of `accountIds` whose options balance a
 * settlement left negative (ref `shortfall:settlement`), so no user bucket ends negative. Called
 * once per tick after all of its settlement postings: the fund pays only an account's net deficit.
 */
export function coverShortfalls(c: PostingContext, accountIds: Iterable<number>): void {
  const asset = c.settlementAsset;
  const insurance = systemAccount('insurance', asset);
  for (const accountId of accountIds) {
    const user = userAccount(accountId, 'options', asset);
    const balance = c.ledger.balance(user);
    if (balance >= 0n) continue;
    c.ledger.move('insurance_fund', insurance, user, -balance, c.at, { ref: 'shortfall:settlement' });
  }
}
