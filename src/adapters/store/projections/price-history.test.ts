/**
 * Unit tests of the mark and index candles on a temporary SQLite file: synthetic `mark` events go
 * through the market history's `project` inside a transaction (as the journal calls it), across
 * batches, and the reads are checked against hand-computed bars: one-minute OHLC of each series, a
 * minute continued by a later batch, a side without a value recorded as nothing, coarser buckets,
 * `limit` (countback), `lastBarBefore`, markets kept apart and the trade candles untouched.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase, type Db } from '../database.ts';
import { MarketHistory } from './market-history.ts';
import { fx } from '../../../core/money.ts';

/** 2026-01-05T00:00:00Z in Unix seconds (a UTC midnight). */
const D0 = Date.UTC(2026, 0, 5) / 1000;

let dir: string;
let db: Db;
let history: MarketHistory;

/** One journal batch of mark events: [market, second, mark or null, index or null]. */
function batch(ticks: [string, number, string | null, string | null][]): void {
  db.transaction(() => {
    for (const [marketId, sec, mark, index] of ticks) {
      history.project({
        type: 'mark', marketId, at: sec * 1000,
        markPrice: mark === null ? null : fx(mark), indexPrice: index === null ? null : fx(index),
      });
    }
    history.endBatch();
  })();
}

const ohlc = (bars: { t: number; o: string; h: string; l: string; c: string }[]) => bars.map(({ t, o, h, l, c }) => ({ t, o, h, l, c }));

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'price-history-'));
  db = openDatabase(join(dir, 'test.sqlite'));
  history = new MarketHistory(db);
  migrate(db, history.migrations);
});
after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a minute holds the first, highest, lowest and last mark and index, across batches', () => {
  batch([['BTC-PERP', D0 + 1, '100.5', '100'], ['BTC-PERP', D0 + 2, '102', '101.25'], ['BTC-PERP', D0 + 3, null, null]]);
  batch([['BTC-PERP', D0 + 30, '99', '98.5'], ['BTC-PERP', D0 + 59, '100', '99.75']]);
  assert.deepEqual(ohlc(history.candles('BTC-PERP', '1', D0, D0, undefined, 'mark')), [
    { t: D0, o: '100.5', h: '102', l: '99', c: '100' },
  ]);
  const [index] = history.candles('BTC-PERP', '1', D0, D0, undefined, 'index');
  assert.deepEqual(index, { t: D0, o: '100', h: '101.25', l: '98.5', c: '99.75', v: '0', n: 0 });
  assert.deepEqual(history.candles('BTC-PERP', '1', D0, D0), [], 'no trade candle comes from a mark');
});

test('a side without a value records nothing; buckets aggregate; countback; markets apart', () => {
  // Minute 1: index only (no mark yet); minute 2: both; minute 5: both.
  batch([['BTC-PERP', D0 + 60, null, '97'], ['ETH-PERP', D0 + 61, '3000', '2999'], ['BTC-PERP', D0 + 120, '103', '102']]);
  batch([['BTC-PERP', D0 + 300, '104', '103']]);
  assert.deepEqual(history.candles('BTC-PERP', '1', D0, D0 + 600, undefined, 'mark').map((b) => b.t), [D0, D0 + 120, D0 + 300]);
  assert.deepEqual(history.candles('BTC-PERP', '1', D0, D0 + 600, undefined, 'index').map((b) => b.t), [D0, D0 + 60, D0 + 120, D0 + 300]);
  assert.deepEqual(ohlc(history.candles('BTC-PERP', '5', D0, D0 + 600, undefined, 'index')), [
    { t: D0, o: '100', h: '102', l: '97', c: '102' },
    { t: D0 + 300, o: '103', h: '103', l: '103', c: '103' },
  ]);
  assert.deepEqual(ohlc(history.candles('BTC-PERP', '1', D0, D0 + 600, 2, 'mark')), [
    { t: D0 + 120, o: '103', h: '103', l: '103', c: '103' },
    { t: D0 + 300, o: '104', h: '104', l: '104', c: '104' },
  ], 'countback keeps the newest bars');
  assert.deepEqual(ohlc(history.candles('ETH-PERP', 'D', D0, D0, undefined, 'mark')), [{ t: D0, o: '3000', h: '3000', l: '3000', c: '3000' }]);
  assert.equal(history.lastBarBefore('BTC-PERP', D0 + 300, '1', 'mark'), D0 + 120);
  assert.equal(history.lastBarBefore('BTC-PERP', D0 + 120, '1', 'mark'), D0);
  assert.equal(history.lastBarBefore('BTC-PERP', D0 + 120, '1', 'index'), D0 + 60);
  assert.equal(history.lastBarBefore('BTC-PERP', D0, '1', 'index'), null);
  assert.deepEqual(history.candles('SOL-PERP', '1', D0, D0 + 600, undefined, 'index'), []);
});

test('the rows survive reopening the database', () => {
  db.close();
  db = openDatabase(join(dir, 'test.sqlite'));
  history = new MarketHistory(db);
  migrate(db, history.migrations);
  batch([['BTC-PERP', D0 + 301, '90', '91']]);
  assert.deepEqual(ohlc(history.candles('BTC-PERP', '1', D0 + 300, D0 + 300, undefined, 'mark')), [
    { t: D0 + 300, o: '104', h: '104', l: '90', c: '90' },
  ]);
});
