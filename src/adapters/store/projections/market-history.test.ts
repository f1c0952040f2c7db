/**
 * Unit tests of the market-history projection on a temporary SQLite file: synthetic `fill`
 * events go through `project` inside a transaction (as the journal calls it) and the reads are
 * checked against hand-computed bars. Covers one-minute OHLC and exact decimal volumes, every
 * coarser resolution including 240-minute and UTC-day buckets, the [from, to] bar selection,
 * `limit` (UDF countback), `lastBarBefore`, the 24-hour stats window edges, market isolation,
 * and that the rows survive reopening the database.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase, type Db } from '../database.ts';
import {
  decimalGreater,
  MarketHistory,
  RESOLUTION_SECONDS,
  RESOLUTIONS,
} from './market-history.ts';
import { storedDecimal } from '../stored-decimal.ts';
import type { FillRecord, FillSide } from '../../../core/records.ts';
import { formatDecimal, fx } from '../../../core/money.ts';

const DAY = 86_400;
/** 2026-01-05T00:00:00Z in Unix seconds (a UTC midnight). */
const D0 = Date.UTC(2026, 0, 5) / 1000;

const side = (accountId: number, s: 'buy' | 'sell', liquidity: 'maker' | 'taker'): FillSide => ({
  accountId,
  orderId: String(accountId),
  side: s,
  liquidity,
  fee: 0n,
  feeBps: 0n,
  realizedPnl: 0n,
  marginMode: 'cross',
});

let tradeId = 0;
function fill(marketId: string, price: string, quantity: string, atSec: number, extraMs = 0): FillRecord {
  return {
    tradeId: String(++tradeId),
    engine: 'linear',
    marketId,
    price: fx(price),
    quantity: fx(quantity),
    takerSide: 'buy',
    maker: side(1, 'sell', 'maker'),
    taker: side(2, 'buy', 'taker'),
    at: atSec * 1000 + extraMs,
  };
}


let dir: string;
let db: Db;
let history: MarketHistory;

/** One journal batch, as the Journal drives a projector: every event, then endBatch. */
function feed(fills: FillRecord[]): void {
  db.transaction(() => {
    for (const f of fills) history.project({ type: 'fill', fill: f });
    history.endBatch();
  })();
}

function fresh(): void {
  db.exec('DELETE FROM candles_1m');
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'market-history-'));
  db = openDatabase(join(dir, 'test.sqlite'));
  history = new MarketHistory(db);
  migrate(db, history.migrations);
});
after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('one-minute candles', () => {
  test('OHLC, exact volumes and count within a minute', () => {
    fresh();
    feed([
      fill('BTC-PERP', '100000.1', '0.1', D0 + 5),
      fill('BTC-PERP', '100010', '0.2', D0 + 10),
      fill('BTC-PERP', '99990.5', '0.0003', D0 + 20),
      fill('BTC-PERP', '100001', '0.0001', D0 + 59, 999),
    ]);
    const bars = history.candles('BTC-PERP', '1', D0, D0);
    assert.deepEqual(bars, [
      { t: D0, o: '100000.1', h: '100010', l: '99990.5', c: '100001', v: '0.3004', n: 4 },
    ]);
    // q = 10000.01 + 20002 + 29.99715 + 10.0001, stored exactly as text
    assert.deepEqual(db.prepare('SELECT q FROM candles_1m').all(), [{ q: '30042.00725' }]);
  });

  test('0.1 + 0.2 is exactly 0.3 and the next minute starts a new row', () => {
    fresh();
    feed([
      fill('ETH-PERP', '3000', '0.1', D0 + 1),
      fill('ETH-PERP', '3000', '0.2', D0 + 2),
      fill('ETH-PERP', '3001', '1', D0 + 60),
    ]);
    const rows = db.prepare('SELECT t, v, q, n FROM candles_1m ORDER BY t').all();
    assert.deepEqual(rows, [
      { t: D0, v: '0.3', q: '900', n: 2 },
      { t: D0 + 60, v: '1', q: '3001', n: 1 },
    ]);
    const sql = 'SELECT DISTINCT typeof(o) AS a, typeof(v) AS b, typeof(q) AS c FROM candles_1m';
    const types = db.prepare(sql).all();
    assert.deepEqual(types, [{ a: 'text', b: 'text', c: 'text' }]);
  });

  test('markets are kept apart', () => {
    fresh();
    feed([fill('BTC-PERP', '1', '1', D0), fill('ETH-PERP', '2', '1', D0)]);
    assert.deepEqual(history.candles('BTC-PERP', '1', D0, D0).map((c) => c.o), ['1']);
    assert.deepEqual(history.candles('ETH-PERP', '1', D0, D0).map((c) => c.o), ['2']);
    assert.deepEqual(history.candles('SOL-PERP', '1', D0, D0 + DAY), []);
  });
});

describe('aggregated resolutions', () => {
  /** One fill per minute for 10 minutes: price 100 + i, quantity 1. */
  const tenMinutes = () =>
    Array.from({ length: 10 }, (_, i) => fill('BTC-PERP', String(100 + i), '1', D0 + i * 60 + 30));

  test('5-minute buckets take open of the first minute, close of the last, max/min, summed volume', () => {
    fresh();
    const fills = tenMinutes();
    fills.push(fill('BTC-PERP', '90', '0.5', D0 + 2 * 60 + 40)); // a low inside the first bucket
    fills.sort((a, b) => a.at - b.at);
    feed(fills);
    assert.deepEqual(history.candles('BTC-PERP', '5', D0, D0 + 600), [
      { t: D0, o: '100', h: '104', l: '90', c: '104', v: '5.5', n: 6 },
      { t: D0 + 300, o: '105', h: '109', l: '105', c: '109', v: '5', n: 5 },
    ]);
  });

  test('every resolution aligns bucket starts to floor(t / size) x size', () => {
    fresh();
    const times = [D0 + 1, D0 + 899, D0 + 3599, D0 + 3600, D0 + 14_399, D0 + 14_400, D0 + DAY - 1, D0 + DAY];
    feed(times.map((t, i) => fill('BTC-PERP', String(1000 + i), '1', t)));
    for (const r of RESOLUTIONS) {
      const size = RESOLUTION_SECONDS[r];
      const minutes = times.map((t) => Math.floor(t / 60) * 60);
      const expected = [...new Set(minutes.map((m) => Math.floor(m / size) * size))];
      const bars = history.candles('BTC-PERP', r, D0, D0 + DAY);
      assert.deepEqual(bars.map((b) => b.t), expected, `resolution ${r}`);
      assert.equal(bars.reduce((n, b) => n + b.n, 0), times.length, `resolution ${r} loses no trade`);
    }
  });

  test('240-minute buckets start at 00, 04, 08 ... UTC', () => {
    fresh();
    feed([
      fill('BTC-PERP', '10', '1', D0 + 3 * 3600 + 59 * 60),
      fill('BTC-PERP', '12', '2', D0 + 4 * 3600),
      fill('BTC-PERP', '11', '1', D0 + 7 * 3600 + 59 * 60 + 59),
      fill('BTC-PERP', '13', '1', D0 + 8 * 3600),
    ]);
    assert.deepEqual(history.candles('BTC-PERP', '240', D0, D0 + DAY), [
      { t: D0, o: '10', h: '10', l: '10', c: '10', v: '1', n: 1 },
      { t: D0 + 4 * 3600, o: '12', h: '12', l: '11', c: '11', v: '3', n: 2 },
      { t: D0 + 8 * 3600, o: '13', h: '13', l: '13', c: '13', v: '1', n: 1 },
    ]);
  });

  test('day buckets split at UTC midnight', () => {
    fresh();
    feed([
      fill('BTC-PERP', '50', '1', D0 - 1),
      fill('BTC-PERP', '60', '1', D0),
      fill('BTC-PERP', '40', '1', D0 + 12 * 3600),
      fill('BTC-PERP', '55', '1', D0 + DAY - 1),
      fill('BTC-PERP', '70', '0.25', D0 + DAY),
    ]);
    assert.deepEqual(history.candles('BTC-PERP', 'D', D0 - DAY, D0 + DAY), [
      { t: D0 - DAY, o: '50', h: '50', l: '50', c: '50', v: '1', n: 1 },
      { t: D0, o: '60', h: '60', l: '40', c: '55', v: '3', n: 3 },
      { t: D0 + DAY, o: '70', h: '70', l: '70', c: '70', v: '0.25', n: 1 },
    ]);
  });

  test('bars whose start lies in [from, to] are returned; an unaligned from skips its bucket', () => {
    fresh();
    feed(tenMinutes());
    const starts = (from: number, to: number) => history.candles('BTC-PERP', '5', from, to).map((b) => b.t);
    assert.deepEqual(starts(D0, D0 + 300), [D0, D0 + 300]);
    assert.deepEqual(starts(D0, D0 + 299), [D0]);
    assert.deepEqual(starts(D0 + 1, D0 + 600), [D0 + 300]);
    assert.deepEqual(starts(D0 + 301, D0 + 599), []);
    assert.deepEqual(starts(D0 + 300, D0 + 300), [D0 + 300]);
  });

  test('limit keeps the newest bars, fully aggregated', () => {
    fresh();
    feed(tenMinutes());
    const newest = history.candles('BTC-PERP', '1', D0, D0 + 600, 3).map((b) => b.t);
    assert.deepEqual(newest, [D0 + 420, D0 + 480, D0 + 540]);
    const last = history.candles('BTC-PERP', '5', D0, D0 + 600, 1);
    assert.deepEqual(last, [{ t: D0 + 300, o: '105', h: '109', l: '105', c: '109', v: '5', n: 5 }]);
    assert.equal(history.candles('BTC-PERP', '5', D0, D0 + 600, 10).length, 2);
  });
});

describe('decimal helpers', () => {
  test('decimalGreater orders stored decimals exactly', () => {
    const ordered = [
      '-2.5', '-1', '0', '0.05', '0.5', '0.51', '9.999999999999999999', '10', '10.000000000000000001',
      '99', '100',
    ];
    for (let i = 0; i < ordered.length; i++) {
      for (let j = 0; j < ordered.length; j++) {
        const [a, b] = [ordered[i] as string, ordered[j] as string];
        assert.equal(decimalGreater(a, b), i > j, `${a} > ${b}`);
      }
    }
  });

  test('storedDecimal reads formatDecimal output back exactly', () => {
    for (const text of ['0', '1', '-1', '0.000000000000000001', '-0.5', '123456789.123456789', '100000']) {
      assert.equal(storedDecimal(text), fx(text));
      assert.equal(formatDecimal(storedDecimal(text)), text);
    }
    // past the 20 integer digits a request may carry (a balance grown by many deposits)
    const big = `${'9'.repeat(25)}.5`;
    assert.equal(formatDecimal(storedDecimal(big)), big);
  });
});

describe('lastBarBefore', () => {
  test('newest bar starting before the time, at the requested resolution', () => {
    fresh();
    feed([fill('BTC-PERP', '1', '1', D0 + 65), fill('BTC-PERP', '1', '1', D0 + 3600 + 610)]);
    assert.equal(history.lastBarBefore('BTC-PERP', D0), null);
    assert.equal(history.lastBarBefore('BTC-PERP', D0 + 60), null);
    assert.equal(history.lastBarBefore('BTC-PERP', D0 + 61), D0 + 60);
    assert.equal(history.lastBarBefore('BTC-PERP', D0 + 3600 + 600), D0 + 60);
    assert.equal(history.lastBarBefore('BTC-PERP', D0 + 9999), D0 + 3600 + 600);
    // 15-minute bars: the 01:00 bucket (start before 01:05) holds the 01:10 trade.
    assert.equal(history.lastBarBefore('BTC-PERP', D0 + 3600 + 300, '15'), D0 + 3600);
    assert.equal(history.lastBarBefore('BTC-PERP', D0 + 3600, '15'), D0);
    assert.equal(history.lastBarBefore('BTC-PERP', D0 + DAY, 'D'), D0);
    assert.equal(history.lastBarBefore('ETH-PERP', D0 + DAY), null);
  });
});

describe('stats24h', () => {
  const nowMs = (D0 + DAY) * 1000 + 30_000; // 30 s into the first minute of day 2

  test('no trades: null prices, zero volumes', () => {
    fresh();
    assert.deepEqual(history.stats24h('BTC-PERP', nowMs), {
      open: null, high: null, low: null, last: null, volumeBase: 0n, volumeQuote: 0n, trades: 0,
    });
  });

  test('window holds the minute candles started after now - 24 h, up to now', () => {
    fresh();
    feed([
      fill('BTC-PERP', '999', '9', D0), // minute starts at now - 24 h - 30 s: out
      fill('BTC-PERP', '100', '0.1', D0 + 60), // minute starts 23 h 59 m 30 s ago: in
      fill('BTC-PERP', '120', '0.2', D0 + 12 * 3600),
      fill('BTC-PERP', '80', '0.3', D0 + 20 * 3600),
      fill('BTC-PERP', '110', '0.4', D0 + DAY, 10_000), // the current minute: in
      fill('BTC-PERP', '5000', '1', D0 + DAY + 60), // after now: out
    ]);
    const s = history.stats24h('BTC-PERP', nowMs);
    assert.deepEqual(
      {
        ...s,
        open: s.open && formatDecimal(s.open),
        high: s.high && formatDecimal(s.high),
        low: s.low && formatDecimal(s.low),
        last: s.last && formatDecimal(s.last),
        volumeBase: formatDecimal(s.volumeBase),
        volumeQuote: formatDecimal(s.volumeQuote),
      },
      { open: '100', high: '120', low: '80', last: '110', volumeBase: '1', volumeQuote: '102', trades: 4 },
    );
  });

  test('edge: a minute starting exactly 24 h before now is out, one starting a second later is in', () => {
    fresh();
    const now = (D0 + DAY + 60) * 1000; // exactly a minute boundary
    feed([fill('BTC-PERP', '1', '1', D0 + 60), fill('BTC-PERP', '2', '1', D0 + 120)]);
    assert.equal(history.stats24h('BTC-PERP', now).trades, 1);
    assert.equal(history.stats24h('BTC-PERP', now - 1).trades, 2);
    assert.equal(history.stats24h('BTC-PERP', now + 59_999).trades, 1);
    assert.equal(history.stats24h('BTC-PERP', now + 60_000).trades, 0);
  });
});

describe('durability and speed', () => {
  test('rows survive reopening the database; migration id 0300_market_history is recorded', () => {
    fresh();
    feed([fill('BTC-PERP', '42', '1.5', D0)]);
    const path = join(dir, 'test.sqlite');
    const other = openDatabase(path);
    try {
      const reread = new MarketHistory(other);
      migrate(other, reread.migrations); // already applied: a no-op
      assert.deepEqual(reread.candles('BTC-PERP', '1', D0, D0), [
        { t: D0, o: '42', h: '42', l: '42', c: '42', v: '1.5', n: 1 },
      ]);
      const ids = other.prepare("SELECT id FROM schema_migrations WHERE id = '0300_market_history'").all();
      assert.equal(ids.length, 1);
    } finally {
      other.close();
    }
  });

  test('20,000 fills project and a 14-day 1-minute read aggregates quickly', () => {
    fresh();
    const fills = Array.from({ length: 20_000 }, (_, i) =>
      fill('BTC-PERP', `${100000 + (i % 97)}.5`, '0.0001', D0 + i * 60));
    const t0 = performance.now();
    feed(fills);
    const t1 = performance.now();
    const bars = history.candles('BTC-PERP', 'D', D0, D0 + 14 * DAY);
    const t2 = performance.now();
    assert.equal(bars.reduce((n, b) => n + b.n, 0), 20_000);
    assert.equal(formatDecimal(bars.reduce((v, b) => v + fx(b.v), 0n)), '2');
    console.log(`project ${(t1 - t0).toFixed(0)} ms, aggregate ${(t2 - t1).toFixed(0)} ms`);
    assert.ok(t1 - t0 < 5000 && t2 - t1 < 2000);
  });
});
