/**
 * The Spot bucket's balance of each asset (USDC and the base assets, each in its own units:
 * available, locked by resting orders, total), from GET /wallet/assets, read again whenever the
 * balances stream moves (an order placed, filled or cancelled changes what is locked) and every
 * 10 s. Money reaches the Spot bucket by a transfer on the wallet screen.
 */
import type { ExchangeClient, Market, ResponseOf } from '../../../../sdk/src/index.ts';
import { num } from '../../lib/format.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { useOnRevision } from '../wallet/use-balances.ts';

export type AssetRow = ResponseOf<'/wallet/assets', 'get'>[number];

/** The Spot bucket's rows, or null before the first read (and while signed out). */
export function useSpotAssets(client: ExchangeClient | null, address: string, revision: number): readonly AssetRow[] | null {
  const [rows, read] = usePoll(client === null ? null : () => client.assets(), 10_000, address);
  useOnRevision(revision, read, 500);
  return client === null || rows === null ? null : rows.filter((r) => r.bucket === 'spot');
}

export function SpotBalances(props: { signedIn: boolean; assets: readonly AssetRow[] | null; pair: Market | undefined }) {
  const traded = new Set([props.pair?.baseSymbol, props.pair?.quoteSymbol]);
  return (
    <section class="panel spot-balances" aria-label="Spot balances">
      <h2>Spot balances</h2>
      {!props.signedIn ? (
        <p class="muted">Sign in to see your balance of each asset.</p>
      ) : (
        <>
          <div class="table-scroll">
            <table class="grid" data-testid="spot-balances">
              <thead>
                <tr><th>Asset</th><th class="num">Available</th><th class="num">Locked</th><th class="num">Total</th></tr>
              </thead>
              <tbody>
                {(props.assets ?? []).map((r) => (
                  <tr key={r.asset} data-asset={r.asset} class={traded.has(r.asset) ? '' : 'other-asset'}>
                    <td class="strong">{r.asset}</td>
                    <td class="num">{num(r.available)}</td>
                    <td class="num">{num(r.locked)}</td>
                    <td class="num">{num(r.total)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p class="muted spot-note">Buys lock USDC, sells lock the base asset. Move USDC into the Spot bucket on the <a href="#/wallet">wallet</a>.</p>
        </>
      )}
    </section>
  );
}
