/**
 * Retention of the trading history on a real SQLite file (retention.ts, trading-history.ts
 * `pruneUnfilled`): exactly the orders that ended (cancelled, expired, rejected) with nothing filled
 * longer than their retention ago are deleted — bulk-quote orders after theirs, a client's own orders
 * after theirs, strictly after, oldest first, a chunk at a time — while open, untriggered, filled and
 * partly filled orders and every fill stay; the deletes go through the partial indexes (no table
 * scan), and a chunk leaves the connection's `synchronous` level as it found it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, test } from 'node:test';
import type { ExchangeEvent } from '../../../core/events.ts';
import { fx } from '../../../core/money.ts';
import type { OrderRecord, OrderStatus } from '../../../core/records.ts';
import { openDatabase, type Db } from '../database.ts';
import { Journal } from '../journal.ts';
import { historyProjectors } from './index.ts';
import { UnfilledOrderPruner } from './retention.ts';
import type { TradingHistory } from './trading-history.ts';

const dir = mkdtempSync(join(os.tmpdir(), 'history-retention-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const RETENTION = { unfilledQuoteRetentionMs: 60_000, unfilledOrderRetentionMs: 600_000 };
let db: Db;
let trading: TradingHistory;
let file = 0;

beforeEach(() => {
  db = openDatabase(join(dir, `exchange-${++file}.sqlite`));
  const projectors = historyProjectors(db);
  new Journal(db, projectors); // applies the migrations
  trading = projectors[1];
});

function order(id: number, status: OrderStatus, endedAt: number, over: Partial<OrderRecord> = {}): void {
  const o: OrderRecord = {
    id: String(id), engine: 'linear', accountId: 7, clientOrderId: null, marketId: 'BTC-PERP', side: 'buy',
    type: 'limit', price: fx('99000'), quantity: fx('0.1'), filledQuantity: 0n, remainingQuantity: fx('0.1'),
    avgFillPrice: null, status, timeInForce: 'gtc', postOnly: false, reduceOnly: false, marginMode: 'cross',
    stopPrice: null, takeProfitPrice: null, stopLossPrice: null, quoteId: null, rejectReason: null,
    createdAt: endedAt - 5_000, updatedAt: endedAt, leverage: null, ...over,
  };
  trading.project({ type: 'order', order: o } as ExchangeEvent);
}

function fill(tradeId: number, orderId: number, at: number): void {
  const side = { accountId: 7, orderId: String(orderId), side: 'buy' as const, liquidity: 'maker' as const, fee: 0n, feeBps: 0n, realizedPnl: 0n, marginMode: 'cross' as const };
  const taker = { ...side, accountId: 8, orderId: String(orderId + 1000), side: 'sell' as const, liquidity: 'taker' as const };
  const f = { tradeId: String(tradeId), engine: 'linear', marketId: 'BTC-PERP', price: fx('99000'), quantity: fx('0.05'), takerSide: 'sell', maker: side, taker, at };
  trading.project({ type: 'fill', fill: f } as ExchangeEvent);
}

const ids = () => (db.prepare('SELECT id FROM orders ORDER BY id').all() as { id: number }[]).map((r) => r.id);
const tradeCount = () => (db.prepare('SELECT count(*) AS n FROM trades').get() as { n: number }).n;

describe('pruneUnfilled', () => {
  test('deletes exactly the unfilled ended orders past their retention, quotes sooner', () => {
    const quote = { quoteId: 'mm' };
    order(1, 'cancelled', 1_000, quote); // replaced quote
    order(2, 'expired', 1_000, quote);
    order(3, 'rejected', 1_000, quote);
    order(4, 'cancelled', 1_000); // a client's own
    order(5, 'expired', 1_000);
    order(6, 'open', 1_000, quote); // live: never
    order(7, 'untriggered', 1_000, { type: 'market', price: null, stopPrice: fx('98000') });
    order(8, 'filled', 1_000, { filledQuantity: fx('0.1'), remainingQuantity: 0n, avgFillPrice: fx('99000') });
    order(9, 'cancelled', 1_000, { ...quote, filledQuantity: fx('0.05'), remainingQuantity: fx('0.05') });
    order(10, 'cancelled', 1_000, { filledQuantity: fx('0.05'), remainingQuantity: fx('0.05') });
    order(11, 'cancelled', 50_000, quote); // ended later: not yet
    fill(1, 9, 900);
    fill(2, 10, 900);
    const trades = tradeCount();

    assert.equal(trading.pruneUnfilled(61_000, RETENTION, 100), 0, 'exactly the retention: kept');
    assert.equal(trading.pruneUnfilled(61_001, RETENTION, 100), 3, 'quotes past 60 s');
    assert.deepEqual(ids(), [4, 5, 6, 7, 8, 9, 10, 11]);
    assert.equal(trading.order(1), undefined, 'reads find no pruned order');
    assert.equal(trading.pruneUnfilled(110_001, RETENTION, 100), 1, 'the later quote');
    assert.equal(trading.pruneUnfilled(601_000, RETENTION, 100), 0);
    assert.equal(trading.pruneUnfilled(601_001, RETENTION, 100), 2, 'own orders past 600 s');
    assert.deepEqual(ids(), [6, 7, 8, 9, 10], 'live, filled and partly filled orders stay');
    assert.equal(trading.pruneUnfilled(10 ** 12, RETENTION, 100), 0, 'forever');
    assert.equal(tradeCount(), trades, 'fills stay');
    assert.equal(trading.fillsOf(7, 'linear', [9, 10]).size, 2);
  });

  test('a chunk deletes at most `limit` rows, the oldest ended first, quotes before own orders', () => {
    for (let id = 1; id <= 5; id++) order(id, 'cancelled', 6_000 - id * 1_000, { quoteId: 'mm' });
    order(6, 'cancelled', 0);
    assert.equal(trading.pruneUnfilled(10 ** 9, RETENTION, 2), 2);
    assert.deepEqual(ids(), [1, 2, 3, 6], 'ended at 0 and 1,000 first');
    assert.equal(trading.pruneUnfilled(10 ** 9, RETENTION, 2), 2);
    assert.equal(trading.pruneUnfilled(10 ** 9, RETENTION, 2), 2, 'the last quote, then an own order');
    assert.deepEqual(ids(), []);
  });

  test('the deletes find their rows through the partial indexes, not a scan of the table', () => {
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(0, 10) as { detail: string }[]).map((r) => r.detail).join('; ');
    const unfilled = `status IN ('cancelled', 'expired', 'rejected') AND filled_quantity = '0'`;
    for (const [index, kind] of [['orders_unfilled_ended_quotes', 'IS NOT NULL'], ['orders_unfilled_ended_orders', 'IS NULL']]) {
      const detail = plan(`SELECT id FROM orders WHERE ${unfilled} AND quote_id ${kind} AND updated_at < ? ORDER BY updated_at LIMIT ?`);
      assert.match(detail, new RegExp(`SEARCH orders USING (COVERING )?INDEX ${index}`), detail);
      assert.doesNotMatch(detail, /SCAN orders/, detail);
    }
  });
});

describe('UnfilledOrderPruner', () => {
  test('one chunk per call, in its own transaction, and the append durability is restored', () => {
    for (let id = 1; id <= 5; id++) order(id, 'cancelled', 1_000, { quoteId: 'mm' });
    const pruner = new UnfilledOrderPruner(db, trading, RETENTION, 3);
    const before = db.pragma('synchronous', { simple: true });
    assert.equal(pruner.pruneChunk(100_000), 3);
    assert.equal(pruner.pruneChunk(100_000), 2);
    assert.equal(pruner.pruneChunk(100_000), 0);
    assert.equal(db.pragma('synchronous', { simple: true }), before, 'FULL again for the journal');
    assert.equal(db.inTransaction, false);
  });
});
