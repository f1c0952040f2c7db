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
 *    instrument's `clearing:<id>` account; what remains in it after rounding goes to insurance,
 *    and a short that cannot pay in full is made whole by the insurance fund, so no user bucket
 *    ends negative.
 * Tested through the engine tests (ledger sums to zero per asset after every command).
 */
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
 * Settles an instrument: `amounts` are signed exact payoffs per account (long > 0, short < 0).
 * Shorts pay rounded up, longs receive rounded down, through `clearing:<instrument>`; the residue
 * goes to insurance and any short left negative is covered by insurance. Returns the posted amounts.
 */
export function postSettlement(
  c: PostingContext, instrument: string, amounts: ReadonlyMap<number, Fixed>,
): Map<number, Fixed> {
  const asset = c.settlementAsset;
  const clearing = systemAccount(`clearing:${instrument}`, asset);
  const insurance = systemAccount('insurance', asset);
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
  const residue = c.ledger.balance(clearing);
  if (residue > 0n) {
    c.ledger.move('insurance_fund', clearing, insurance, residue, c.at, { ref: `settlement:${instrument}` });
  }
  for (const accountId of posted.keys()) {
    const user = userAccount(accountId, 'options', asset);
    const balance = c.ledger.balance(user);
    if (balance >= 0n) continue;
    c.ledger.move('insurance_fund', insurance, user, -balance, c.at, { ref: `shortfall:${instrument}` });
  }
  return posted;
}
