/**
 * The index board's cached index against a direct computation on random input streams: quotes
 * arriving late, early or stale, pushes, and reads repeated at the same time or moving forward.
 * A quote stamped in the future is never kept, so it cannot silence its source.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { indexPrice, MAX_FUTURE_SKEW_MS, type SourceQuote } from '../../pricing/index-price.ts';
import { IndexBoard, type IndexSettings } from './index-board.ts';

const settings: IndexSettings = { maxAgeMs: 10_000, minSources: 2, clampBps: 50, decimals: 8, twapRetentionMs: 3_600_000 };

/** The index from scratch: a fresh push wins, else the sources' latest quotes. */
function direct(sources: Map<string, SourceQuote>, push: SourceQuote | null, now: number) {
  if (push !== null && push.ts >= now - settings.maxAgeMs) return { price: push.price, sourceTs: push.ts, sources: 1 };
  const r = indexPrice([...sources.values()], now, settings);
  return r === null ? null : { price: r.price, sourceTs: r.sourceTs, sources: r.used };
}

const op = fc.oneof(
  fc.record({ kind: fc.constant('observe' as const), source: fc.constantFrom('a', 'b', 'c', 'd'), offset: fc.integer({ min: -25_000, max: 2_000 }), price: fc.bigInt({ min: 99_000n, max: 101_000n }) }),
  fc.record({ kind: fc.constant('publish' as const), offset: fc.integer({ min: -25_000, max: 0 }), price: fc.bigInt({ min: 99_000n, max: 101_000n }) }),
  fc.record({ kind: fc.constant('read' as const), advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12_000 })) }),
);

test('the cached index always equals the index computed from scratch', () => {
  fc.assert(
    fc.property(fc.array(op, { minLength: 1, maxLength: 80 }), (ops) => {
      const board = new IndexBoard(settings);
      const sources = new Map<string, SourceQuote>();
      let push: SourceQuote | null = null;
      let now = 1_000_000;
      for (const o of ops) {
        if (o.kind === 'observe') {
          const q = { source: o.source, price: o.price * 10n ** 18n, ts: now + o.offset };
          board.observe('BTC', [q], now);
          const prev = sources.get(q.source);
          const future = q.ts > now + MAX_FUTURE_SKEW_MS; // never kept
          if (!future && (prev === undefined || q.ts >= prev.ts)) sources.set(q.source, q);
        } else if (o.kind === 'publish') {
          push = { source: 'push', price: o.price * 10n ** 18n, ts: now + o.offset };
          board.publish('BTC', push.price, push.ts, now);
        } else {
          now += o.advance;
        }
        assert.deepEqual(board.index('BTC', now), direct(sources, push, now), `at ${now}`);
        assert.deepEqual(board.index('BTC', now), direct(sources, push, now), `again at ${now}`);
      }
    }),
    { numRuns: 400 },
  );
});

test('a quote stamped an hour ahead does not silence its source', () => {
  const board = new IndexBoard(settings);
  const usd = (n: bigint) => n * 10n ** 18n;
  const now = 1_000_000;
  board.observe('BTC', [{ source: 'a', price: usd(100_000n), ts: now + 3_600_000 }], now);
  board.observe('BTC', [{ source: 'a', price: usd(100_000n), ts: now + 10 }, { source: 'b', price: usd(100_010n), ts: now + 10 }], now + 10);
  assert.equal(board.index('BTC', now + 20)?.sources, 2, 'both sources count');
});

test('after downtime, the settlement history leaves out the time since the last input went stale', () => {
  const board = new IndexBoard(settings);
  const usd = (n: bigint) => n * 10n ** 18n;
  const t0 = 1_800_000_000_000;
  board.publish('BTC', usd(100_000n), t0, t0);
  board.publish('BTC', usd(110_000n), t0 + 5_000, t0 + 5_000);
  // Nothing runs for 20 minutes (the service is down); the first command after it samples the board.
  board.publish('BTC', usd(100_000n), t0 + 1_200_000, t0 + 1_200_000);
  // 110 000 is fresh for 10 s after its print, to t0 + 15 000 inclusive: it counts for 10 001 ms.
  const expected = (usd(100_000n) * 5_000n + usd(110_000n) * 10_001n) / 15_001n;
  // Before: 110 000 held across the downtime, 1 195 000 of the 1 200 000 ms (109 958.3).
  assert.equal(board.twap('BTC', t0, t0 + 1_200_000), expected);
});

test('a source quoting on keeps the index, and the history, priced without a gap', () => {
  const board = new IndexBoard({ ...settings, minSources: 1 });
  const usd = (n: bigint) => n * 10n ** 18n;
  const t0 = 1_800_000_000_000;
  for (let t = t0; t <= t0 + 60_000; t += 8_000) board.observe('BTC', [{ source: 'a', price: usd(100_000n), ts: t }], t);
  assert.equal(board.twap('BTC', t0, t0 + 56_000), usd(100_000n));
  board.observe('BTC', [{ source: 'a', price: usd(90_000n), ts: t0 + 64_000 }], t0 + 64_000);
  assert.equal(board.twap('BTC', t0, t0 + 64_000), usd(100_000n), 'quotes 8 s apart never leave a gap');
});
