/**
 * Trading fees as the ledger records them, the same for both engines: the fees charged on a fill
 * move to the venue's `fees` account in one `trade_fee` transaction, the rebates paid move out of
 * it in one `fee_rebate` transaction. A zero fee posts nothing.
 */
import { systemAccount, type Ledger, type LedgerLine, type PostMeta } from './ledger.ts';

/**
 * Posts `userLines`, each the trader's side of one fee (delta −fee: negative when charged,
 * positive for a rebate), against the fee account.
 */
export function postFees(ledger: Ledger, asset: string, userLines: readonly LedgerLine[], at: number, meta: PostMeta = {}): void {
  const charged: LedgerLine[] = [];
  const rebated: LedgerLine[] = [];
  let charges = 0n;
  let rebates = 0n;
  for (const line of userLines) {
    if (line.delta < 0n) {
      charged.push(line);
      charges -= line.delta;
    } else if (line.delta > 0n) {
      rebated.push(line);
      rebates += line.delta;
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
