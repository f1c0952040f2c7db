/**
 * Test harness: runs the real service in-process on a loopback port with a fresh temporary
 * DATA_DIR (real SQLite files), and offers a small fetch client plus Sign-In with Ethereum using
 * a real secp256k1 key (viem). Nothing here is mocked; tests talk HTTP to the real gateway.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { loadSettings, type Settings } from '../../src/config/env.ts';
import { createService, type Service } from '../../src/service.ts';

// Tests prepare data folders themselves (a journal written before a spawned service reads it, a
// copied folder): they write them as the service does, private to the user (adapters/store/data-dir.ts).
process.umask(0o077);

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const PUBLIC_ORIGIN = 'http://exchange.test';

export interface TestService {
  readonly url: string;
  readonly service: Service;
  readonly settings: Settings;
  readonly dataDir: string;
  close(): Promise<void>;
}

/**
 * The settings every test and benchmark service runs with (simulated chain with fast blocks and
 * two confirmations, admin token, market maker off, warnings only), on `dataDir` and `port`. Every
 * test client connects from 127.0.0.1, standing for many traders on many addresses: the per-address
 * ceilings (RATE_LIMIT_IP, RATE_LIMIT_SIGNIN_PER_HOUR) are lifted here, and the tests of those
 * ceilings set them low.
 */
export function testServiceEnv(dataDir: string, port: number | string): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_ORIGIN,
    ADMIN_TOKEN,
    CHAIN_BLOCK_MS: '40',
    DEPOSIT_CONFIRMATIONS: '2',
    LOG_LEVEL: 'warn',
    MARKET_MAKER: 'off',
    RATE_LIMIT_IP: '1000000000',
    RATE_LIMIT_SIGNIN_PER_HOUR: '1000000000',
  };
}

export async function startService(
  env: Record<string, string> = {},
  dataDir?: string,
  options: { clock?: { now(): number }; logStream?: { write(line: string): void } } = {},
): Promise<TestService> {
  if (process.env.EXCHANGE_TEST_TARGET === 'cluster') {
    // The same test against the distributed mode (test/support/cluster-target.ts; imported here
    // only when asked for: it imports this module).
    const { startClusterService } = await import('./cluster-target.ts');
    return startClusterService(env, dataDir, options);
  }
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'exchange-test-'));
  const merged: Record<string, string> = { ...testServiceEnv(dir, 0), LOG_LEVEL: 'silent', ...env };
  // `ADMIN_TOKEN: ''` stands for "not set": the service then serves no /admin routes at all.
  if (merged.ADMIN_TOKEN === '') delete merged.ADMIN_TOKEN;
  const settings = loadSettings(merged);
  const service = await createService(settings, {
    // Silent unless the test reads the log (it then sets LOG_LEVEL too).
    logger: options.logStream !== undefined,
    logStream: options.logStream,
    clock: options.clock,
    onFatal: (error) => {
      // A fail-stop in a test is a bug: make it loud instead of exiting the test process.
      console.error('exchange core stopped (fail-stop):', error);
    },
  });
  const address = await service.listen();
  return {
    url: address.replace('[::1]', '127.0.0.1'),
    service,
    settings,
    dataDir: dir,
    async close() {
      await service.close();
      if (dataDir === undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test replies are read field by field
export interface Reply<T = any> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

export interface RequestOptions {
  readonly method?: string;
  readonly body?: unknown;
  /** Raw body text (sent as is, for malformed-JSON tests). */
  readonly raw?: string;
  readonly token?: string;
  readonly apiKey?: string;
  readonly headers?: Record<string, string>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see Reply
export async function call<T = any>(base: string, path: string, options: RequestOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.apiKey !== undefined) headers['x-api-key'] = options.apiKey;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method: options.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    // non-JSON bodies stay text
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

export interface Trader {
  readonly privateKey: Hex;
  readonly address: string;
  readonly lower: string;
  readonly token: string;
}

export interface SiweOverrides {
  domain?: string;
  uri?: string;
  chainId?: number;
  issuedAt?: Date;
  expirationTime?: Date;
  notBefore?: Date;
  nonce?: string;
  scheme?: string;
}

/** Builds the EIP-4361 message this service expects, with optional deviations for hostile tests. */
export async function siweMessage(base: string, privateKey: Hex, overrides: SiweOverrides = {}) {
  const account = privateKeyToAccount(privateKey);
  const nonceReply = await call(base, '/auth/nonce', { body: { walletAddress: account.address } });
  if (nonceReply.status !== 200) throw new Error(`nonce failed: ${JSON.stringify(nonceReply.body)}`);
  const origin = new URL(PUBLIC_ORIGIN);
  const message = createSiweMessage({
    domain: overrides.domain ?? origin.host,
    address: account.address,
    uri: overrides.uri ?? PUBLIC_ORIGIN,
    version: '1',
    chainId: overrides.chainId ?? 1,
    nonce: overrides.nonce ?? nonceReply.body.nonce,
    issuedAt: overrides.issuedAt ?? new Date(),
    expirationTime: overrides.expirationTime,
    notBefore: overrides.notBefore,
    scheme: overrides.scheme,
    statement: 'Sign in to the exchange',
  });
  const signature = await account.signMessage({ message });
  return { message, signature, nonce: nonceReply.body.nonce as string, account };
}

export async function signIn(base: string, privateKey: Hex = generatePrivateKey()): Promise<Trader> {
  const { message, signature, account } = await siweMessage(base, privateKey);
  const reply = await call(base, '/auth/siwe', { body: { message, signature } });
  if (reply.status !== 200) throw new Error(`sign-in failed: ${JSON.stringify(reply.body)}`);
  return { privateKey, address: account.address, lower: account.address.toLowerCase(), token: reply.body.token };
}

/** Deposits through the simulated chain and waits until the wallet bucket is credited. */
export async function fund(base: string, trader: Trader, amount: string, timeoutMs = 5000): Promise<void> {
  const before = await call(base, '/wallet/balance', { token: trader.token });
  const dep = await call(base, '/admin/chain/deposits', {
    body: { walletAddress: trader.address, amount },
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  if (dep.status !== 200) throw new Error(`deposit failed: ${JSON.stringify(dep.body)}`);
  const target = Number(before.body.onchainDepositTotal) + Number(amount);
  await waitFor(async () => {
    const b = await call(base, '/wallet/balance', { token: trader.token });
    return Number(b.body.onchainDepositTotal) >= target - 1e-9;
  }, timeoutMs);
}

export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 5000, stepMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

export const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** A loopback port that was free a moment ago (for services started as child processes). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface HeldJournal {
  /** Batches held now. */
  held(): number;
  /** Lets the oldest held batch through to the writer. */
  release(): void;
  /**
   * Lets every held batch through and holds no more (call in `finally` too: a failed test must not
   * leave the service waiting on its disk).
   */
  releaseAll(): void;
  /** The disk fails: every held batch, and every later one, is refused with `error`. */
  fail(error: Error): void;
}

/**
 * A slow disk: each journal batch holding a `commandType` command (any batch when omitted) waits
 * until released, so its commands are applied by the core (and seen by a read of it) but not
 * durable. Batches keep their order (one behind a held batch waits too); every batch is written by
 * the service's real writer once let through.
 */
export function holdJournal(ts: TestService, commandType?: string): HeldJournal {
  type Batch = readonly { command: { type: string } }[];
  const writer = (ts.service.ctx.sequencer as unknown as { writer: { append(batch: Batch): Promise<void> } }).writer;
  const append = writer.append.bind(writer);
  const gates: (() => void)[] = [];
  let released = 0;
  let broken: Error | null = null;
  let holding = true;
  let tail = Promise.resolve();
  const holds = (batch: Batch) => holding && (commandType === undefined || batch.some((c) => c.command.type === commandType));
  writer.append = (batch) => {
    const gate = holds(batch) ? new Promise<void>((resolve) => gates.push(resolve)) : undefined;
    return (tail = tail.then(() => gate).then(() => {
      if (broken !== null) throw broken;
      return append(batch);
    }));
  };
  const release = () => gates[released++]!();
  const releaseAll = () => {
    holding = false;
    while (released < gates.length) release();
  };
  return {
    held: () => gates.length - released,
    release,
    releaseAll,
    fail: (error) => {
      broken = error;
      releaseAll();
    },
  };
}
