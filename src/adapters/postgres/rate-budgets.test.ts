/**
 * Rate-limit budgets shared by gateways, on a real PostgreSQL server (test/support/postgres.ts):
 * two budgets (two "gateways", each its own pool) over one database share one limit within the
 * documented overshoot (`limit + N * allowance`), never refuse before the limit is spent, cost far
 * fewer queries than requests, fall back to each gateway's own count while PostgreSQL is away; the
 * sign-in throttle holds exactly across two gateways, concurrent sign-ins included.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { PostgresServer } from '../../../test/support/postgres.ts';
import { ApiError } from '../../gateway/errors.ts';
import { RateLimiter, SignInThrottle } from '../../gateway/rate-limit.ts';
import { migratePostgres, postgresPool } from './database.ts';
import { PostgresRateBudgets, PostgresSignInCounts } from './rate-budgets.ts';

let server: PostgresServer;
const pools: pg.Pool[] = [];
const budgets: PostgresRateBudgets[] = [];

/** A pool that counts its queries. */
function countingPool(): { pool: pg.Pool; queries: () => number } {
  const pool = postgresPool(server.url);
  pools.push(pool);
  let n = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    n++;
    return query(...args);
  };
  return { pool, queries: () => n };
}

function gateway(options: { windowMs?: number; now?: () => number } = {}) {
  const { pool, queries } = countingPool();
  const b = new PostgresRateBudgets(pool, { windowMs: options.windowMs ?? 60_000, now: options.now });
  budgets.push(b);
  return { budgets: b, queries };
}

let keySeq = 0;
const freshKey = () => `test:${++keySeq}:${Date.now()}`;

before(async () => {
  server = await PostgresServer.start();
  await migratePostgres(server.url);
});

after(async () => {
  for (const b of budgets) await b.close().catch(() => undefined);
  for (const p of pools) await p.end();
  await server.destroy();
});

describe('request budgets across two gateways', () => {
  test('taken in turn, one limit holds exactly once each gateway has heard the other', async () => {
    const [a, b] = [gateway(), gateway()];
    const key = freshKey();
    let allowed = 0;
    for (let i = 0; i < 150; i++) {
      const g = i % 2 === 0 ? a : b;
      if ((await g.budgets.take(key, 100)).allowed) allowed++;
      if (i % 10 === 9) await new Promise((r) => setTimeout(r, 150)); // both flush (every 100 ms)
    }
    const allowance = a.budgets.allowance(100);
    assert.ok(allowed >= 100 && allowed <= 100 + 2 * allowance, `${allowed} allowed of a limit of 100 (allowance ${allowance})`);
  });

  test('a concurrent burst on both gateways stays within limit + N * allowance and never refuses early', async (t) => {
    const [a, b] = [gateway(), gateway()];
    for (const limit of [20, 200, 1000]) {
      const key = freshKey();
      const takes = [];
      for (let i = 0; i < 3 * limit; i++) takes.push((i % 2 === 0 ? a : b).budgets.take(key, limit));
      const allowed = (await Promise.all(takes)).filter((u) => u.allowed).length;
      const bound = limit + 2 * a.budgets.allowance(limit);
      t.diagnostic(`limit ${limit}: ${allowed} allowed of ${3 * limit} concurrent requests, bound ${bound}`);
      assert.ok(allowed >= limit && allowed <= bound, `limit ${limit}: ${allowed} allowed, bound ${bound}`);
    }
  });

  test('requests cost far fewer queries than requests', async (t) => {
    const a = gateway();
    const key = freshKey();
    const before = a.queries();
    const started = performance.now();
    for (let i = 0; i < 2_000; i++) {
      await a.budgets.take(key, 1_000_000);
      if (i % 100 === 99) await new Promise((r) => setTimeout(r, 50)); // 2,000 requests a second
    }
    const spent = a.queries() - before;
    t.diagnostic(`${spent} queries for 2000 requests over ${(performance.now() - started).toFixed(0)} ms`);
    assert.ok(spent <= 2_000 / 50, `${spent} queries for 2000 requests`);
  });

  test('headers: remaining counts down across gateways; a new window starts afresh', async () => {
    let now = 1_000_000 * 60_000 + 1_000;
    const [a, b] = [gateway({ now: () => now }), gateway({ now: () => now })];
    const key = freshKey();
    assert.deepEqual(await a.budgets.take(key, 10), { allowed: true, remaining: 9, resetSeconds: 59 });
    await new Promise((r) => setTimeout(r, 150));
    assert.equal((await b.budgets.take(key, 10)).remaining, 9, 'B has not heard of the total yet: it counts its own');
    await new Promise((r) => setTimeout(r, 150));
    assert.equal((await b.budgets.take(key, 10)).remaining, 7, "B's upsert answered the total: A's request and its own");
    now += 60_000;
    assert.equal((await b.budgets.take(key, 10)).remaining, 9, 'a new window');
  });

  test('the RateLimiter over shared budgets: one account limit across two gateways', async () => {
    const settings = { windowMs: 60_000, anonymousPerWindow: 10, accountPerWindow: 40, orderActionsPerWindow: 10, addressPerWindow: 1_000_000 };
    const hooks = [gateway(), gateway()].map((g) => new RateLimiter(settings, undefined, g.budgets).hook());
    const reply = { header: () => reply };
    const account = `0x${(++keySeq).toString(16).padStart(40, '0')}`;
    const request = { ip: '198.51.100.7', identity: { address: account }, routeOptions: { config: {} } } as never;
    let ok = 0;
    for (let i = 0; i < 80; i++) {
      ok += await hooks[i % 2]!(request, reply as never).then(() => 1, () => 0);
      if (i % 8 === 7) await new Promise((r) => setTimeout(r, 120));
    }
    assert.ok(ok >= 40 && ok <= 40 + 2 * 2, `${ok} of the account's 40 allowed`);
  });

  test('while PostgreSQL cannot be reached each gateway still holds the limit on its own', async () => {
    const dead = postgresPool('postgres://postgres@127.0.0.1:1/postgres');
    pools.push(dead);
    const lonely = new PostgresRateBudgets(dead, { windowMs: 60_000 });
    budgets.push(lonely);
    const key = freshKey();
    const uses = [];
    for (let i = 0; i < 30; i++) uses.push(await lonely.take(key, 20));
    assert.equal(uses.filter((u) => u.allowed).length, 20);
  });
});

describe('sign-ins across two gateways', () => {
  test('exact: concurrent sign-ins of one address on two gateways open at most the hour budget', async () => {
    const throttles = [0, 1].map(() => new SignInThrottle(5, undefined, new PostgresSignInCounts(countingPool().pool)));
    const reply = { header: () => reply } as never;
    const ip = '203.0.113.50';
    const counted = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => throttles[i % 2]!.count(ip, reply)));
    assert.equal(counted.filter((o) => o.status === 'fulfilled').length, 5);
    const refused = counted.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    assert.ok(refused.reason instanceof ApiError && refused.reason.code === 'RATE_LIMITED');
    await assert.rejects(async () => throttles[0]!.check(ip, reply), /sign-in budget of this client address of 5 new sessions per hour/);
    await throttles[1]!.check('203.0.113.51', reply); // another address
  });

  test('taken in turn: the fifth on either gateway is the last, and a new hour starts afresh', async () => {
    let now = 500 * 3_600_000 + 10;
    const throttles = [0, 1].map(() => new SignInThrottle(5, undefined, new PostgresSignInCounts(countingPool().pool, () => now)));
    const headers: Record<string, unknown> = {};
    const reply = { header: (k: string, v: unknown) => ((headers[k] = v), reply) } as never;
    const ip = '2001:db8:7:7::1';
    for (let i = 0; i < 5; i++) {
      await throttles[i % 2]!.check(ip, reply);
      await throttles[i % 2]!.count(ip, reply);
    }
    await assert.rejects(async () => throttles[1]!.check('2001:db8:7:7::ffff', reply), /5 new sessions per hour/, 'the same /64');
    assert.equal(headers['X-RateLimit-Budget'], 'sign-in');
    assert.equal(headers['Retry-After'], 3600);
    now += 3_600_000;
    await throttles[0]!.check(ip, reply);
  });
});
