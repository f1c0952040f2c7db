/**
 * Sign-In with Ethereum for the SDK: who signs (a private key, any viem local account, or a viem
 * wallet client with an account, e.g. a browser wallet over JSON-RPC) and the session that comes
 * back. The EIP-4361 message is built from what POST /auth/nonce answers (domain, uri, chainId,
 * nonce), so the client never guesses the service's origin or chain.
 */
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';

/** Anything that can sign an EIP-191 personal message for an address. */
export interface SiweSigner {
  readonly address: Hex;
  signMessage(args: { message: string }): Promise<Hex>;
}

/** A viem WalletClient (or anything shaped like one) that holds its account. */
export interface WalletClientLike {
  readonly account: { readonly address: Hex } | undefined;
  signMessage(args: { account?: never; message: string }): Promise<Hex>;
}

export type SignerInput = Hex | SiweSigner | WalletClientLike;

export function toSigner(input: SignerInput): SiweSigner {
  if (typeof input === 'string') {
    if (!/^0x[0-9a-fA-F]{64}$/.test(input)) throw new TypeError('a private key is 0x and 64 hex digits');
    return privateKeyToAccount(input);
  }
  if ('address' in input && typeof input.address === 'string') return input;
  const client = input as WalletClientLike;
  const account = client.account;
  if (account === undefined) throw new TypeError('the wallet client has no account to sign with');
  return { address: account.address, signMessage: ({ message }) => client.signMessage({ message }) };
}

/** What POST /auth/nonce answers. */
export interface NonceReply {
  readonly nonce: string;
  readonly domain: string;
  readonly uri: string;
  readonly chainId: number;
}

export function siweMessage(signer: SiweSigner, nonce: NonceReply, statement: string, now = new Date()): string {
  return createSiweMessage({
    domain: nonce.domain,
    uri: nonce.uri,
    chainId: nonce.chainId,
    nonce: nonce.nonce,
    address: signer.address,
    version: '1',
    issuedAt: now,
    statement,
  });
}

/** A session: its bearer token and when it expires (Unix ms). */
export interface Session {
  readonly token: string;
  readonly walletAddress: string;
  readonly expiresAt: number;
}
