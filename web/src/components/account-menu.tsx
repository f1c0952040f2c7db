/**
 * Sign-in and the signed-in account, top right. A browser wallet (EIP-1193) when the page has one;
 * always a local key, labelled as such: it lives in this browser's storage and is for local use.
 */
import { useState } from 'preact/hooks';
import { account, hasBrowserWallet, signInLocal, signInWallet, signOut } from '../api/account.ts';
import { reportError } from '../lib/notify.ts';
import { useStore } from '../lib/store.ts';
import { shortAddress } from '../lib/format.ts';

export function AccountMenu() {
  const current = useStore(account);
  const [busy, setBusy] = useState(false);
  const run = (action: () => Promise<unknown>, doing: string) => async () => {
    setBusy(true);
    try {
      await action();
    } catch (e) {
      reportError(e, doing);
    } finally {
      setBusy(false);
    }
  };
  if (current !== null) {
    return (
      <div class="account" data-testid="account">
        <span class={`badge ${current.kind}`} title={current.kind === 'local' ? 'A key kept in this browser for local use: not a wallet' : 'Signed in with your browser wallet'}>
          {current.kind === 'local' ? 'local key' : 'wallet'}
        </span>
        <span class="mono" title={current.address}>{shortAddress(current.address)}</span>
        <button type="button" class="ghost" disabled={busy} onClick={run(signOut, 'signing out')}>Sign out</button>
      </div>
    );
  }
  return (
    <div class="account">
      {hasBrowserWallet() && (
        <button type="button" disabled={busy} onClick={run(signInWallet, 'signing in with the wallet')}>Connect wallet</button>
      )}
      <button type="button" class={hasBrowserWallet() ? 'ghost' : ''} disabled={busy} onClick={run(signInLocal, 'signing in with the local key')} title="Generates a key in this browser and keeps it in its storage: for local use only">
        Sign in with a local key
      </button>
    </div>
  );
}
