/**
 * The account's API keys (GET/POST /perps/me/api-keys, DELETE /perps/me/api-keys/{id}; a signed-in
 * session only): create one with a scope (read, or trade), an optional IP pin (addresses or CIDR
 * ranges) and an optional expiry; its secret is shown once, in a marked box with a copy button,
 * held only by this component until dismissed (never stored); list the keys; revoke one after a
 * confirmation (it stops working at once, open streams included).
 */
import { useId, useState } from 'preact/hooks';
import type { ApiKeyInput, ExchangeClient, ResponseOf } from '../../../../sdk/src/index.ts';
import { dateTime } from '../../lib/format.ts';
import { notify } from '../../lib/notify.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { CopyButton } from './copy-button.tsx';
import { useAction, useFocusOnMount } from './use-action.ts';

type ApiKey = ResponseOf<'/perps/me/api-keys', 'get'>[number];
type CreatedKey = ResponseOf<'/perps/me/api-keys', 'post'>;

export function ApiKeys(props: { client: ExchangeClient; address: string }) {
  const [keys, read] = usePoll(() => props.client.apiKeys(), 30_000, props.address);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  return (
    <section class="panel api-keys" aria-label="API keys">
      <h2>API keys</h2>
      <p class="muted small-note">
        A key lets a program act for this account with the header <code>x-api-key</code>: scope “read” covers market data and account reads, “trade” adds order actions. The wallet (balances, transfers, withdrawals, history) and key management need a signed-in session, never a key.
      </p>
      <div class="api-keys-body">
        <CreateKeyForm client={props.client} onCreated={(k) => {
          setCreated(k);
          read();
        }} />
        <div class="api-keys-list">
          {created !== null && <SecretBox created={created} onDone={() => setCreated(null)} />}
          <KeyList keys={keys} client={props.client} onRevoked={read} />
        </div>
      </div>
    </section>
  );
}

/** "10.0.0.1, 192.168.0.0/24" -> ["10.0.0.1", "192.168.0.0/24"]; the service checks each one. */
function ipList(text: string): string[] {
  return text.split(/[\s,]+/).filter((ip) => ip !== '');
}

function CreateKeyForm(props: { client: ExchangeClient; onCreated: (key: CreatedKey) => void }) {
  const [name, setName] = useState('');
  const [scope, setScope] = useState<ApiKeyInput['scope']>('read');
  const [ips, setIps] = useState('');
  const [days, setDays] = useState('30');
  const [busy, run] = useAction();
  const scopeId = useId();
  const submit = async (e: Event) => {
    e.preventDefault();
    const allowedIps = ipList(ips);
    const input: ApiKeyInput = {
      name: name.trim(),
      scope,
      ...(allowedIps.length > 0 ? { allowedIps } : {}),
      ...(days.trim() !== '' ? { expiresInDays: Number(days) } : {}),
    };
    await run('creating the API key', async () => {
      const key = await props.client.createApiKey(input);
      props.onCreated(key);
      setName('');
      notify('ok', `API key “${key.name}” created: copy its secret now`);
    });
  };
  return (
    <form class="key-form" onSubmit={submit} aria-label="Create an API key">
      <h3>New key</h3>
      <label>
        Name
        <input name="key-name" required maxLength={64} autocomplete="off" placeholder="e.g. trading bot" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <div class="field">
        <label for={scopeId}>Scope</label>
        <select id={scopeId} name="key-scope" value={scope} onChange={(e) => setScope(e.currentTarget.value as ApiKeyInput['scope'])}>
          <option value="read">read: market data and account reads</option>
          <option value="trade">trade: read, and order actions</option>
        </select>
      </div>
      <label>
        Allowed IPs (optional, comma separated; addresses or CIDR ranges)
        <input name="key-ips" autocomplete="off" placeholder="any address" value={ips} onInput={(e) => setIps(e.currentTarget.value)} />
      </label>
      <label>
        Expires after (days, 1 to 365; empty: never)
        <input name="key-days" type="number" min={1} max={365} step={1} inputMode="numeric" placeholder="never" value={days} onInput={(e) => setDays(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={busy}>Create key</button>
    </form>
  );
}

function SecretBox(props: { created: CreatedKey; onDone: () => void }) {
  const { created } = props;
  return (
    <div class="secret-box" role="alert" data-testid="api-key-secret">
      <strong>Secret of “{created.name}”: shown once</strong>
      <p>{created.message} This page does not keep it: once you close this box, it is gone.</p>
      <div class="secret-line">
        <code id="api-key-secret" class="mono">{created.secret}</code>
        <CopyButton text={created.secret} what="API key secret" target="api-key-secret" />
      </div>
      <button type="button" class="ghost small" onClick={props.onDone}>I have stored it: hide the secret</button>
    </div>
  );
}

function KeyList(props: { keys: readonly ApiKey[] | null; client: ExchangeClient; onRevoked: () => void }) {
  const [confirming, setConfirming] = useState<string | null>(null);
  const [busy, run] = useAction();
  const revoke = async (key: ApiKey) => {
    await run(`revoking the API key “${key.name}”`, async () => {
      await props.client.revokeApiKey(key.id);
      notify('ok', `API key “${key.name}” revoked: it no longer works`);
    });
    setConfirming(null);
    props.onRevoked();
  };
  if (props.keys !== null && props.keys.length === 0) return <p class="muted small-note">No API key yet.</p>;
  return (
    <div class="table-scroll">
      <table class="grid" data-testid="api-key-list">
        <thead>
          <tr><th>Name</th><th>Id</th><th>Scope</th><th>Allowed IPs</th><th>Expires (UTC)</th><th>Last used (UTC)</th><th>Status</th><th><span class="sr-only">Action</span></th></tr>
        </thead>
        <tbody>
          {(props.keys ?? []).map((k) => (
            <tr key={k.id} data-key-id={k.id}>
              <td class="strong">{k.name}</td>
              <td class="mono muted">{k.id}</td>
              <td>{k.scope}</td>
              <td>{k.allowedIps.length === 0 ? <span class="muted">any</span> : k.allowedIps.join(', ')}</td>
              <td>{k.expiresAt === null ? 'never' : dateTime(k.expiresAt)}</td>
              <td>{dateTime(k.lastUsedAt)}</td>
              <td><span class={`status ${k.status}`}>{k.status}</span></td>
              <td>
                {k.status !== 'active' ? null : confirming === k.id ? (
                  <ConfirmRevoke name={k.name} busy={busy} onConfirm={() => revoke(k)} onCancel={() => setConfirming(null)} />
                ) : (
                  <button type="button" class="ghost small" onClick={() => setConfirming(k.id)} aria-label={`Revoke ${k.name}`}>Revoke…</button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ConfirmRevoke(props: { name: string; busy: boolean; onConfirm: () => void; onCancel: () => void }) {
  const confirm = useFocusOnMount<HTMLButtonElement>();
  return (
    <span class="row gap" role="group" aria-label={`Confirm revoking ${props.name}`}>
      <button type="button" ref={confirm} class="sell small" disabled={props.busy} onClick={props.onConfirm}>Revoke for good</button>
      <button type="button" class="ghost small" disabled={props.busy} onClick={props.onCancel}>Keep</button>
    </span>
  );
}
