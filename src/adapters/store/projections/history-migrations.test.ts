/**
 * The history tables' later migrations on a database written under their first schema (a venue
 * upgrading in place): trades move to a table clustered by account, engine and trade id, the
 * public tape is filled from them, the ledger's indexes become partial, and each account's balance after its last line is kept. Rows survive, the reads return them as before, the reads use
 * the new keys (query plans), and new rows go where the reads find them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fx } from '../../../core/money.ts';
import { migrate, openDatabase } from '../database.ts';
import { Journal } from '../journal.ts';
import { historyProjectors } from './index.ts';
import { TradingHistory } from './trading-history.ts';
import { WalletHistory } from './wallet-history.ts';

const dir = mkdtempSync(join(os.tmpdir(), 'history-migrations-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('trades and ledger lines written under the first schema survive the upgrade and read as before', () => {
  const db = openDatabase(join(dir, 'exchange.sqlite'));
  const first = (p: { migrations: readonly { id: string; sql: string }[] }) => p.migrations.slice(0, 1);
  migrate(db, [...first(new WalletHistory(db)), ...first(new TradingHistory(db))]);
  const trade = db.prepare(`INSERT INTO trades (trade_id, account_id, engine, order_id, market_id, side, price, quantity,
    liquidity, fee, fee_bps, realized_pnl, margin_mode, created_at) VALUES (?, ?, ?, ?, 'BTC-PERP', 'buy', '100000', '0.1',
    'taker', '5', '5', '0', 'cross', ?)`);
  for (let id = 1; id <= 6; id++) trade.run(id, id % 2 === 0 ? 7 : 8, id === 5 ? 'clob' : 'linear', 100 + id, 1_000 + id);
  const line = db.prepare(`INSERT INTO ledger_entries (id, tx_id, account_id, system_name, bucket, asset, type, amount,
    balance_after, ref, tx_hash, created_at) VALUES (?, ?, ?, ?, ?, 'USDC', 'trade_fee', ?, ?, NULL, NULL, ?)`);
  line.run(1, 1, 7, null, 'perps', '-5', '95', 2_000);
  line.run(2, 1, null, 'insurance', null, '5', '1005', 2_000);
  line.run(3, 2, 7, null, 'perps', '-1', '94', 3_000);

  const [wallet, trading] = historyProjectors(db);
  new Journal(db, [wallet, trading]); // applies the remaining migrations

  const trades = trading.trades({ accountId: 7, engine: 'linear', limit: 10 });
  assert.deepEqual(trades.map((t) => t.tradeId), ['6', '4', '2'], "account 7's linear trades, newest first");
  assert.deepEqual(trading.trades({ accountId: 8, engine: 'linear', limit: 10, beforeId: 3 }).map((t) => t.tradeId), ['1']);
  assert.deepEqual(trading.trades({ accountId: 8, engine: 'clob', limit: 10 }).map((t) => t.tradeId), ['5']);
  assert.equal(trades[0]!.fee, fx('5'));
  // The public tape is filled from the kept fills (one taker row each): newest first, no account.
  assert.deepEqual(trading.publicTrades('BTC-PERP', 4).map((t) => [t.tradeId, t.takerSide, t.createdAt]),
    [['6', 'buy', 1_006], ['5', 'buy', 1_005], ['4', 'buy', 1_004], ['3', 'buy', 1_003]]);
  assert.deepEqual(trading.publicTrades('BTC-PERP', 10, 3).map((t) => t.tradeId), ['2', '1']);
  assert.equal(trading.lastPublicTrade('BTC-PERP')?.price, fx('100000'));
  assert.deepEqual(wallet.history(7, 10).map((e) => e.id), [3, 1]);
  assert.deepEqual(wallet.systemHistory('insurance', 'USDC', 0).map((e) => e.balanceAfter), [fx('1005')]);

  const schema = (name: string) => (db.prepare('SELECT sql FROM sqlite_master WHERE name = ?').get(name) as { sql: string }).sql;
  assert.match(schema('trades'), /WITHOUT ROWID/);
  assert.match(schema('ledger_by_account'), /WHERE account_id IS NOT NULL/);
  assert.match(schema('ledger_by_system'), /WHERE system_name IS NOT NULL/);
  const plan = (sql: string, ...args: unknown[]) =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((r) => r.detail).join('; ');
  assert.match(plan('SELECT price FROM market_trades WHERE market_id = ? AND trade_id < ? ORDER BY trade_id DESC LIMIT 5', 'BTC-PERP', 99), /SEARCH market_trades USING PRIMARY KEY/);
  assert.match(plan('SELECT * FROM trades WHERE account_id = ? AND engine = ? AND trade_id < ? ORDER BY trade_id DESC LIMIT 5', 7, 'linear', 99), /SEARCH trades USING PRIMARY KEY/);
  assert.match(plan('SELECT id FROM ledger_entries WHERE account_id = ? AND id < ? ORDER BY id DESC LIMIT 5', 7, 99), /ledger_by_account/);
  assert.match(plan("SELECT amount FROM ledger_entries WHERE system_name = ? AND asset = ? AND created_at >= ? ORDER BY id", 'insurance', 'USDC', 0), /ledger_by_system/);

  // The kept balances (the restart's replay check) start from each account's last line.
  const kept = db.prepare('SELECT account_key, balance_after, last_id FROM ledger_balances ORDER BY account_key').all();
  assert.deepEqual(kept, [
    { account_key: 's:insurance:USDC', balance_after: '1005', last_id: 2 },
    { account_key: 'u:7:perps:USDC', balance_after: '94', last_id: 3 },
  ]);
  assert.deepEqual(wallet.keptBalancesDisagreeWithLines(), []);

  trade.run(9, 7, 'linear', 109, 1_009);
  assert.equal(trading.trades({ accountId: 7, engine: 'linear', limit: 1 })[0]!.tradeId, '9', 'a new row reads first');
  assert.throws(() => trade.run(9, 7, 'linear', 110, 1_010), /UNIQUE|PRIMARY/, 'one row per trade and account');
  db.close();
});
