/**
 * Every asset in every bucket (GET /wallet/assets): USDC in the four buckets and the spot
 * bucket's base assets (BTC, ETH) in their own units, each available, locked and total. Read
 * again when the balances stream moves and every 10 s.
 */
import type { ExchangeClient } from '../../../../sdk/src/index.ts';
import { num } from '../../lib/format.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { BUCKETS, useOnRevision } from './use-balances.ts';

export function AssetRows(props: { client: ExchangeClient; address: string; revision: number }) {
  const [rows, read] = usePoll(() => props.client.assets(), 10_000, props.address);
  useOnRevision(props.revision, read);
  return (
    <section class="panel assets" aria-label="Assets">
      <h2>Assets</h2>
      <div class="table-scroll">
        <table class="grid" data-testid="assets">
          <thead>
            <tr><th>Asset</th><th>Bucket</th><th class="num">Available</th><th class="num">Locked</th><th class="num">Total</th></tr>
          </thead>
          <tbody>
            {(rows ?? []).map((r) => (
              <tr key={`${r.bucket}-${r.asset}`} class={/[1-9]/.test(r.total) ? '' : 'zero'}>
                <td class="strong">{r.asset}</td>
                <td>{BUCKETS.find((b) => b.id === r.bucket)?.label ?? r.bucket}</td>
                <td class="num">{num(r.available)}</td>
                <td class="num">{num(r.locked)}</td>
                <td class="num">{num(r.total)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
