/**
 * Wallet: the four buckets (live from GET /portfolio/balances/stream), every asset's rows
 * (GET /wallet/assets), the deposit address and deposits, transfers between buckets and
 * withdrawals, the ledger and settlement history, and the account's API keys. Signed out, it says
 * how to sign in: every figure here is private.
 */
import type { Account } from '../../api/account.ts';
import { account } from '../../api/account.ts';
import { useStore } from '../../lib/store.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { ApiKeys } from './api-keys.tsx';
import { AssetRows } from './assets.tsx';
import { BucketCards } from './buckets.tsx';
import { DepositPanel } from './deposit.tsx';
import { History } from './history.tsx';
import { TransferForm, WithdrawForm } from './move-funds.tsx';
import { useLiveBalances, useOnRevision } from './use-balances.ts';
import './wallet.css';

export function Wallet() {
  const signedIn = useStore(account);
  if (signedIn === null) return <SignInFirst what="your wallet: balances, deposits, transfers, withdrawals and API keys" />;
  return <WalletOf key={signedIn.address} signedIn={signedIn} />;
}

/** What a private screen shows to a visitor who has not signed in. */
export function SignInFirst(props: { what: string }) {
  return (
    <section class="panel sign-in-first" data-testid="sign-in-first">
      <h2>Sign in</h2>
      <p>Sign in to see {props.what}.</p>
      <p class="muted">Use “Connect wallet” (a browser wallet signs a Sign-In with Ethereum message) or “Sign in with a local key” (a key kept in this browser, for local use) at the top right.</p>
    </section>
  );
}

function WalletOf({ signedIn }: { signedIn: Account }) {
  const { client, address } = signedIn;
  const live = useLiveBalances(client, address);
  const [totals, readTotals] = usePoll(() => client.balance(), 5_000, address);
  useOnRevision(live.revision, readTotals);
  return (
    <div class="wallet">
      <div class="wallet-side">
        <section class="panel move-funds" aria-label="Move funds">
          <TransferForm client={client} buckets={live.buckets} />
          <WithdrawForm client={client} address={address} buckets={live.buckets} />
        </section>
        <DepositPanel client={client} address={address} revision={live.revision} totals={totals} />
      </div>
      <div class="wallet-main">
        <BucketCards buckets={live.buckets} totals={totals} />
        <History client={client} address={address} revision={live.revision} />
        <AssetRows client={client} address={address} revision={live.revision} />
      </div>
      <ApiKeys client={client} address={address} />
    </div>
  );
}
