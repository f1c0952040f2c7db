/**
 * HTTP helpers for the perp API tests that price against a fixed index: a service with the push
 * index feed on a clock the test holds (no tick moves the mark between two requests), the index
 * published by the admin endpoint, traders funded through the simulated chain into their perps
 * bucket, and a status check. Built on test/support/harness.ts; nothing is mocked.
 */
import assert from 'node:assert/strict';
import { admin, call, fund, startService, type Reply, type TestService, type Trader } from './harness.ts';

export const FROZEN_PERPS_ENV = {
  FEED: 'push',
  INDEX_MAX_AGE_MS: '3600000',
  TICK_MS: '60000',
  RATE_LIMIT_ANONYMOUS: '1000000',
  RATE_LIMIT_ACCOUNT: '1000000',
  RATE_LIMIT_ORDERS: '1000000',
};

/** A clock the test moves by setting `t` (it starts at the real time: sign-in messages carry it). */
export interface HeldClock {
  t: number;
  now(): number;
}

export async function frozenPerpsService(): Promise<{ svc: TestService; clock: HeldClock }> {
  const clock: HeldClock = { t: Date.now(), now() { return this.t; } };
  return { svc: await startService(FROZEN_PERPS_ENV, undefined, { clock }), clock };
}

export async function publishIndex(base: string, underlying: string, price: string): Promise<void> {
  const r = await call(base, '/admin/index', { body: { underlying, price }, headers: admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

/** Deposits `amount` USDC on the simulated chain and moves it to the perps bucket. */
export async function fundPerps(base: string, t: Trader, amount: string): Promise<void> {
  await fund(base, t, amount);
  const r = await call(base, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

/** The body of a reply that must have `status`. */
export async function ok(reply: Promise<Reply>, status: number): Promise<Reply['body']> {
  const r = await reply;
  assert.equal(r.status, status, JSON.stringify(r.body));
  return r.body;
}
