/**
 * Hostile tests of Sign-In with Ethereum over HTTP (research/reliability.md 5.2 and 7.5,
 * decisions.md "Access"). One real service on loopback (test/support/harness.ts, temp SQLite);
 * every message is built with viem's createSiweMessage for the harness's PUBLIC_ORIGIN and signed
 * with a real secp256k1 key, then bent in exactly one way (a field, a line, the signature) and
 * re-signed where the point is that the signature is valid but the content is not. Each table
 * starts with an unmodified control case, so a helper that builds bad messages cannot make the
 * refusals pass vacuously.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getAddress, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { call, PUBLIC_ORIGIN, startService, type Reply, type TestService } from '../support/harness.ts';

const SEVEN_DAYS_MS = 7 * 86_400_000;
const HOUR_MS = 3_600_000;

let svc: TestService;

before(async () => {
  svc = await startService({ RATE_LIMIT_ANONYMOUS: '1000000', RATE_LIMIT_ACCOUNT: '1000000' });
});

after(async () => {
  await svc.close();
});

interface Build {
  /** The key whose address is in the message (default: a fresh key). */
  key?: Hex;
  /** The key that signs (default: `key`). */
  signer?: Hex;
  /** Use this nonce instead of asking the service for one. */
  nonce?: string;
  /** Ask for the nonce on behalf of this address instead of the message's. */
  nonceFor?: string;
  domain?: string;
  uri?: string;
  scheme?: string;
  chainId?: number;
  issuedAt?: Date;
  expirationTime?: Date;
  notBefore?: Date;
  /** Rewrites the message text before it is signed. */
  edit?: (text: string) => string;
}

interface Built {
  message: string;
  signature: Hex;
  nonce: string;
  address: string;
}

async function issueNonce(walletAddress: string): Promise<string> {
  const reply = await call(svc.url, '/auth/nonce', { body: { walletAddress } });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.nonce as string;
}

async function build(options: Build = {}): Promise<Built> {
  const account = privateKeyToAccount(options.key ?? generatePrivateKey());
  const nonce = options.nonce ?? (await issueNonce(options.nonceFor ?? account.address));
  const base = createSiweMessage({
    domain: options.domain ?? new URL(PUBLIC_ORIGIN).host,
    address: account.address,
    uri: options.uri ?? PUBLIC_ORIGIN,
    version: '1',
    chainId: options.chainId ?? 1,
    nonce,
    issuedAt: options.issuedAt ?? new Date(),
    expirationTime: options.expirationTime,
    notBefore: options.notBefore,
    scheme: options.scheme,
    statement: 'Sign in to the exchange',
  });
  const message = options.edit === undefined ? base : options.edit(base);
  const signer = options.signer === undefined ? account : privateKeyToAccount(options.signer);
  const signature = await signer.signMessage({ message });
  return { message, signature, nonce, address: account.address };
}

function submit(message: unknown, signature: unknown): Promise<Reply> {
  return call(svc.url, '/auth/siwe', { body: { message, signature } });
}

/** Asserts the exact status and code, and that the body is the bare error envelope. */
function assertError(reply: Reply, status: number, code: string, message?: RegExp): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.deepEqual(Object.keys(reply.body).sort(), ['error', 'message']);
  assert.equal(reply.body.error, code);
  assert.equal(typeof reply.body.message, 'string');
  if (message !== undefined) assert.match(reply.body.message, message);
}

function replaceLine(label: string, value: string): (text: string) => string {
  return (text) => {
    const re = new RegExp(`^${label}: .*$`, 'm');
    assert.match(text, re, `the message has no ${label} line`);
    return text.replace(re, `${label}: ${value}`);
  };
}

function dropLine(label: string): (text: string) => string {
  return (text) => {
    const re = new RegExp(`^${label}: .*\\n?`, 'm');
    assert.match(text, re, `the message has no ${label} line`);
    return text.replace(re, '').replace(/\n$/, '');
  };
}

describe('a valid sign-in', () => {
  test('returns a token, the EIP-55 address and a 7-day expiry, and sets the session cookie', async () => {
    const signed = await build();
    const t0 = Date.now();
    const reply = await submit(signed.message, signed.signature);
    const t1 = Date.now();
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.deepEqual(Object.keys(reply.body).sort(), ['expiresAt', 'token', 'walletAddress']);
    assert.match(reply.body.token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    assert.equal(reply.body.walletAddress, signed.address);
    assert.equal(reply.body.walletAddress, getAddress(signed.address.toLowerCase()));
    assert.match(reply.body.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const expiresAt = Date.parse(reply.body.expiresAt);
    assert.ok(expiresAt >= t0 - 1000 + SEVEN_DAYS_MS, reply.body.expiresAt);
    assert.ok(expiresAt <= t1 + SEVEN_DAYS_MS, reply.body.expiresAt);

    const cookies = reply.headers.getSetCookie();
    assert.equal(cookies.length, 1, cookies.join(' | '));
    const [pair = '', ...attributes] = cookies[0]!.split(/;\s*/);
    assert.equal(pair, `session=${reply.body.token}`);
    const attrs = attributes.map((a) => a.toLowerCase());
    assert.ok(attrs.includes('httponly'), cookies[0]);
    assert.ok(attrs.includes('samesite=lax'), cookies[0]);
    assert.ok(attrs.includes('path=/'), cookies[0]);
    assert.ok(!attrs.includes('secure'), `no Secure on an http origin: ${cookies[0]}`);
    const expires = attributes.find((a) => a.toLowerCase().startsWith('expires='));
    assert.ok(expires !== undefined, cookies[0]);
    assert.equal(Date.parse(expires.slice('expires='.length)), Math.floor(expiresAt / 1000) * 1000);
  });

  test('the session cookie alone authenticates', async () => {
    const signed = await build();
    const { body } = await submit(signed.message, signed.signature);
    const reply = await call(svc.url, '/wallet/balance', { headers: { cookie: `session=${body.token}` } });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.walletBalance, '0');
    const anonymous = await call(svc.url, '/wallet/balance');
    assertError(anonymous, 401, 'UNAUTHENTICATED');
  });

  test('Bearer and cookie give the same identity, and another account a different one', async () => {
    const a = await build();
    const b = await build();
    const tokenA = (await submit(a.message, a.signature)).body.token as string;
    const tokenB = (await submit(b.message, b.signature)).body.token as string;
    const viaBearer = await call(svc.url, '/wallet/deposit-address', { token: tokenA });
    const cookie = { cookie: `session=${tokenA}` };
    const viaCookie = await call(svc.url, '/wallet/deposit-address', { headers: cookie });
    const other = await call(svc.url, '/wallet/deposit-address', { token: tokenB });
    assert.equal(viaBearer.status, 200);
    assert.equal(viaCookie.status, 200);
    assert.deepEqual(viaCookie.body, viaBearer.body);
    assert.notEqual(other.body.address, viaBearer.body.address);
  });
});

describe('nonces', () => {
  test('a nonce is single use: the same message and signature a second time is refused', async () => {
    const signed = await build();
    assert.equal((await submit(signed.message, signed.signature)).status, 200);
    assertError(await submit(signed.message, signed.signature), 401, 'UNAUTHENTICATED', /nonce/);
  });

  test('a nonce that took part in a failed attempt is burnt', async () => {
    const key = generatePrivateKey();
    const failed = await build({ key, domain: 'evil.example' });
    assertError(await submit(failed.message, failed.signature), 401, 'UNAUTHENTICATED', /domain/);
    const retry = await build({ key, nonce: failed.nonce });
    assertError(await submit(retry.message, retry.signature), 401, 'UNAUTHENTICATED', /nonce/);
  });

  test('a nonce issued for address B is refused in a message from address A', async () => {
    const other = privateKeyToAccount(generatePrivateKey()).address;
    const signed = await build({ nonceFor: other });
    assertError(await submit(signed.message, signed.signature), 401, 'UNAUTHENTICATED', /different address/);
  });

  test('a nonce the service never issued is refused', async () => {
    const signed = await build({ nonce: 'NeverIssuedByTheService0' });
    assertError(await submit(signed.message, signed.signature), 401, 'UNAUTHENTICATED', /nonce/);
  });

  test('nonces are at least 8 alphanumeric characters and differ on every call', async () => {
    const address = privateKeyToAccount(generatePrivateKey()).address;
    const first = await issueNonce(address);
    const second = await issueNonce(address);
    assert.match(first, /^[A-Za-z0-9]{8,}$/);
    assert.notEqual(first, second);
  });

  test('a nonce request for a malformed address is refused with 400', async () => {
    for (const walletAddress of ['0x1234', 'not-an-address', '', 42]) {
      const reply = await call(svc.url, '/auth/nonce', { body: { walletAddress } });
      assertError(reply, 400, 'VALIDATION_ERROR');
    }
  });

  test('five concurrent submits of one valid message open exactly one session', async () => {
    const signed = await build();
    const attempts = Array.from({ length: 5 }, () => submit(signed.message, signed.signature));
    const replies = await Promise.all(attempts);
    const statuses = replies.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 401, 401, 401, 401]);
    for (const r of replies.filter((x) => x.status === 401)) assertError(r, 401, 'UNAUTHENTICATED');
  });
});

describe('message fields are checked against PUBLIC_ORIGIN, CHAIN_ID and the clock', () => {
  const cases: { name: string; build: () => Build; status: number; reason?: RegExp }[] = [
    { name: 'an unmodified message (control) is accepted', build: () => ({}), status: 200 },
    {
      name: 'a message for another domain',
      build: () => ({ domain: 'evil.example' }),
      status: 401,
      reason: /domain/,
    },
    {
      name: 'a message for the right host on another port',
      build: () => ({ domain: 'exchange.test:8443', uri: 'http://exchange.test:8443' }),
      status: 401,
      reason: /domain/,
    },
    {
      name: 'a message with the https scheme on an http origin',
      build: () => ({ scheme: 'https' }),
      status: 401,
      reason: /scheme/,
    },
    {
      name: 'a message whose URI is https on an http origin',
      build: () => ({ uri: 'https://exchange.test' }),
      status: 401,
      reason: /uri/,
    },
    {
      name: 'a message whose URI is on another origin',
      build: () => ({ uri: 'https://evil.example/login' }),
      status: 401,
      reason: /uri/,
    },
    { name: 'a message for chain id 5', build: () => ({ chainId: 5 }), status: 401, reason: /chain id/ },
    {
      name: 'a message with Version 2',
      build: () => ({ edit: replaceLine('Version', '2') }),
      status: 401,
      reason: /version/,
    },
    {
      name: 'a message issued an hour in the future',
      build: () => ({ issuedAt: new Date(Date.now() + HOUR_MS) }),
      status: 401,
      reason: /future/,
    },
    {
      name: 'a message issued an hour before its nonce',
      build: () => ({ issuedAt: new Date(Date.now() - HOUR_MS) }),
      status: 401,
      reason: /before the nonce/,
    },
    {
      name: 'a message with an impossible Issued At',
      build: () => ({ edit: replaceLine('Issued At', '2026-13-45T99:00:00.000Z') }),
      status: 401,
      reason: /issued-at/,
    },
    {
      name: 'a message whose expiration time has passed',
      build: () => ({ expirationTime: new Date(Date.now() - 60_000) }),
      status: 401,
      reason: /expired/,
    },
    {
      name: 'a message whose not-before is an hour ahead',
      build: () => ({ notBefore: new Date(Date.now() + HOUR_MS) }),
      status: 401,
      reason: /not-before/,
    },
    {
      name: 'a message with a future expiration and a past not-before (control) is accepted',
      build: () => ({
        expirationTime: new Date(Date.now() + HOUR_MS),
        notBefore: new Date(Date.now() - 1000),
      }),
      status: 200,
    },
  ];
  for (const c of cases) {
    test(`${c.name}${c.status === 200 ? '' : ' is refused with 401'}`, async () => {
      const signed = await build(c.build());
      const reply = await submit(signed.message, signed.signature);
      if (c.status === 200) assert.equal(reply.status, 200, JSON.stringify(reply.body));
      else assertError(reply, c.status, 'UNAUTHENTICATED', c.reason);
    });
  }
});

describe('malformed messages are refused with 400 or 401, never 5xx', () => {
  const cases: { name: string; build: () => Build; status: number }[] = [
    { name: 'an unmodified message (control)', build: () => ({}), status: 200 },
    { name: 'CRLF line endings', build: () => ({ edit: (t) => t.replaceAll('\n', '\r\n') }), status: 401 },
    {
      name: 'one CR before the nonce line',
      build: () => ({ edit: (t) => t.replace('\nNonce:', '\r\nNonce:') }),
      status: 401,
    },
    { name: 'an extra trailing line', build: () => ({ edit: (t) => `${t}\nextra` }), status: 401 },
    {
      name: 'a standard Resources block (part of EIP-4361, signed by the wallet)',
      build: () => ({ edit: (t) => `${t}\nResources:\n- https://exchange.test/terms` }),
      status: 200,
    },
    {
      name: 'a duplicated Chain ID line',
      build: () => ({ edit: (t) => t.replace(/^(Chain ID: .*)$/m, '$1\n$1') }),
      status: 401,
    },
    {
      name: 'a lower-case (not EIP-55) address',
      build: () => ({ edit: (t) => t.replace(/^(0x[0-9a-fA-F]{40})$/m, (a) => a.toLowerCase()) }),
      status: 401,
    },
    { name: 'no Nonce line', build: () => ({ edit: dropLine('Nonce') }), status: 401 },
    { name: 'no Issued At line', build: () => ({ edit: dropLine('Issued At') }), status: 401 },
    { name: 'no Chain ID line', build: () => ({ edit: dropLine('Chain ID') }), status: 401 },
    { name: 'no URI line', build: () => ({ edit: dropLine('URI') }), status: 401 },
    { name: 'no Version line', build: () => ({ edit: dropLine('Version') }), status: 401 },
    {
      name: 'no address line',
      build: () => ({ edit: (t) => t.replace(/^0x[0-9a-fA-F]{40}\n/m, '') }),
      status: 401,
    },
  ];
  for (const c of cases) {
    test(`a message with ${c.name} ${c.status === 200 ? 'is accepted' : 'is refused with 401'}`, async () => {
      const signed = await build(c.build());
      const reply = await submit(signed.message, signed.signature);
      if (c.status === 200) assert.equal(reply.status, 200, JSON.stringify(reply.body));
      else assertError(reply, c.status, 'UNAUTHENTICATED');
    });
  }

  test('a message over 4096 characters is refused with 400', async () => {
    const signed = await build({ edit: (t) => t.replace('Sign in to the exchange', 'x'.repeat(4200)) });
    assert.ok(signed.message.length > 4096);
    assertError(await submit(signed.message, signed.signature), 400, 'VALIDATION_ERROR');
  });

  test('a message under 4096 characters but over 4096 bytes is refused with 400', async () => {
    const signed = await build({ edit: (t) => t.replace('Sign in to the exchange', 'é'.repeat(2100)) });
    assert.ok(signed.message.length < 4096 && Buffer.byteLength(signed.message) > 4096);
    assertError(await submit(signed.message, signed.signature), 400, 'VALIDATION_ERROR', /4096 bytes/);
  });

  test('garbage text and an empty message are refused with 401', async () => {
    const signature = await privateKeyToAccount(generatePrivateKey()).signMessage({ message: 'hello' });
    const garbage = ['hello', '', '\n\n\n', 'Nonce: \nURI: http://exchange.test', '\u0000'.repeat(100)];
    for (const message of garbage) {
      assertError(await submit(message, signature), 401, 'UNAUTHENTICATED');
    }
  });

  test('bodies with missing, extra or mistyped fields are refused with 400', async () => {
    const signed = await build();
    const bodies: unknown[] = [
      {},
      { message: signed.message },
      { signature: signed.signature },
      { message: signed.message, signature: signed.signature, walletAddress: signed.address },
      { message: 42, signature: signed.signature },
      { message: signed.message, signature: null },
      [signed.message, signed.signature],
    ];
    for (const body of bodies) {
      assertError(await call(svc.url, '/auth/siwe', { body }), 400, 'VALIDATION_ERROR');
    }
    // None of those attempts reached the nonce: the message still signs in.
    assert.equal((await submit(signed.message, signed.signature)).status, 200);
  });
});

describe('signatures', () => {
  const flip = (hex: string, at: number) =>
    hex.slice(0, at) + (hex[at] === 'a' ? 'b' : 'a') + hex.slice(at + 1);
  const otherKey = privateKeyToAccount(generatePrivateKey());
  type Tamper = (s: Built) => Promise<{ message?: string; signature?: string }>;
  const cases: [name: string, tamper: Tamper][] = [
    [
      'a signature by another key',
      async (s) => ({ signature: await otherKey.signMessage({ message: s.message }) }),
    ],
    ['a truncated signature', async (s) => ({ signature: s.signature.slice(0, -2) })],
    ['a garbage signature', async () => ({ signature: '0xdeadbeef' })],
    ['a non-hex signature', async () => ({ signature: `0x${'zz'.repeat(65)}` })],
    ['an all-zero signature', async () => ({ signature: `0x${'00'.repeat(65)}` })],
    ['a signature with an invalid v byte', async (s) => ({ signature: `${s.signature.slice(0, -2)}05` })],
    ['a signature with one flipped digit', async (s) => ({ signature: flip(s.signature, 20) })],
    [
      'a signature over a message with one changed character',
      async (s) => ({ message: s.message.replace('Sign in to the exchange', 'Sign in to the exchangf') }),
    ],
  ];
  for (const [name, tamper] of cases) {
    test(`${name} is refused with 401`, async () => {
      const signed = await build();
      const bent = await tamper(signed);
      const reply = await submit(bent.message ?? signed.message, bent.signature ?? signed.signature);
      assertError(reply, 401, 'UNAUTHENTICATED');
    });
  }

  test('the same message with its own signature (control) is accepted', async () => {
    const signed = await build();
    assert.equal((await submit(signed.message, signed.signature)).status, 200);
  });
});
