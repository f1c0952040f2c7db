/**
 * Unit tests of the DVOL candles on a temporary SQLite file: synthetic `board` events go through
 * the market history's `project` inside a transaction (as the journal calls it), across batches,
 * and the reads are checked against hand-computed bars: one-minute OHLC, a minute continued by a
 * later batch, ticks without a DVOL recorded as nothing, coarser buckets, [from, to] selection and
 * underlyings kept apart.
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

/** One journal batch of board events: [underlying, second, dvol or null]. */
function batch(ticks: [string, number, string | null][]): void {
  db.transaction(() => {
    for (const [underlying, sec, dvol] of ticks) {
      history.project({ type: 'board', underlying, at: sec * 1000, dvol: dvol === null ? null : fx(dvol) });
    }
    history.endBatch();
  })();
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'dvol-history-'));
  db = openDatabase(join(dir, 'test.sqlite'));
  history = new MarketHistory(db);
  migrate(db, history.migrations);
});
after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a minute holds the first, highest, lowest and last DVOL, across batches', () => {
  batch([['BTC', D0 + 1, '55.1'], ['BTC', D0 + 2, '56.25'], ['BTC', D0 + 3, null]]);
  batch([['BTC', D0 + 30, '54.9'], ['BTC', D0 + 59, '55.5']]);
  assert.deepEqual(history.dvol.candles('BTC', 60, D0, D0), [
    { t: D0, open: '55.1', high: '56.25', low: '54.9', close: '55.5' },
  ]);
});

test('ticks without a DVOL record nothing; buckets aggregate minutes; underlyings stay apart', () => {
  batch([['BTC', D0 + 60, null], ['ETH', D0 + 61, '70'], ['BTC', D0 + 120, '57'], ['BTC', D0 + 300, '58']]);
  const minutes = history.dvol.candles('BTC', 60, D0, D0 + 600);
  assert.deepEqual(minutes.map((b) => b.t), [D0, D0 + 120, D0 + 300]);
  assert.deepEqual(history.dvol.candles('BTC', 300, D0, D0 + 600), [
    { t: D0, open: '55.1', high: '57', low: '54.9', close: '57' },
    { t: D0 + 300, open: '58', high: '58', low: '58', close: '58' },
  ]);
  assert.deepEqual(history.dvol.candles('ETH', 86_400, D0, D0), [{ t: D0, open: '70', high: '70', low: '70', close: '70' }]);
  assert.deepEqual(history.dvol.candles('BTC', 60, D0 + 121, D0 + 299), [], 'bucket starts outside [from, to] are left out');
  assert.deepEqual(history.dvol.candles('SOL', 60, D0, D0 + 600), []);
});
