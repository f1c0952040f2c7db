/**
 * The four buckets side by side: each one's total, available and locked (order holds and margin
 * in use), live from the balances stream; with the account's deposit and withdrawal totals
 * (GET /wallet/balance: credited on chain, seen but unconfirmed, requested but not yet paid out).
 */
import type { ResponseOf } from '../../../../sdk/src/index.ts';
import { num, time } from '../../lib/format.ts';
import { BUCKETS, type Buckets } from './use-balances.ts';

export type WalletTotals = ResponseOf<'/wallet/balance', 'get'>;

export function BucketCards(props: { buckets: Buckets | null; totals: WalletTotals | null }) {
  const { buckets, totals } = props;
  return (
    <section class="panel buckets" aria-label="Balances">
      <div class="bucket-cards">
        {BUCKETS.map((b) => {
          const figures = buckets?.[b.id];
          return (
            <div class="bucket" key={b.id} data-testid={`bucket-${b.id}`}>
              <h2 title={b.holds}>{b.label}</h2>
              <div class="bucket-total num" data-testid={`bucket-${b.id}-total`}>
                {num(figures?.total)} <span class="unit">USDC</span>
              </div>
              <div class="bucket-split muted">
                <span>available <span class="num">{num(figures?.available)}</span></span>
                <span>locked <span class="num">{num(figures?.locked)}</span></span>
              </div>
            </div>
          );
        })}
      </div>
      <div class="wallet-totals muted">
        <span>deposited on chain (lifetime) <span class="num">{num(totals?.onchainDepositTotal)}</span></span>
        <span>deposits awaiting confirmations <span class="num" data-testid="pending-deposits">{num(totals?.pendingDepositTotal)}</span></span>
        <span>withdrawals under way <span class="num" data-testid="pending-withdrawals">{num(buckets?.pendingWithdrawalTotal ?? totals?.pendingWithdrawalTotal)}</span></span>
        {buckets !== null && <span>updated {time(buckets.updatedAt)} UTC</span>}
      </div>
    </section>
  );
}
