/**
 * Trading fees as the ledger records them, the same for both engines: the fees charged on a fill
 * (positive) move to the venue's `fees` account in one `trade_fee` transaction, the rebates paid
 * (negative) move out of it in one `fee_rebate` transaction. A zero fee posts nothing.
 */
import type { Fixed } from '../money.ts';
import { systemAccount, type Ledger, type LedgerAccount, type LedgerLine, type PostMeta } from './ledger.ts';

export interface FeeLine {
  readonly account: LedgerAccount;
  /** Signed: positive is charged to the account, negative is a rebate paid to it. */
  readonly fee: Fixed;
}

export function postFees(ledger: Ledger, asset: string, fees: readonly FeeLine[], at: number, meta: PostMeta = {}): void {
  const charged: LedgerLine[] = [];
  const rebated: LedgerLine[] = [];
  let charges = 0n;
  let rebates = 0n;
  for (const { account, fee } of fees) {
    if (fee === 0n) continue;
    const line = { account, delta: -fee };
    if (fee > 0n) {
      charged.push(line);
      charges += fee;
    } else {
      rebated.push(line);
      rebates -= fee;
    }
  }
  const feeAccount = systemAccount('fees', asset);
  if (charged.length > 0) {
    charged.push({ account: feeAccount, delta: charges });
    ledger.post('trade_fee', charged, at, meta);
  }
  if (rebated.length > 0) {
    rebated.push({ account: feeAccount, delta: -rebates });
    ledger.post('fee_rebate', rebated, at, meta);
  }
}
