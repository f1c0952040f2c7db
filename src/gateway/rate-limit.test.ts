/** The fixed-window counter on a clock the test moves: budgets per key and the window's reset. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RateLimiter } from './rate-limit.ts';

const settings = { windowMs: 10_000, anonymousPerWindow: 2, accountPerWindow: 3, orderActionsPerWindow: 1 };

test('a key gets its limit per window; the next window starts afresh; the reset counts down', () => {
  let now = 1_000_000;
  const limiter = new RateLimiter(settings, () => now);
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
