/**
 * Sign-In with Ethereum (EIP-4361), verified offline. viem parses the message and recovers the
 * signer; every check is ours, because the library only checks what it is handed
 * (research/reliability.md 5.2):
 *   - the message is at most 4 KiB, LF-only, and re-serialises to exactly the signed text (no
 *     extra lines, no reordered or duplicated fields);
 *   - domain, scheme and URI origin equal PUBLIC_ORIGIN; version is 1; chain id is CHAIN_ID;
 *   - the address is EIP-55 checksummed and is the address the nonce was issued to;
 *   - the nonce was issued by us, is unexpired (5 minutes) and is consumed by this attempt,
 *     whether it succeeds or not (one atomic DELETE ... RETURNING, so concurrent submits of the
 *     same message yield exactly one session);
 *   - issued-at is a valid time, not in the future and not before the nonce was issued (30 s of
 *     clock skew allowed); expiration time, if any, is in the future; not-before, if any, has passed;
 *   - the signature recovers to the message's address.
 */
import { randomInt } from 'node:crypto';
import { getAddress, isAddress, recoverMessageAddress, type Hex } from 'viem';
import { createSiweMessage, parseSiweMessage } from 'viem/siwe';
import { apiError } from '../errors.ts';
import { andThen, type Maybe, type NonceStore } from './identity-store.ts';

export const NONCE_TTL_MS = 5 * 60_000;
const MAX_MESSAGE_BYTES = 4096;
const CLOCK_SKEW_MS = 30_000;
const NONCE_LENGTH = 24; // base62: ~143 bits
const MAX_OUTSTANDING_NONCES = 20;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export interface SiweSettings {
  readonly publicOrigin: string;
  readonly chainId: number;
}

export class SiweVerifier {
  private readonly expectedDomain: string;
  private readonly expectedScheme: string;

  constructor(
    private readonly store: NonceStore,
    private readonly settings: SiweSettings,
    private readonly now: () => number = Date.now,
  ) {
    const origin = new URL(settings.publicOrigin);
    this.expectedDomain = origin.host;
    this.expectedScheme = origin.protocol.slice(0, -1);
  }

  /**
   * Issues a single-use nonce bound to `walletAddress` (any case). At most 20 are outstanding per
   * address and requester (the client's IP): counted per address alone, anyone could ask for 20 of
   * a victim's nonces and lock the victim out of sign-in for their lifetime.
   */
  issueNonce(walletAddress: string, requester: string): Maybe<{ nonce: string; expiresAt: number }> {
    if (!isAddress(walletAddress, { strict: false })) throw apiError('VALIDATION_ERROR', 'walletAddress must be a 0x address');
    const address = walletAddress.toLowerCase();
    let nonce = '';
    for (let i = 0; i < NONCE_LENGTH; i++) nonce += ALPHABET[randomInt(ALPHABET.length)];
    const issuedAt = this.now();
    const expiresAt = issuedAt + NONCE_TTL_MS;
    // Count after adding: addNonce prunes expired nonces first, so only live ones count (counting
    // before it let expired nonces lock an address out until some other address asked for one).
    return andThen(this.store.addNonce({ nonce, address, issuedAt, expiresAt }, requester), () =>
      andThen(this.store.outstandingNonces(address, requester), (outstanding) => {
        if (outstanding <= MAX_OUTSTANDING_NONCES) return { nonce, expiresAt };
        return andThen(this.store.takeNonce(nonce), () => {
          throw apiError('RATE_LIMITED', 'too many outstanding sign-in nonces for this address; use one or wait 5 minutes');
        });
      }));
  }

  /** Verifies a signed message; returns the signer's lower-case address or throws 400/401. */
  async verify(message: string, signature: string): Promise<string> {
    if (Buffer.byteLength(message) > MAX_MESSAGE_BYTES) throw apiError('VALIDATION_ERROR', 'message is longer than 4096 bytes');
    if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) throw apiError('UNAUTHENTICATED', 'signature must be 65 bytes of hex');
    const fields = parseSiweMessage(message);
    if (typeof fields.nonce !== 'string') throw apiError('UNAUTHENTICATED', 'message is not an EIP-4361 sign-in message');
    // Burn the nonce first: a nonce that took part in a failed attempt is never usable again.
    const nonce = await this.store.takeNonce(fields.nonce);
    const now = this.now();
    if (nonce === undefined || nonce.expiresAt <= now) throw deny('nonce is unknown, used or expired');
    this.checkFields(message, fields, nonce.address, nonce.issuedAt, now);
    let signer: string;
    try {
      signer = await recoverMessageAddress({ message, signature: signature as Hex });
    } catch {
      throw deny('signature is invalid');
    }
    if (signer.toLowerCase() !== nonce.address) throw deny('signature does not match the message address');
    return nonce.address;
  }

  private checkFields(
    message: string,
    f: ReturnType<typeof parseSiweMessage>,
    nonceAddress: string,
    nonceIssuedAt: number,
    now: number,
  ): void {
    if (message.includes('\r')) throw deny('message must use LF line endings');
    if (f.domain !== this.expectedDomain) throw deny(`domain must be ${this.expectedDomain}`);
    if (f.scheme !== undefined && f.scheme !== this.expectedScheme) throw deny(`scheme must be ${this.expectedScheme}`);
    if (typeof f.uri !== 'string' || originOf(f.uri) !== this.settings.publicOrigin) {
      throw deny(`uri must be on ${this.settings.publicOrigin}`);
    }
    if (f.version !== '1') throw deny('version must be 1');
    if (f.chainId !== this.settings.chainId) throw deny(`chain id must be ${this.settings.chainId}`);
    if (typeof f.address !== 'string' || !isAddress(f.address, { strict: true }) || getAddress(f.address) !== f.address) {
      throw deny('address must be an EIP-55 checksummed address');
    }
    if (f.address.toLowerCase() !== nonceAddress) throw deny('nonce was issued to a different address');
    const issuedAt = validTime(f.issuedAt, 'issued-at');
    if (issuedAt > now + CLOCK_SKEW_MS) throw deny('issued-at is in the future');
    if (issuedAt < nonceIssuedAt - CLOCK_SKEW_MS) throw deny('issued-at is before the nonce was issued');
    if (f.expirationTime !== undefined && validTime(f.expirationTime, 'expiration time') <= now) {
      throw deny('message has expired');
    }
    if (f.notBefore !== undefined && validTime(f.notBefore, 'not-before') > now + CLOCK_SKEW_MS) {
      throw deny('message is not valid yet (not-before)');
    }
    if (canonical(message, f) !== message) throw deny('message has unexpected or malformed lines');
  }
}

function deny(reason: string) {
  return apiError('UNAUTHENTICATED', `sign-in refused: ${reason}`);
}

function validTime(value: unknown, name: string): number {
  const t = value instanceof Date ? value.getTime() : Number.NaN;
  if (!Number.isFinite(t)) throw deny(`${name} is not a valid time`);
  return t;
}

function originOf(uri: string): string | null {
  try {
    return new URL(uri).origin;
  } catch {
    return null;
  }
}

/**
 * Re-serialises the parsed fields. Dates are put back exactly as the signer wrote them, since
 * RFC 3339 allows several spellings of one instant and the signature covers the spelling.
 */
function canonical(message: string, f: ReturnType<typeof parseSiweMessage>): string {
  let text: string;
  try {
    text = createSiweMessage(f as Parameters<typeof createSiweMessage>[0]);
  } catch {
    return '';
  }
  for (const label of ['Issued At', 'Expiration Time', 'Not Before']) {
    const original = new RegExp(`^${label}: (.*)$`, 'm').exec(message)?.[1];
    if (original !== undefined) text = text.replace(new RegExp(`^${label}: .*$`, 'm'), `${label}: ${original}`);
  }
  return text;
}
