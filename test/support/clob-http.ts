/**
 * HTTP helpers for the options and spot API tests: a service with the push index feed, traders
 * signed in with SIWE and funded through the simulated chain into their spot and options buckets,
 * spot inventory granted by the admin treasury endpoint, and small request wrappers. Built on
 * test/support/harness.ts; nothing is mocked.
 */
import assert from 'node:assert/strict';
import {
  admin, call, fund, signIn, startService, type Reply, type TestService, type Trader,
} from './harness.ts';

export const CLOB_ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '3600000',
  TICK_MS: '100',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_ACCOUNT: '1000000',
  RATE_LIMIT_ORDERS: '1000000',
};

/** Starts a service and publishes the BTC and ETH index; waits until the option ladders are listed. */
export async function clobService(): Promise<TestService> {
  const svc = await startService(CLOB_ENV);
  for (const [underlying, price] of [['BTC', '100000'], ['ETH', '3000']]) {
    const r = await call(svc.url, '/admin/index', { body: { underlying, price }, headers: admin });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const r = await call(svc.url, '/options/instruments?underlying=ETH');
    if (r.status === 200 && r.body.length > 0) return svc;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('options were not listed');
}

export interface Funding {
  readonly spot?: string;
  readonly options?: string;
  readonly btc?: string;
  readonly eth?: string;
}

/** `n` signed-in traders, each funded as `f` says (USDC through the chain, base via the treasury). */
export async function clobTraders(base: string, n: number, f: Funding): Promise<Trader[]> {
  return Promise.all(Array.from({ length: n }, async () => {
    const t = await signIn(base);
    const usdc = Number(f.spot ?? '0') + Number(f.options ?? '0');
    if (usdc > 0) await fund(base, t, String(usdc), 15_000);
    for (const bucket of ['spot', 'options'] as const) {
      const amount = f[bucket];
      if (amount === undefined) continue;
      const r = await call(
        base,
        '/wallet/transfer',
        { token: t.token, body: { from: 'wallet', to: bucket, amount } },
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    for (const [asset, amount] of [['BTC', f.btc], ['ETH', f.eth]] as const) {
      if (amount === undefined) continue;
      const r = await call(
        base,
        '/admin/treasury/grant',
        { headers: admin, body: { walletAddress: t.address, asset, amount } },
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    return t;
  }));
}

export const post = (base: string, t: Trader, path: string, body?: unknown): Promise<Reply> =>
  call(base, path, { method: 'POST', token: t.token, body });
export const get = (base: string, t: Trader, path: string): Promise<Reply> => call(
  base,
  path,
  { token: t.token },
);

export function ok(reply: Reply, status = 200): Reply['body'] {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  return reply.body;
}

export function refused(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(reply.body.error, code, JSON.stringify(reply.body));
  assert.equal(typeof reply.body.message, 'string');
}

/** One row of /wallet/assets. */
export async function asset(
  base: string,
  t: Trader,
  bucket: string,
  name = 'USDC',
): Promise<{ available: string; locked: string; total: string }> {
  type Row = { asset: string; bucket: string; available: string; locked: string; total: string };
  const rows = ok(await get(base, t, '/wallet/assets')) as Row[];
  const row = rows.find((r) => r.bucket === bucket && r.asset === name);
  assert.ok(row !== undefined, `no ${bucket} ${name} row`);
  return { available: row.available, locked: row.locked, total: row.total };
}

/** The id of a listed option: `underlying`, type, strike, on the nearest (or `index`-th) expiry. */
export async function optionId(
  base: string,
  underlying: string,
  type: 'call' | 'put',
  strike: string,
  index = 0,
): Promise<string> {
  const list = ok(await call(
    base,
    `/options/instruments?underlying=${underlying}`,
  )) as { id: string; expiry: string; type: string; strike: string }[];
  const expiries = [...new Set(list.map((i) => i.expiry))].sort();
  const found = list.find((i) => i.expiry === expiries[index] && i.type === type && i.strike === strike);
  assert.ok(found !== undefined, `no ${underlying} ${type} ${strike}`);
  return found.id;
}
