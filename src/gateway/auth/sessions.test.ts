/**
 * Unit tests of session tokens (research/reliability.md 5.3 and 7.6, RFC 8725): Sessions over a
 * real AuthStore on a temporary SQLite file with a fake clock. Forged and bent tokens are built
 * by hand (base64url edits) or signed with jose directly; a control token signed the same way
 * with every claim right must verify, so each refusal is caused by the one thing that differs.
 * Revocation is checked across a new Sessions instance over a reopened database (a restart).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, type JWTPayload } from 'jose';
import { AuthStore } from '../../adapters/store/auth-store.ts';
import { openDatabase, type Db } from '../../adapters/store/database.ts';
import { SESSION_TTL_MS, Sessions } from './sessions.ts';

const SECRET = Buffer.alloc(32, 0x5a);
const OTHER_SECRET = Buffer.alloc(32, 0x33);
const ISSUER = 'http://exchange.test';
const AUDIENCE = 'exchange:session';
const TYP = 'session+jwt';
const ADDRESS = `0x${'ab'.repeat(20)}`;
const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);
const T0S = T0 / 1000;

let dir: string;
let dbPath: string;
let db: Db;
let store: AuthStore;
let now = T0;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sessions-unit-'));
  dbPath = join(dir, 'auth.sqlite');
  db = openDatabase(dbPath);
  store = new AuthStore(db);
});

after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A Sessions instance with an empty verification cache. */
const sessions = () => new Sessions(store, SECRET, ISSUER, () => now);

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const parts = (token: string) => token.split('.') as [string, string, string];
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The base64url character after the last one of `s` (same 4 data bits when the last is canonical). */
const next = (s: string) => B64URL[B64URL.indexOf(s.at(-1)!) + 1]!;
const decode = (segment: string) =>
  JSON.parse(Buffer.from(segment, 'base64url').toString()) as Record<string, unknown>;

interface Craft {
  header?: Record<string, unknown>;
  claims?: JWTPayload;
  omit?: readonly string[];
  secret?: Uint8Array;
}

/** Signs a token with jose: our claims by default, with overrides and omissions. */
async function craft(options: Craft = {}): Promise<string> {
  const claims: JWTPayload = {
    sub: ADDRESS,
    iss: ISSUER,
    aud: AUDIENCE,
    iat: T0S,
    exp: T0S + SESSION_TTL_MS / 1000,
    jti: 'jti-crafted-0001',
    ...options.claims,
  };
  for (const name of options.omit ?? []) delete claims[name];
  const header = { alg: 'HS256', typ: TYP, ...options.header };
  return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(options.secret ?? SECRET);
}

describe('a valid token', () => {
  test('an issued token verifies to its address, jti and 7-day expiry', async () => {
    now = T0;
    const { token, expiresAt } = await sessions().issue(ADDRESS);
    assert.equal(expiresAt, T0 + SESSION_TTL_MS);
    const session = await sessions().verify(token);
    assert.equal(session?.address, ADDRESS);
    assert.equal(session?.expiresAt, expiresAt);
    assert.match(session?.jti ?? '', /^[A-Za-z0-9_-]{22}$/);
    assert.deepEqual(decode(parts(token)[0]), { alg: 'HS256', typ: TYP });
  });

  test('a hand-crafted token with every claim right (control) verifies', async () => {
    now = T0;
    const session = await sessions().verify(await craft());
    assert.equal(session?.address, ADDRESS);
  });
});

describe('forged, bent and expired tokens verify to null', () => {
  const cases: [name: string, token: () => Promise<string>][] = [
    [
      'alg none with the signature removed',
      async () => {
        const [, payload] = parts(await sessions().issue(ADDRESS).then((t) => t.token));
        return `${b64({ alg: 'none', typ: TYP })}.${payload}.`;
      },
    ],
    [
      'alg none keeping the old signature',
      async () => {
        const [, payload, signature] = parts((await sessions().issue(ADDRESS)).token);
        return `${b64({ alg: 'none', typ: TYP })}.${payload}.${signature}`;
      },
    ],
    ['alg HS512 signed with the same secret', () => craft({ header: { alg: 'HS512' } })],
    ['alg HS384 signed with the same secret', () => craft({ header: { alg: 'HS384' } })],
    ['HS256 signed with another 32-byte secret', () => craft({ secret: OTHER_SECRET })],
    [
      'the payload sub edited, old signature kept',
      async () => {
        const [header, payload, signature] = parts((await sessions().issue(ADDRESS)).token);
        const edited = { ...decode(payload), sub: `0x${'cd'.repeat(20)}` };
        return `${header}.${b64(edited)}.${signature}`;
      },
    ],
    [
      'the payload exp extended, old signature kept',
      async () => {
        const [header, payload, signature] = parts((await sessions().issue(ADDRESS)).token);
        const edited = { ...decode(payload), exp: (decode(payload).exp as number) + 365 * 86_400 };
        return `${header}.${b64(edited)}.${signature}`;
      },
    ],
    ['a wrong issuer', () => craft({ claims: { iss: 'http://evil.example' } })],
    ['a wrong audience', () => craft({ claims: { aud: 'exchange:api-key' } })],
    ['a wrong typ header', () => craft({ header: { typ: 'JWT' } })],
    ['no typ header', () => craft({ header: { typ: undefined } })],
    ['no exp claim', () => craft({ omit: ['exp'] })],
    ['no jti claim', () => craft({ omit: ['jti'] })],
    ['no sub claim', () => craft({ omit: ['sub'] })],
    ['no iat claim', () => craft({ omit: ['iat'] })],
    ['a not-before an hour ahead', () => craft({ claims: { nbf: T0S + 3600 } })],
    ['an exp already past', () => craft({ claims: { exp: T0S - 1 } })],
    ['a sub that is not a lower-case address', () => craft({ claims: { sub: `0x${'AB'.repeat(20)}` } })],
    ['a sub that is not an address', () => craft({ claims: { sub: 'admin' } })],
    ['an empty string', async () => ''],
    ['garbage', async () => 'not.a.jwt'],
    ['a token over 2048 characters', () => craft({ claims: { pad: 'x'.repeat(2100) } })],
  ];
  for (const [name, make] of cases) {
    test(`a token with ${name}`, async () => {
      now = T0;
      assert.equal(await sessions().verify(await make()), null);
    });
  }
});

describe('only the one canonical spelling of a token verifies', () => {
  const variants: [name: string, bend: (h: string, p: string, s: string) => string][] = [
    ['a padded signature', (h, p, s) => `${h}.${p}.${s}=`],
    ['a doubly padded signature', (h, p, s) => `${h}.${p}.${s}==`],
    ['a padded payload', (h, p, s) => `${h}.${p}=.${s}`],
    ['a space inside the signature', (h, p, s) => `${h}.${p}.${s.slice(0, 5)} ${s.slice(5)}`],
    ['a trailing newline', (h, p, s) => `${h}.${p}.${s}\n`],
    ['a leading space', (h, p, s) => ` ${h}.${p}.${s}`],
    ['standard base64 in the signature', (h, p, s) => `${h}.${p}.${s.replace(/-/g, '+').replace(/_/g, '/')}`],
    // 43 characters carry 258 bits for a 256-bit HMAC: the last character's low 2 bits are unused.
    ['a non-canonical last signature character', (h, p, s) => `${h}.${p}.${s.slice(0, -1)}${next(s)}`],
    ['a trailing dot', (h, p, s) => `${h}.${p}.${s}.`],
  ];
  for (const [name, bend] of variants) {
    test(`a token with ${name} verifies to null`, async () => {
      now = T0;
      // Pick a token whose signature has both '-' or '_' and a last character with a flippable bit.
      let token = '';
      for (let i = 0; i < 64; i++) {
        token = (await sessions().issue(ADDRESS)).token;
        const sig = parts(token)[2];
        if (/[-_]/.test(sig) && /[AEIMQUYcgkosw048]$/.test(sig)) break;
      }
      const [h, p, s] = parts(token);
      const bent = bend(h, p, s);
      assert.notEqual(bent, token);
      assert.equal(await sessions().verify(bent), null);
      assert.equal((await sessions().verify(token))?.address, ADDRESS);
    });
  }
});

describe('expiry', () => {
  test('a token is valid 1 s before 7 days and refused 1 s after, cached or not', async () => {
    now = T0;
    const cachedSessions = sessions();
    const { token } = await cachedSessions.issue(ADDRESS);
    now = T0 + SESSION_TTL_MS - 1000;
    assert.equal((await sessions().verify(token))?.address, ADDRESS);
    assert.equal((await cachedSessions.verify(token))?.address, ADDRESS);
    now = T0 + SESSION_TTL_MS + 1000;
    assert.equal(await sessions().verify(token), null);
    assert.equal(await cachedSessions.verify(token), null);
  });
});

describe('revocation', () => {
  test('a revoked token is refused by the same instance and by a new one', async () => {
    now = T0;
    const live = sessions();
    const { token } = await live.issue(ADDRESS);
    const other = await live.issue(ADDRESS);
    const session = await live.verify(token);
    assert.ok(session !== null);
    live.revoke(session);
    assert.equal(await live.verify(token), null);
    assert.equal(await sessions().verify(token), null);
    assert.equal((await live.verify(other.token))?.address, ADDRESS, 'revocation is per token');
  });

  test('a revoked token is still refused after the database is reopened (restart)', async () => {
    now = T0;
    const { token } = await sessions().issue(ADDRESS);
    const kept = await sessions().issue(ADDRESS);
    const first = sessions();
    first.revoke((await first.verify(token))!);
    db.close();
    db = openDatabase(dbPath);
    store = new AuthStore(db);
    const restarted = sessions();
    assert.equal(await restarted.verify(token), null);
    assert.equal((await restarted.verify(kept.token))?.address, ADDRESS);
  });

  test('prune forgets revocations once their token expired, in memory and in the store; live ones stay', async () => {
    now = T0;
    const live = sessions();
    const early = await live.issue(ADDRESS);
    now = T0 + 3_600_000;
    const late = await live.issue(ADDRESS);
    live.revoke((await live.verify(early.token))!);
    live.revoke((await live.verify(late.token))!);
    const count = () => (db.prepare('SELECT COUNT(*) AS n FROM revoked_sessions WHERE jti IN (?, ?)').get(
      decode(parts(early.token)[1]).jti, decode(parts(late.token)[1]).jti) as { n: number }).n;
    assert.equal(count(), 2);
    now = T0 + SESSION_TTL_MS + 1_000; // the first token has expired, the second not yet
    assert.ok(live.revokedCount() >= 2);
    live.prune();
    assert.equal(live.revokedCount(), 1, 'only the revocation of the token still live is kept');
    assert.equal(count(), 1);
    assert.equal(await live.verify(late.token), null, 'a live revoked token is still refused');
    assert.equal(await live.verify(early.token), null, 'an expired token is refused as expired');
  });
});
