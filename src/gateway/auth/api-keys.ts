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
import { allOf, andThen, type ApiKeyRecord, type ApiKeyScope, type ApiKeyStore, type Maybe, type SharedIdentity } from './identity-store.ts';

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

/** Keys a shared store's read-through cache holds at most (the oldest read goes first). */
const SHARED_CACHE_MAX = 50_000;

/**
 * Over a store only this process writes (SQLite, the embedded mode) every key is loaded at start
 * and served from memory, each change written through: every answer is synchronous. Over a store
 * several gateways share (PostgreSQL, with `shared`), keys are read through: a key read within
 * `shared.keyTtlMs` (1 s) is served from memory unless its change notification arrived meanwhile,
 * an account's list and a revocation always read the store, so a key created or revoked on any
 * gateway holds on this one at once when notified and within the TTL if a notification is lost
 * (docs/architecture.md "Distributed mode: identity and rate budgets"). Answers are then promises
 * whenever the store is read.
 */
export class ApiKeys {
  private readonly byId = new Map<string, KeyEntry>();
  /** Shared store only: when each id, known or not, was last read from the store (monotonic ms). */
  private readonly readAt = new Map<string, number>();
  private readonly reading = new Map<string, Promise<KeyEntry | undefined>>();
  /** Shared store only: counts change notifications, so a read that raced one is not cached as fresh. */
  private changes = 0;
  private readonly unsubscribe: () => void = () => undefined;

  constructor(
    private readonly store: ApiKeyStore,
    private readonly now: () => number = Date.now,
    private readonly shared?: SharedIdentity,
    private readonly monotonic: () => number = () => performance.now(),
  ) {
    if (shared !== undefined) {
      this.unsubscribe = shared.subscribe((change) => {
        if (change.kind !== 'apiKey') return;
        this.changes++;
        this.readAt.delete(change.id);
        this.reading.delete(change.id);
      });
      return;
    }
    const all = store.loadApiKeys();
    if (all instanceof Promise) throw new Error('a store shared by several processes is read through: pass its SharedIdentity');
    for (const record of all) {
      this.byId.set(record.id, { record, allow: blockListOf(record.allowedIps), lastWrittenAt: record.lastUsedAt ?? 0 });
    }
  }

  /** Stops following the shared store's changes. */
  close(): void {
    this.unsubscribe();
  }

  create(address: string, input: { name: string; scope: ApiKeyScope; allowedIps?: string[]; expiresInDays?: number }): Maybe<{
    view: ApiKeyView;
    secret: string;
  }> {
    const allowedIps = normaliseIpList(input.allowedIps ?? []);
    return andThen(this.list(address), (keys) => {
      const active = keys.filter((k) => k.status === 'active').length;
      if (active >= API_KEY_LIMITS.maxActivePerAccount) {
        throw apiError('CONFLICT', `an account may hold at most ${API_KEY_LIMITS.maxActivePerAccount} active keys; revoke one first`);
      }
      return andThen(this.forgetOldestEnded(keys), () => {
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
        return andThen(this.store.insertApiKey(record), () => {
          this.remember(record, this.changes);
          return { view: this.view(record), secret };
        });
      });
    });
  }

  /** The account's keys, newest first (a shared store is read for them). */
  list(address: string): Maybe<ApiKeyView[]> {
    if (this.shared === undefined) {
      const out: ApiKeyView[] = [];
      for (const { record } of this.byId.values()) if (record.address === address) out.push(this.view(record));
      return sortNewestFirst(out);
    }
    const changes = this.changes;
    return andThen(this.store.apiKeysOf(address), (records) =>
      sortNewestFirst(records.map((record) => this.view(this.remember(record, changes).record))));
  }

  /**
   * Makes room for one more key within `maxKeptPerAccount` by forgetting the account's oldest ended
   * keys (they authenticate nothing and only fill the list): a create and revoke loop would
   * otherwise grow memory and the database without bound. `keys`: the account's list, newest first.
   */
  private forgetOldestEnded(keys: readonly ApiKeyView[]): Maybe<void> {
    let excess = keys.length + 1 - API_KEY_LIMITS.maxKeptPerAccount;
    const deletes: Maybe<void>[] = [];
    for (let i = keys.length - 1; i >= 0 && excess > 0; i--) {
      if (keys[i]!.status === 'active') continue;
      deletes.push(this.store.deleteApiKey(keys[i]!.id));
      this.byId.delete(keys[i]!.id);
      this.readAt.delete(keys[i]!.id);
      excess--;
    }
    return allOf(deletes);
  }

  /** Revokes the caller's own key; another account's id is reported as not found. */
  revoke(address: string, id: string): Maybe<ApiKeyView> {
    const current = this.shared === undefined ? this.byId.get(id) : this.read(id);
    return andThen(current, (entry) => {
      if (entry === undefined || entry.record.address !== address) throw apiError('NOT_FOUND', `API key ${id} not found`);
      if (entry.record.revokedAt !== null) return this.view(entry.record);
      const at = this.now();
      return andThen(this.store.revokeApiKey(id, at), () => {
        entry.record.revokedAt = at;
        return this.view(entry.record);
      });
    });
  }

  /** Checks a presented secret and the peer address. Marks the key used on success. */
  authenticate(secret: string, peerIp: string): Maybe<KeyCheck> {
    const id = SECRET.exec(secret)?.[1];
    return andThen(id === undefined ? undefined : this.entry(id), (entry) => this.check(entry, secret, peerIp));
  }

  private check(entry: KeyEntry | undefined, secret: string, peerIp: string): KeyCheck {
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
  isActive(id: string): Maybe<boolean> {
    return andThen(this.entry(id), (entry) => entry !== undefined && this.status(entry.record) === 'active');
  }

  /** The key as this process may serve it: from memory, or read from a shared store once its TTL is up. */
  private entry(id: string): Maybe<KeyEntry | undefined> {
    if (this.shared === undefined) return this.byId.get(id);
    const at = this.readAt.get(id);
    if (at !== undefined && this.monotonic() - at < this.shared.keyTtlMs) return this.byId.get(id);
    return this.read(id);
  }

  /** Reads a key from the shared store (one read at a time per id, whoever asks). */
  private read(id: string): Promise<KeyEntry | undefined> {
    const pending = this.reading.get(id);
    if (pending !== undefined) return pending;
    const changes = this.changes;
    const read = Promise.resolve(this.store.apiKey(id)).then(
      (record) => {
        if (this.reading.get(id) === read) this.reading.delete(id);
        if (record !== undefined) return this.remember(record, changes);
        this.byId.delete(id);
        this.stamp(id, changes);
        return undefined;
      },
      (error: unknown) => {
        if (this.reading.get(id) === read) this.reading.delete(id);
        throw error;
      },
    );
    this.reading.set(id, read);
    return read;
  }

  /**
   * Keeps a key read from (or written to) the store, with the later of the two last uses known.
   * `changes`: the notification count when the read began; a read that raced a notification is
   * served but not trusted for the TTL.
   */
  private remember(record: ApiKeyRecord, changes: number): KeyEntry {
    const known = this.byId.get(record.id);
    const lastUsedAt = Math.max(record.lastUsedAt ?? 0, known?.record.lastUsedAt ?? 0);
    const entry: KeyEntry = {
      record: { ...record, lastUsedAt: lastUsedAt === 0 ? null : lastUsedAt },
      allow: blockListOf(record.allowedIps),
      lastWrittenAt: Math.max(record.lastUsedAt ?? 0, known?.lastWrittenAt ?? 0),
    };
    this.byId.delete(record.id);
    this.byId.set(record.id, entry);
    this.stamp(record.id, changes);
    return entry;
  }

  /** Marks an id read now (shared store), unless a notification arrived since `changes`; bounds the cache. */
  private stamp(id: string, changes: number): void {
    if (this.shared === undefined) return;
    this.readAt.delete(id);
    if (changes === this.changes) this.readAt.set(id, this.monotonic());
    while (this.readAt.size > SHARED_CACHE_MAX) {
      const oldest = this.readAt.keys().next().value as string;
      this.readAt.delete(oldest);
      this.byId.delete(oldest);
    }
    while (this.byId.size > SHARED_CACHE_MAX) this.byId.delete(this.byId.keys().next().value as string);
  }

  private markUsed(entry: KeyEntry): void {
    const now = this.now();
    entry.record.lastUsedAt = now;
    if (now - entry.lastWrittenAt >= API_KEY_LIMITS.lastUsedWriteIntervalMs) {
      entry.lastWrittenAt = now;
      // The last use is advisory: a shared store's failed write is not the request's failure.
      const written = this.store.touchApiKey(entry.record.id, now);
      if (written instanceof Promise) written.catch(() => undefined);
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

function sortNewestFirst(views: ApiKeyView[]): ApiKeyView[] {
  return views.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1));
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
