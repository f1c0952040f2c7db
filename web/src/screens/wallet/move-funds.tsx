/**
 * Moving money: a transfer between two of the account's buckets (POST /wallet/transfer) and a
 * withdrawal from the wallet bucket to the signed-in address (POST /wallet/withdraw), confirmed
 * first. Each request carries a clientTransferId (newClientId) kept while the form is unchanged,
 * so sending again after a lost answer cannot move the money twice: the service refuses the
 * repeat and says what the first attempt did. Amounts go as typed; the service checks them.
 */
import { useId, useState } from 'preact/hooks';
import { newClientId, type ExchangeClient } from '../../../../sdk/src/index.ts';
import { num, shortAddress } from '../../lib/format.ts';
import { notify } from '../../lib/notify.ts';
import { BUCKETS, type BucketName, type Buckets } from './use-balances.ts';
import { useAction, useFocusOnMount } from './use-action.ts';

const label = (id: BucketName) => BUCKETS.find((b) => b.id === id)?.label ?? id;

/** The idempotency id of what the form holds now: a new one whenever the form changes. */
function useTransferId(): [id: () => string, changed: () => void] {
  const [id, setId] = useState<string | null>(null);
  const current = () => {
    if (id !== null) return id;
    const fresh = newClientId();
    setId(fresh);
    return fresh;
  };
  return [current, () => setId(null)];
}

export function TransferForm(props: { client: ExchangeClient; buckets: Buckets | null }) {
  const [from, setFrom] = useState<BucketName>('wallet');
  const [to, setTo] = useState<BucketName>('perps');
  const [amount, setAmount] = useState('');
  const [transferId, formChanged] = useTransferId();
  const [busy, run] = useAction();
  const edit = <T,>(set: (v: T) => void) => (v: T) => {
    set(v);
    formChanged();
  };
  const available = props.buckets?.[from].available;
  const submit = async (e: Event) => {
    e.preventDefault();
    const request = { from, to, amount: amount.trim(), clientTransferId: transferId() };
    const done = await run('transferring', async () => {
      await props.client.transfer(request);
      notify('ok', `Moved ${num(request.amount)} USDC from ${label(from)} to ${label(to)}`);
    });
    if (done) {
      setAmount('');
      formChanged();
    }
  };
  return (
    <form class="fund-form" onSubmit={submit} aria-label="Transfer between buckets">
      <h2>Transfer between buckets</h2>
      <div class="transfer-route">
        <BucketSelect label="From" value={from} onChange={edit(setFrom)} />
        <button type="button" class="ghost small swap" aria-label="Swap from and to" title="Swap from and to" onClick={() => {
          setFrom(to);
          edit(setTo)(from);
        }}>⇄</button>
        <BucketSelect label="To" value={to} onChange={edit(setTo)} />
      </div>
      <label>
        Amount (USDC)
        <input name="transfer-amount" inputMode="decimal" autocomplete="off" required placeholder="0.00" value={amount} onInput={(e) => edit(setAmount)(e.currentTarget.value)} />
      </label>
      <div class="form-foot">
        <span class="muted">
          available in {label(from)}{' '}
          <button type="button" class="link num" title="Use all of it" onClick={() => available !== undefined && edit(setAmount)(available)}>{num(available)}</button>
        </span>
        <button type="submit" disabled={busy || from === to}>Transfer</button>
      </div>
      {from === to && <p class="muted small-note">Pick two different buckets.</p>}
    </form>
  );
}

function BucketSelect(props: { label: string; value: BucketName; onChange: (v: BucketName) => void }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select id={id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value as BucketName)}>
        {BUCKETS.map((b) => (
          <option key={b.id} value={b.id}>{b.label}</option>
        ))}
      </select>
    </div>
  );
}

export function WithdrawForm(props: { client: ExchangeClient; address: string; buckets: Buckets | null }) {
  const [amount, setAmount] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [transferId, formChanged] = useTransferId();
  const [busy, run] = useAction();
  const available = props.buckets?.wallet.available;
  const ask = (e: Event) => {
    e.preventDefault();
    if (amount.trim() !== '') setConfirming(true);
  };
  const send = async () => {
    const request = { amount: amount.trim(), clientTransferId: transferId() };
    const done = await run('withdrawing', async () => {
      const { withdrawalId } = await props.client.withdraw(request);
      notify('ok', `Withdrawal ${withdrawalId} of ${num(request.amount)} USDC requested: it is paid out on chain (see Deposits & withdrawals)`);
    });
    setConfirming(false);
    if (done) {
      setAmount('');
      formChanged();
    }
  };
  return (
    <form class="fund-form" onSubmit={ask} aria-label="Withdraw">
      <h2>Withdraw USDC</h2>
      <p class="muted small-note">
        From the Wallet bucket to your signed-in address <span class="mono" title={props.address}>{shortAddress(props.address)}</span>.
      </p>
      <label>
        Amount (USDC)
        <input name="withdraw-amount" inputMode="decimal" autocomplete="off" required placeholder="0.00" value={amount} readOnly={confirming} onInput={(e) => {
          setAmount(e.currentTarget.value);
          formChanged();
        }} />
      </label>
      {confirming ? (
        <ConfirmWithdrawal amount={amount.trim()} address={props.address} busy={busy} onConfirm={send} onCancel={() => setConfirming(false)} />
      ) : (
        <div class="form-foot">
          <span class="muted">
            available in Wallet{' '}
            <button type="button" class="link num" title="Use all of it" onClick={() => {
              if (available === undefined) return;
              setAmount(available);
              formChanged();
            }}>{num(available)}</button>
          </span>
          <button type="submit">Withdraw…</button>
        </div>
      )}
    </form>
  );
}

function ConfirmWithdrawal(props: { amount: string; address: string; busy: boolean; onConfirm: () => void; onCancel: () => void }) {
  const confirm = useFocusOnMount<HTMLButtonElement>();
  return (
    <div class="confirm" role="group" aria-label="Confirm the withdrawal">
      <span>Send <strong class="num">{num(props.amount)} USDC</strong> to <span class="mono">{shortAddress(props.address)}</span>?</span>
      <div class="row gap">
        <button type="button" ref={confirm} class="sell" disabled={props.busy} onClick={props.onConfirm}>Confirm withdrawal</button>
        <button type="button" class="ghost" disabled={props.busy} onClick={props.onCancel}>Cancel</button>
      </div>
    </div>
  );
}
