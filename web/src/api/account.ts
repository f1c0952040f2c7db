/**
 * Who is signed in, and the SDK clients the screens call: `market` (anonymous, market data) and
 * `account.client` (the signed-in trader). Two ways in:
 *   - a browser wallet (EIP-1193 injected provider, window.ethereum) signs the SIWE message; the
 *     session (bearer token, 24 h) is kept in localStorage so a reload does not ask again;
 *   - a local key, generated here and kept in this browser's localStorage, for local use only
 *     (anyone with access to this browser profile holds the key): labelled so everywhere.
 */
import { createWalletClient, custom, type EIP1193Provider, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ExchangeClient, type Session, type SiweSigner } from '../../../sdk/src/index.ts';
import { Store } from '../lib/store.ts';

export type SignInKind = 'local' | 'wallet';

export interface Account {
  readonly kind: SignInKind;
  readonly address: string;
  readonly client: ExchangeClient;
}

const LOCAL_KEY = 'exchange.localKey';
const SESSION = 'exchange.session';
const KIND = 'exchange.signIn';

const baseUrl = location.origin;
/** A screen says what failed rather than waiting long: one retry, and no Retry-After wait over 5 s. */
const UI_RETRY = { maxAttempts: 2, maxRetryDelayMs: 5_000 };
/** Market data needs no credentials. */
export const market = new ExchangeClient({ baseUrl, retry: UI_RETRY });
export const account = new Store<Account | null>(null);

function keep(session: Session): void {
  localStorage.setItem(SESSION, JSON.stringify(session));
}

function storedSession(address: string): Session | undefined {
  try {
    const s = JSON.parse(localStorage.getItem(SESSION) ?? 'null') as Session | null;
    if (s !== null && s.walletAddress.toLowerCase() === address.toLowerCase() && s.expiresAt > Date.now() + 60_000) return s;
  } catch {
    // a session this build cannot read is simply not reused
  }
  return undefined;
}

async function open(kind: SignInKind, signer: SiweSigner): Promise<Account> {
  const client = new ExchangeClient({ baseUrl, signer, session: storedSession(signer.address), onSession: keep, retry: UI_RETRY });
  if (client.currentSession === null) await client.signIn();
  localStorage.setItem(KIND, kind);
  const signed = { kind, address: signer.address, client };
  account.set(signed);
  return signed;
}

/** The local key of this browser (created on first use). */
export function localKey(): Hex {
  let key = localStorage.getItem(LOCAL_KEY) as Hex | null;
  if (key === null || !/^0x[0-9a-f]{64}$/i.test(key)) {
    key = generatePrivateKey();
    localStorage.setItem(LOCAL_KEY, key);
  }
  return key;
}

export function signInLocal(): Promise<Account> {
  return open('local', privateKeyToAccount(localKey()));
}

interface InjectedWindow {
  ethereum?: EIP1193Provider;
}

export function hasBrowserWallet(): boolean {
  return (window as InjectedWindow).ethereum !== undefined;
}

export async function signInWallet(): Promise<Account> {
  const provider = (window as InjectedWindow).ethereum;
  if (provider === undefined) throw new Error('no browser wallet found (EIP-1193 window.ethereum)');
  const wallet = createWalletClient({ transport: custom(provider) });
  const [address] = await wallet.requestAddresses();
  if (address === undefined) throw new Error('the wallet shared no account');
  return open('wallet', { address, signMessage: ({ message }) => wallet.signMessage({ account: address, message }) });
}

export async function signOut(): Promise<void> {
  const current = account.value;
  account.set(null);
  localStorage.removeItem(SESSION);
  localStorage.removeItem(KIND);
  await current?.client.logout().catch(() => undefined);
}

/** Signs in again as last time, without a prompt: the local key, or the wallet's stored session. */
export async function resume(): Promise<void> {
  const kind = localStorage.getItem(KIND);
  if (kind === 'local') await signInLocal();
  else if (kind === 'wallet' && hasBrowserWallet()) {
    const provider = (window as InjectedWindow).ethereum!;
    const accounts = (await provider.request({ method: 'eth_accounts' })) as string[];
    const address = accounts[0];
    if (address !== undefined && storedSession(address) !== undefined) await signInWallet();
  }
}
