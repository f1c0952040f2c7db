/**
 * The PostgreSQL history answers every read as the SQLite history does. A seeded venue
 * (test/support/rich-venue.ts) runs through the real core: deposits and withdrawals, perps,
 * futures, spot and options, quotes, amends, cancels, liquidations, expiries, marks and DVOL on
 * every tick. Its commands go, in the same batches, through the embedded Journal (SQLite, the
 * projections of src/adapters/store/projections/) and through PgHistoryProjector on a real
 * PostgreSQL server; then every read method of both is asked the same questions (each account's
 * ledger lines, settlements, orders and trades paged and filtered, fills of orders, the public
 * tape, candles of trades, mark and index at every resolution over several ranges and limits,
 * the newest bar before a time, 24-hour stats, DVOL bars, the core's ledger balances) and
 * the answers must be equal; then both prune unfilled ended orders alike (the retention).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import type { Exchange } from '../../../core/exchange.ts';
import type { EngineName, MarginMode, OrderRecord, OrderStatus } from '../../../core/records.ts';
import type { CommittedCommand } from '../../../runtime/journal-port.ts';
import { openDatabase, type Db } from '../../store/database.ts';
import { Journal } from '../../store/journal.ts';
import { historyProjectors } from '../../store/projections/index.ts';
import { RESOLUTIONS, type MarketHistory } from '../../store/projections/market-history.ts';
import type { TradingHistory } from '../../store/projections/trading-history.ts';
import type { WalletHistory } from '../../store/projections/wallet-history.ts';
import { migratePostgres, postgresPool } from '../database.ts';
import { PostgresServer } from '../../../../test/support/postgres.ts';
import { batches, venueCommands } from '../../../../test/support/venue-events.ts';
import { pgHistories, PgHistoryProjector, type PgHistories } from './index.ts';

let server: PostgresServer;
let pool: pg.Pool;
let dir: string;
let db: Db;
let sqlite: { wallet: WalletHistory; trading: TradingHistory; market: MarketHistory };
let pgh: PgHistories;
let commands: CommittedCommand[];
let core: Exchange;

/** What the events name: accounts, orders, settlements, markets, underlyings, the time span. */
const seen = {
  accounts: new Set<number>(),
  orders: [] as number[],
  clientOrderIds: new Set<string>(),
  settlements: [] as string[],
  markets: new Set<string>(),
  underlyings: new Set<string>(),
  firstMs: Number.POSITIVE_INFINITY,
  lastMs: 0,
};

before(async () => {
  ({ commands, exchange: core } = venueCommands(11, 600));
  for (const c of commands) {
    seen.firstMs = Math.min(seen.firstMs, c.ts);
    seen.lastMs = Math.max(seen.lastMs, c.ts);
    for (const e of c.events) {
      if (e.type === 'ledger' && e.entry.account.kind === 'user') seen.accounts.add(e.entry.account.accountId);
      if (e.type === 'order') {
        seen.orders.push(Number(e.order.id));
        if (e.order.clientOrderId !== null) seen.clientOrderIds.add(e.order.clientOrderId);
      }
      if (e.type === 'settlement') seen.settlements.push(e.settlement.id);
      if (e.type === 'mark' || e.type === 'fill') seen.markets.add(e.type === 'mark' ? e.marketId : e.fill.marketId);
      if (e.type === 'board') seen.underlyings.add(e.underlying);
    }
  }
  server = await PostgresServer.start();
  await migratePostgres(server.url);
  pool = postgresPool(server.url);
  pgh = pgHistories(pool);
  dir = mkdtempSync(join(os.tmpdir(), 'pg-history-equivalence-'));
  db = openDatabase(join(dir, 'exchange.sqlite'), 'NORMAL');
  const [wallet, trading, market] = historyProjectors(db);
  sqlite = { wallet, trading, market };
  const journal = new Journal(db, [wallet, trading, market]);
  const projector = new PgHistoryProjector(pool);
  for (const batch of batches(commands)) {
    const first = journal.append(batch);
    journal.project(batch, first);
    await projector.project(batch.map((c, i) => ({ seq: first + i, ts: c.ts, events: c.events })));
  }
  assert.equal(await projector.projectedSeq(), journal.projectedSeq());
});

after(async () => {
  await pool?.end();
  await server?.destroy();
  db?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

test('the venue exercised every kind of history', () => {
  const count = (type: string) => commands.reduce((n, c) => n + c.events.filter((e) => e.type === type).length, 0);
  assert.ok(count('fill') >= 50, `fills: ${count('fill')}`);
  assert.ok(count('settlement') >= 20 && count('order') >= 1000 && count('mark') >= 10_000 && count('board') >= 1000, 'settlements, orders, marks, boards');
  assert.ok(seen.accounts.size >= 8 && seen.markets.size >= 5 && seen.underlyings.size === 2, 'accounts, markets, underlyings');
});

test('ledger lines, settlements and the insurance fund read alike', async () => {
  for (const account of seen.accounts) {
    assert.deepEqual(await pgh.wallet.history(account, 1000), sqlite.wallet.history(account, 1000));
    // Paged backwards, 7 at a time, to the first line.
    for (let beforeId: number | undefined; ;) {
      const page = sqlite.wallet.history(account, 7, beforeId);
      assert.deepEqual(await pgh.wallet.history(account, 7, beforeId), page);
      if (page.length < 7) break;
      beforeId = page[page.length - 1]!.id;
    }
    for (const kind of [undefined, 'deposit', 'withdraw'] as const) {
      for (const status of [undefined, 'pending', 'confirmed', 'failed'] as const) {
        const q = { accountId: account, kind, status, limit: 100 };
        assert.deepEqual(await pgh.wallet.settlements(q), sqlite.wallet.settlements(q));
      }
      for (let cursor: { createdAt: number; id: string } | undefined; ;) {
        const q = { accountId: account, kind, limit: 3, before: cursor };
        const page = sqlite.wallet.settlements(q);
        assert.deepEqual(await pgh.wallet.settlements(q), page);
        if (page.length < 3) break;
        cursor = { createdAt: page[2]!.createdAt, id: page[2]!.id };
      }
    }
  }
  for (const id of [...seen.settlements, 'wd_999999', 'dep_0']) assert.deepEqual(await pgh.wallet.settlement(id), sqlite.wallet.settlement(id));
  for (const since of [0, seen.firstMs, Math.floor((seen.firstMs + seen.lastMs) / 2), seen.lastMs + 1]) {
    for (const asset of ['USDC', 'BTC']) {
      assert.deepEqual(await pgh.wallet.systemHistory('insurance', asset, since), sqlite.wallet.systemHistory('insurance', asset, since));
    }
  }
  assert.ok(sqlite.wallet.systemHistory('insurance', 'USDC', 0).length > 0, 'the insurance fund moved');
});

test('the recorded balances match the core\'s ledger, and a wrong one is named', async () => {
  const replayed = core;
  assert.deepEqual(await pgh.wallet.replayDifferences(replayed.ledger), []);
  assert.deepEqual(sqlite.wallet.replayDifferences(replayed.ledger), []);
  const key = (await pool.query<{ account_key: string }>("SELECT account_key FROM ledger_balances WHERE account_key LIKE 'u:%' LIMIT 1")).rows[0]!.account_key;
  await pool.query('UPDATE ledger_balances SET balance_after = balance_after + 0.000000000000000001 WHERE account_key = $1', [key]);
  try {
    const differences = await pgh.wallet.replayDifferences(replayed.ledger);
    assert.equal(differences.length, 1);
    assert.match(differences[0]!, new RegExp(`^${key} recorded `));
  } finally {
    await pool.query('UPDATE ledger_balances SET balance_after = balance_after - 0.000000000000000001 WHERE account_key = $1', [key]);
  }
});

test('orders, trades and fills of orders read alike, paged and filtered', async () => {
  for (const id of [...seen.orders, 0, 99_999_999]) assert.deepEqual(await pgh.trading.order(id), sqlite.trading.order(id));
  const statuses: (OrderStatus | undefined)[] = [undefined, 'open', 'filled', 'cancelled', 'rejected', 'expired', 'untriggered'];
  const modes: (MarginMode | undefined)[] = [undefined, 'cross', 'isolated'];
  for (const accountId of seen.accounts) {
    for (const engine of ['linear', 'clob'] as EngineName[]) {
      for (const status of statuses) {
        for (const marginMode of modes) {
          const q = { accountId, engine, limit: 500, status, marginMode };
          assert.deepEqual(await pgh.trading.orders(q), sqlite.trading.orders(q));
        }
      }
      for (const marketId of seen.markets) {
        const q = { accountId, engine, limit: 20, marketId };
        assert.deepEqual(await pgh.trading.orders(q), sqlite.trading.orders(q));
        assert.deepEqual(await pgh.trading.trades(q), sqlite.trading.trades(q));
      }
      for (const clientOrderId of [...seen.clientOrderIds].slice(0, 20)) {
        const q = { accountId, engine, limit: 5, clientOrderId };
        assert.deepEqual(await pgh.trading.orders(q), sqlite.trading.orders(q));
      }
      for (let beforeId: number | undefined; ;) {
        const q = { accountId, engine, limit: 25, beforeId };
        const page = sqlite.trading.orders(q);
        assert.deepEqual(await pgh.trading.orders(q), page);
        const ids = page.map((o) => Number(o.id));
        assert.deepEqual(await pgh.trading.fillsOf(accountId, engine, ids), sqlite.trading.fillsOf(accountId, engine, ids));
        if (page.length < 25) break;
        beforeId = ids[ids.length - 1];
      }
      for (let beforeId: number | undefined; ;) {
        const q = { accountId, engine, limit: 4, beforeId };
        const page = sqlite.trading.trades(q);
        assert.deepEqual(await pgh.trading.trades(q), page);
        if (page.length < 4) break;
        beforeId = Number(page[3]!.tradeId);
      }
    }
  }
  assert.deepEqual(await pgh.trading.fillsOf(1, 'linear', []), new Map());
});

test('the public trade tape reads alike', async () => {
  for (const marketId of [...seen.markets, 'NOPE-PERP']) {
    assert.deepEqual(await pgh.trading.lastPublicTrade(marketId), sqlite.trading.lastPublicTrade(marketId));
    assert.deepEqual(await pgh.trading.publicTrades(marketId, 1000), sqlite.trading.publicTrades(marketId, 1000));
    for (let beforeId: number | undefined; ;) {
      const page = sqlite.trading.publicTrades(marketId, 6, beforeId);
      assert.deepEqual(await pgh.trading.publicTrades(marketId, 6, beforeId), page);
      if (page.length < 6) break;
      beforeId = Number(page[5]!.tradeId);
    }
  }
});

test('candles of trades, mark and index, at every resolution, read alike', async () => {
  const first = Math.floor(seen.firstMs / 1000);
  const last = Math.floor(seen.lastMs / 1000);
  const mid = Math.floor((first + last) / 2);
  const ranges: [number, number][] = [[0, last + 86_400], [first, last], [first + 1234, mid], [mid, mid + 3600], [mid + 17, mid + 17], [last + 60, last + 7200]];
  let bars = 0;
  for (const marketId of [...seen.markets, 'NOPE-PERP']) {
    for (const series of ['trade', 'mark', 'index'] as const) {
      for (const resolution of RESOLUTIONS) {
        for (const [from, to] of ranges) {
          for (const limit of [undefined, 0, 1, 5, 1000]) {
            const expected = sqlite.market.candles(marketId, resolution, from, to, limit, series);
            assert.deepEqual(await pgh.market.candles(marketId, resolution, from, to, limit, series), expected, `${marketId} ${series} ${resolution} [${from}, ${to}] limit ${limit}`);
            bars += expected.length;
          }
        }
        for (const sec of [first - 1, first + 61, mid, mid + 59, last + 1, last + 86_400]) {
          assert.equal(await pgh.market.lastBarBefore(marketId, sec, resolution, series), sqlite.market.lastBarBefore(marketId, sec, resolution, series));
        }
      }
    }
    assert.equal(await pgh.market.lastBarBefore(marketId, mid), sqlite.market.lastBarBefore(marketId, mid));
    for (const now of [seen.firstMs - 1, seen.firstMs + 90_000, Math.floor((seen.firstMs + seen.lastMs) / 2), seen.lastMs, seen.lastMs + 86_400_000 - 1, seen.lastMs + 2 * 86_400_000]) {
      assert.deepEqual(await pgh.market.stats24h(marketId, now), sqlite.market.stats24h(marketId, now));
    }
  }
  assert.ok(bars > 10_000, `bars compared: ${bars}`);
});

test('DVOL bars read alike', async () => {
  const first = Math.floor(seen.firstMs / 1000);
  const last = Math.floor(seen.lastMs / 1000);
  for (const underlying of [...seen.underlyings, 'DOGE']) {
    for (const size of [60, 300, 900, 3600, 14_400, 86_400]) {
      for (const [from, to] of [[0, last + 86_400], [first + 600, last - 600], [last, first]] as const) {
        assert.deepEqual(await pgh.market.dvol.candles(underlying, size, from, to), sqlite.market.dvol.candles(underlying, size, from, to));
      }
    }
  }
  const minutes = sqlite.market.dvol.candles('BTC', 60, 0, last + 60).length;
  assert.ok(minutes >= 5, `BTC DVOL minutes: ${minutes}`);
});

test('the retention prunes the same unfilled ended orders (last: it changes both histories)', async () => {
  const retention = { unfilledOrderRetentionMs: 3_600_000, unfilledQuoteRetentionMs: 600_000 };
  const allOrders = async (h: { orders(q: { accountId: number; engine: EngineName; limit: number }): OrderRecord[] | Promise<OrderRecord[]> }) => {
    const out: OrderRecord[] = [];
    for (const accountId of [...seen.accounts].sort((a, b) => a - b)) for (const engine of ['linear', 'clob'] as const) out.push(...await h.orders({ accountId, engine, limit: 100_000 }));
    return out;
  };
  const before = (await allOrders(sqlite.trading)).length;
  let pruned = 0;
  for (const now of [seen.firstMs + 1_800_000, Math.floor((seen.firstMs + seen.lastMs) / 2), seen.lastMs + 86_400_000]) {
    for (;;) {
      const expected = sqlite.trading.pruneUnfilled(now, retention, 50);
      assert.equal(await pgh.trading.pruneUnfilled(now, retention, 50), expected, `pruned at ${now}`);
      pruned += expected;
      if (expected < 50) break;
    }
    assert.deepEqual(await allOrders(pgh.trading), await allOrders(sqlite.trading));
  }
  assert.ok(pruned > 100 && pruned < before, `pruned ${pruned} of ${before}`);
});
