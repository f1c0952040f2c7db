/** The fixed-window counter on a clock the test moves: budgets per key and the window's reset. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { synchronous } from '../../test/support/synchronous.ts';
import { RateLimiter, SignInThrottle } from './rate-limit.ts';

const settings = { windowMs: 10_000, anonymousPerWindow: 2, accountPerWindow: 3, orderActionsPerWindow: 1, addressPerWindow: 1_000_000 };

test('a key gets its limit per window; the next window starts afresh; the reset counts down', () => {
  let now = 1_000_000;
  const limiter = synchronous(new RateLimiter(settings, () => now));
  assert.deepEqual(limiter.take('ip', 2), { allowed: true, remaining: 1, resetSeconds: 10 });
  assert.equal(limiter.take('ip', 2).allowed, true);
  now += 4_000;
  assert.deepEqual(limiter.take('ip', 2), { allowed: false, remaining: 0, resetSeconds: 6 });
  assert.equal(limiter.take('other', 2).allowed, true, 'budgets are per key');
  now += 6_000;
  assert.equal(limiter.take('ip', 2).allowed, true, 'a new window');
});

test('anonymous IPv6 peers share one budget per /64; another /64 and IPv4 peers have their own', async () => {
  const limiter = new RateLimiter(settings, () => 1_000_000);
  const hook = limiter.hook();
  const reply = { header: () => reply };
  const request = (ip: string) => ({ ip, identity: null, routeOptions: { config: {} } }) as never;
  const status = async (ip: string) => hook(request(ip), reply as never).then(() => 200, (e: { status: number }) => e.status);
  assert.equal(await status('2001:db8:1:2::1'), 200);
  assert.equal(await status('2001:db8:1:2:ffff:1:2:3'), 200);
  assert.equal(await status('2001:DB8:1:2::99'), 429, 'a third host of the same /64 is over the budget of 2');
  assert.equal(await status('2001:db8:1:3::1'), 200, 'another /64');
  assert.equal(await status('::ffff:198.51.100.7'), 200);
  assert.equal(await status('198.51.100.7'), 200);
  assert.equal(await status('198.51.100.7'), 429, 'an IPv4-mapped address is its IPv4');
});

test('signed-in requests also count against their address: fresh accounts do not multiply its budget', async () => {
  const limiter = new RateLimiter({ ...settings, accountPerWindow: 3, addressPerWindow: 5 }, () => 1_000_000);
  const hook = limiter.hook();
  const headers: Record<string, unknown> = {};
  const reply = { header: (k: string, v: unknown) => ((headers[k] = v), reply) };
  const request = (account: string) => ({ ip: '198.51.100.7', identity: { address: account }, routeOptions: { config: {} } }) as never;
  const outcome = async (account: string) => hook(request(account), reply as never).then(() => 'ok', (e: { message: string }) => e.message);
  // Two accounts of 3 each would be 6; the address allows 5 in all.
  const seen = [];
  for (const a of ['0xa', '0xa', '0xa', '0xb', '0xb']) seen.push(await outcome(a));
  assert.deepEqual(seen, ['ok', 'ok', 'ok', 'ok', 'ok']);
  assert.match(await outcome('0xb'), /budget of this client address/);
  assert.equal(headers['X-RateLimit-Budget'], 'address');
  assert.equal(headers['X-RateLimit-Limit'], 5);
  assert.match(await outcome('0xa'), /account budget/, 'the account ran out first: its own budget is named');
  assert.equal(headers['X-RateLimit-Budget'], 'account');
});

test('sign-ins per address per hour: counted on success, refused past the limit, a new hour starts afresh', () => {
  let now = 7_200_000;
  const throttle = new SignInThrottle(2, () => now);
  const headers: Record<string, unknown> = {};
  const reply = { header: (k: string, v: unknown) => ((headers[k] = v), reply) } as never;
  throttle.check('198.51.100.7', reply);
  throttle.count('198.51.100.7');
  throttle.check('198.51.100.7', reply);
  throttle.count('198.51.100.7');
  assert.throws(() => throttle.check('198.51.100.7', reply), /sign-in budget of this client address of 2 new sessions per hour/);
  assert.equal(headers['X-RateLimit-Budget'], 'sign-in');
  assert.equal(headers['Retry-After'], 3600);
  throttle.check('198.51.100.8', reply); // another address
  now += 3_600_000;
  throttle.check('198.51.100.7', reply);
});
