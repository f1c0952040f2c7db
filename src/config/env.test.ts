/** Settings from the environment: defaults, and a bad value stops the service naming the variable. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadSettings } from './env.ts';

test('group-commit settings: defaults and explicit values', () => {
  assert.deepEqual(loadSettings({}).journal, { earlyFlushAt: 16, maxInFlight: 4, maxProjectionLag: 1024, replayCheck: 'strict' });
  assert.deepEqual(
    loadSettings({ JOURNAL_EARLY_FLUSH_AT: '1', JOURNAL_MAX_IN_FLIGHT: '64', JOURNAL_MAX_PROJECTION_LAG: '1', JOURNAL_REPLAY_CHECK: 'warn' }).journal,
    { earlyFlushAt: 1, maxInFlight: 64, maxProjectionLag: 1, replayCheck: 'warn' },
  );
});

test('a bad group-commit setting is refused with the variable named', () => {
  for (const [name, raw] of [
    ['JOURNAL_EARLY_FLUSH_AT', '0'],
    ['JOURNAL_EARLY_FLUSH_AT', '1e3'],
    ['JOURNAL_EARLY_FLUSH_AT', '65537'],
    ['JOURNAL_MAX_IN_FLIGHT', '0'],
    ['JOURNAL_MAX_IN_FLIGHT', '-1'],
    ['JOURNAL_MAX_IN_FLIGHT', '65'],
    ['JOURNAL_MAX_PROJECTION_LAG', '0'],
    ['JOURNAL_MAX_PROJECTION_LAG', '65537'],
    ['JOURNAL_REPLAY_CHECK', 'off'],
  ] as const) {
    assert.throws(() => loadSettings({ [name]: raw }), (e: unknown) => e instanceof ConfigError && e.message.startsWith(name), `${name}=${raw}`);
  }
});

test('the push feed needs the admin routes it arrives through', () => {
  assert.throws(() => loadSettings({ FEED: 'push' }), (e: unknown) => e instanceof ConfigError && e.message.startsWith('FEED=push'));
  assert.equal(loadSettings({ FEED: 'push', ADMIN_TOKEN: 'x'.repeat(16) }).feed, 'push');
});

test('the clock ticks at least ten times per funding interval (a funding time no tick passes through is skipped)', () => {
  assert.throws(
    () => loadSettings({ TICK_MS: '20000', FUNDING_INTERVAL_MS: '10000' }),
    (e: unknown) => e instanceof ConfigError && e.message.startsWith('FUNDING_INTERVAL_MS (10000) must be at least 10 × TICK_MS (20000)'),
  );
  assert.throws(() => loadSettings({ TICK_MS: '60000', FUNDING_INTERVAL_MS: '60000' }), ConfigError);
  assert.equal(loadSettings({ TICK_MS: '60000', FUNDING_INTERVAL_MS: '600000' }).fundingIntervalMs, 600_000);
});

test('history retention of orders that ended without a fill: defaults, explicit values, bad ones refused', () => {
  assert.deepEqual(loadSettings({}).history, { unfilledOrderRetentionMs: 259_200_000, unfilledQuoteRetentionMs: 3_600_000 });
  const set = { HISTORY_UNFILLED_ORDER_RETENTION_MS: '86400000', HISTORY_UNFILLED_QUOTE_RETENTION_MS: '60000' };
  assert.deepEqual(loadSettings(set).history, { unfilledOrderRetentionMs: 86_400_000, unfilledQuoteRetentionMs: 60_000 });
  for (const name of Object.keys(set)) {
    for (const raw of ['999', '1h', '-1']) {
      assert.throws(() => loadSettings({ [name]: raw }), (e: unknown) => e instanceof ConfigError && e.message.startsWith(name), `${name}=${raw}`);
    }
  }
});
