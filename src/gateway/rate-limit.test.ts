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
