/**
 * Depositing: the account's USDC deposit address (GET /wallet/deposit-address) with a copy button,
 * the chain and the confirmations a deposit needs, what is seen on chain but not yet confirmed
 * (pendingDepositTotal), and the latest deposits with their status (GET /wallet/settlements).
 */
import type { ExchangeClient } from '../../../../sdk/src/index.ts';
import { dateTime, num } from '../../lib/format.ts';
import { usePoll } from '../../lib/use-poll.ts';
import type { WalletTotals } from './buckets.tsx';
import { CopyButton } from './copy-button.tsx';
import { useOnRevision } from './use-balances.ts';

export function DepositPanel(props: { client: ExchangeClient; address: string; revision: number; totals: WalletTotals | null }) {
  const { client, address } = props;
  const [where] = usePoll(() => client.depositAddress(), 300_000, address);
  const [deposits, readDeposits] = usePoll(() => client.get('/wallet/settlements', { query: { kind: 'deposit', limit: 5 } }), 5_000, address);
  useOnRevision(props.revision, readDeposits);
  const pending = props.totals?.pendingDepositTotal;
  return (
    <section class="panel deposit" aria-label="Deposit">
      <h2>Deposit USDC</h2>
      <div class="deposit-address">
        <code id="deposit-address" class="mono" data-testid="deposit-address">{where?.address ?? '…'}</code>
        {where !== null && <CopyButton text={where.address} what="Deposit address" target="deposit-address" />}
      </div>
      {where !== null && (
        <p class="muted small-note">
          Send only {where.asset} on chain {where.chainId} to this address; it is credited to the Wallet bucket after {where.confirmationsRequired} confirmations.
        </p>
      )}
      {pending !== undefined && /[1-9]/.test(pending) && (
        <p class="warn small-note" role="status">{num(pending)} USDC seen on chain, waiting for confirmations.</p>
      )}
      <h3>Latest deposits</h3>
      {deposits !== null && deposits.length === 0 ? (
        <p class="muted small-note">No deposit yet.</p>
      ) : (
        <div class="table-scroll">
          <table class="grid" data-testid="deposits">
            <thead>
              <tr><th>Time (UTC)</th><th class="num">Amount</th><th>Status</th></tr>
            </thead>
            <tbody>
              {(deposits ?? []).map((d) => (
                <tr key={d.id}>
                  <td>{dateTime(d.createdAt)}</td>
                  <td class="num">{num(d.amount)}</td>
                  <td>
                    <span class={`status ${d.status}`}>{d.status}</span>
                    {d.status !== 'confirmed' && <span class="muted num"> ({d.confirmations}{where !== null ? `/${where.confirmationsRequired}` : ''})</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
