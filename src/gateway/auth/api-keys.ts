/**
 * API keys: created, listed and revoked from a session only; sent as `x-api-key: <secret>`.
 *
 * Secret format `exk_<id>_<secret>`: a fixed prefix leak scanners can recognise, a public key id
 * (16 hex) used for lookup, and 256 random bits. Only SHA-256 of the whole secret is stored, and
 * the comparison is constant-time; an unknown id is compared against a dummy digest so that
 * unknown, altered and right-prefix-wrong-body keys take the same path (reliability.md 7.7).
 *
 * Status: `active`, `revoked`, `expired` (decisions.md). `allowedIps` pins the peer address (a
 * list of addresses or CIDR ranges; IPv4-mapped IPv6 is treated as IPv4). `lastUsedAt` is kept
 * in memory on every use and written to the store at most once a minute per key.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { normaliseIp } from '../client-network.ts';
import { apiError } from '../errors.ts';
import type { ApiKeyRecord, ApiKeyScope, ApiKeyStore } from './identity-store.ts';

export { normaliseIp };

export type ApiKeyStatus = 'active' | 'revoked' | 'expired';

export const API_KEY_LIMITS = {
  maxActivePerAccount: 20,
  /** Keys an account's list keeps, ended ones (revoked, expired) included: the oldest ended go first. */
  maxKeptPerAccount: 100,
  maxAllowedIps: 20,
  maxExpiresInDays: 365,
  lastUsedWriteIntervalMs: 60_000,
} as const;

const SECRET = /^exk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const DUMMY_HASH = createHash('sha256').update('exk_dummy').digest();

export interface ApiKeyView {
  readonly id: string;
  readonly name: string;
  readonly scope: ApiKeyScope;
  readonly allowedIps: readonly string[];
  readonly expiresAt: number | null;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
  readonly status: ApiKeyStatus;
}

export type KeyCheck =
  | { ok: true; key: ApiKeyRecord }
  | { ok: false; code: 'UNAUTHENTICATED' | 'IP_NOT_ALLOWED'; message: string };

interface KeyEntry {
  record: ApiKeyRecord;
  allow: BlockList | null;
  lastWrittenAt: number;
}

export class ApiKeys {
  private readonly byId = new Map<string, KeyEntry>();

  constructor(
    private readonly store: ApiKeyStore,
    private readonly now: () => number = Date.now,
  ) {
    for (const record of store.loadApiKeys()) {
      this.byId.set(record.id, { record, allow: blockListOf(record.allowedIps), lastWrittenAt: record.lastUsedAt ?? 0 });
    }
  }

  create(address: string, input: { name: string; scope: ApiKeyScope; allowedIps?: string[]; expiresInDays?: number }): {
    view: ApiKeyView;
    secret: string;
  } {
    const allowedIps = normaliseIpList(input.allowedIps ?? []);
    const keys = this.list(address);
    const active = keys.filter((k) => k.status === 'active').length;
    if (active >= API_KEY_LIMITS.maxActivePerAccount) {
      throw apiError('CONFLICT', `an account may hold at most ${API_KEY_LIMITS.maxActivePerAccount} active keys; revoke one first`);
    }
    this.forgetOldestEnded(keys);
    const id = randomBytes(8).toString('hex');
    const secret = `exk_${id}_${randomBytes(32).toString('base64url')}`;
    const createdAt = this.now();
    const record: ApiKeyRecord = {
      id,
      address,
      name: input.name,
      scope: input.scope,
      allowedIps,
      secretHash: createHash('sha256').update(secret).digest(),
      expiresAt: input.expiresInDays === undefined ? null : createdAt + input.expiresInDays * 86_400_000,
      createdAt,
      lastUsedAt: null,
      revokedAt: null,
    };
    this.store.insertApiKey(record);
    this.byId.set(id, { record, allow: blockListOf(allowedIps), lastWrittenAt: 0 });
    return { view: this.view(record), secret };
  }

  list(address: string): ApiKeyView[] {
    const out: ApiKeyView[] = [];
    for (const { record } of this.byId.values()) if (record.address === address) out.push(this.view(record));
    return out.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1));
  }

  /**
   * Makes room for one more key within `maxKeptPerAccount` by forgetting the account's oldest ended
   * keys (they authenticate nothing and only fill the list): a create and revoke loop would
   * otherwise grow memory and the database without bound. `keys`: the account's list, newest first.
   */
  private forgetOldestEnded(keys: readonly ApiKeyView[]): void {
    let excess = keys.length + 1 - API_KEY_LIMITS.maxKeptPerAccount;
    for (let i = keys.length - 1; i >= 0 && excess > 0; i--) {
      if (keys[i]!.status === 'active') continue;
      this.store.deleteApiKey(keys[i]!.id);
      this.byId.delete(keys[i]!.id);
      excess--;
    }
  }

  /** Revokes the caller's own key; another account's id is reported as not found. */
  revoke(address: string, id: string): ApiKeyView {
    const entry = this.byId.get(id);
    if (entry === undefined || entry.record.address !== address) throw apiError('NOT_FOUND', `API key ${id} not found`);
    if (entry.record.revokedAt === null) {
      const at = this.now();
      this.store.revokeApiKey(id, at);
      entry.record.revokedAt = at;
    }
    return this.view(entry.record);
  }

  /** Checks a presented secret and the peer address. Marks the key used on success. */
  authenticate(secret: string, peerIp: string): KeyCheck {
    const m = SECRET.exec(secret);
    const entry = m === null ? undefined : this.byId.get(m[1]!);
    const presented = createHash('sha256').update(secret).digest();
    const matches = timingSafeEqual(presented, entry?.record.secretHash ?? DUMMY_HASH) && entry !== undefined;
    if (!matches || entry === undefined) return { ok: false, code: 'UNAUTHENTICATED', message: 'API key is not valid' };
    const status = this.status(entry.record);
    if (status !== 'active') return { ok: false, code: 'UNAUTHENTICATED', message: `API key is ${status}` };
    if (entry.allow !== null && !allows(entry.allow, peerIp)) {
      return { ok: false, code: 'IP_NOT_ALLOWED', message: `requests from ${peerIp} are not allowed for this API key` };
    }
    this.markUsed(entry);
    return { ok: true, key: entry.record };
  }

  /** Whether a key is still usable (streams re-check this while open). */
  isActive(id: string): boolean {
    const entry = this.byId.get(id);
    return entry !== undefined && this.status(entry.record) === 'active';
  }

  private markUsed(entry: KeyEntry): void {
    const now = this.now();
    entry.record.lastUsedAt = now;
    if (now - entry.lastWrittenAt >= API_KEY_LIMITS.lastUsedWriteIntervalMs) {
      entry.lastWrittenAt = now;
      this.store.touchApiKey(entry.record.id, now);
    }
  }

  private status(record: ApiKeyRecord): ApiKeyStatus {
    if (record.revokedAt !== null) return 'revoked';
    if (record.expiresAt !== null && record.expiresAt <= this.now()) return 'expired';
    return 'active';
  }

  private view(record: ApiKeyRecord): ApiKeyView {
    return {
      id: record.id,
      name: record.name,
      scope: record.scope,
      allowedIps: record.allowedIps,
      expiresAt: record.expiresAt,
      createdAt: record.createdAt,
      lastUsedAt: record.lastUsedAt,
      status: this.status(record),
    };
  }
}

function normaliseIpList(list: readonly string[]): string[] {
  if (list.length > API_KEY_LIMITS.maxAllowedIps) {
    throw apiError('VALIDATION_ERROR', `allowedIps may list at most ${API_KEY_LIMITS.maxAllowedIps} entries`);
  }
  return list.map((entry) => {
    const [addr = '', bits, ...rest] = entry.split('/');
    const ip = normaliseIp(addr);
    const family = isIP(ip);
    const maxBits = family === 4 ? 32 : 128;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (family === 0 || !bitsOk || rest.length > 0) {
      throw apiError('VALIDATION_ERROR', `allowedIps entry ${JSON.stringify(entry)} is not an IP address or CIDR range`);
    }
    return bits === undefined ? ip : `${ip}/${bits}`;
  });
}

function blockListOf(entries: readonly string[]): BlockList | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const [ip = '', bits] = entry.split('/');
    const type = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(ip, type);
    else list.addSubnet(ip, Number(bits), type);
  }
  return list;
}

function allows(list: BlockList, peerIp: string): boolean {
  const ip = normaliseIp(peerIp);
  const family = isIP(ip);
  if (family === 0) return false;
  return list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}
