-- Up Migration
-- The distributed mode's history (src/adapters/postgres/history/): the same tables as the embedded
-- SQLite projections (src/adapters/store/projections/), written by PgHistoryProjector from the
-- events of each command, once per seq: `history_watermark` is moved in the same transaction as
-- the rows, and a batch is refused unless the watermark stood just before it. Money, prices and
-- sizes are `numeric` (exact decimals, never floating point); times are Unix ms (`created_at`,
-- `updated_at`) or Unix seconds (`t`, a candle's minute start) as bigint.
CREATE TABLE history_watermark (
  id            integer PRIMARY KEY CHECK (id = 1),
  projected_seq bigint  NOT NULL
);
INSERT INTO history_watermark (id, projected_seq) VALUES (1, 0);

-- Ledger lines of user accounts and of the insurance fund (other system accounts are never read back).
CREATE TABLE ledger_entries (
  id            bigint  PRIMARY KEY,
  tx_id         bigint  NOT NULL,
  account_id    bigint,
  system_name   text,
  bucket        text,
  asset         text    NOT NULL,
  type          text    NOT NULL,
  amount        numeric NOT NULL,
  balance_after numeric NOT NULL,
  ref           text,
  tx_hash       text,
  created_at    bigint  NOT NULL
);
CREATE INDEX ledger_by_account ON ledger_entries (account_id, id) WHERE account_id IS NOT NULL;
CREATE INDEX ledger_by_system ON ledger_entries (system_name, asset, id) WHERE system_name IS NOT NULL;
-- Each recorded account's balance after its last line (ledger.ts ledgerKey), for the replay check.
CREATE TABLE ledger_balances (
  account_key   text    COLLATE "C" PRIMARY KEY,
  balance_after numeric NOT NULL,
  last_id       bigint  NOT NULL
);
-- Ids are `<kind>_<n>`, ordered by (length, bytes) as the SQLite reads do: "C" compares bytes.
CREATE TABLE settlements (
  id             text    COLLATE "C" PRIMARY KEY,
  account_id     bigint  NOT NULL,
  kind           text    NOT NULL,
  status         text    NOT NULL,
  amount         numeric NOT NULL,
  asset          text    NOT NULL,
  wallet_address text    NOT NULL,
  tx_hash        text,
  confirmations  integer NOT NULL,
  failure_reason text,
  created_at     bigint  NOT NULL,
  updated_at     bigint  NOT NULL
);
CREATE INDEX settlements_by_account ON settlements (account_id, created_at DESC, length(id) DESC, id DESC);

-- Every order's latest state.
CREATE TABLE orders (
  id                 bigint  PRIMARY KEY,
  engine             text    NOT NULL,
  account_id         bigint  NOT NULL,
  market_id          text    NOT NULL,
  client_order_id    text,
  side               text    NOT NULL,
  type               text    NOT NULL,
  price              numeric,
  quantity           numeric NOT NULL,
  filled_quantity    numeric NOT NULL,
  remaining_quantity numeric NOT NULL,
  avg_fill_price     numeric,
  status             text    NOT NULL,
  time_in_force      text    NOT NULL,
  post_only          boolean NOT NULL,
  reduce_only        boolean NOT NULL,
  margin_mode        text    NOT NULL,
  stop_price         numeric,
  take_profit_price  numeric,
  stop_loss_price    numeric,
  quote_id           text,
  reject_reason      text,
  created_at         bigint  NOT NULL,
  updated_at         bigint  NOT NULL,
  leverage           numeric
);
CREATE INDEX orders_by_account ON orders (account_id, engine, id DESC);
CREATE INDEX orders_by_client_id ON orders (account_id, client_order_id) WHERE client_order_id IS NOT NULL;
-- Orders that ended without a fill, by the time they ended (the retention's prune, as in SQLite).
CREATE INDEX orders_unfilled_ended_quotes ON orders (updated_at)
  WHERE status IN ('cancelled', 'expired', 'rejected') AND filled_quantity = 0 AND quote_id IS NOT NULL;
CREATE INDEX orders_unfilled_ended_orders ON orders (updated_at)
  WHERE status IN ('cancelled', 'expired', 'rejected') AND filled_quantity = 0 AND quote_id IS NULL;

-- One row per fill and participating account.
CREATE TABLE trades (
  trade_id     bigint  NOT NULL,
  account_id   bigint  NOT NULL,
  engine       text    NOT NULL,
  order_id     bigint  NOT NULL,
  market_id    text    NOT NULL,
  side         text    NOT NULL,
  price        numeric NOT NULL,
  quantity     numeric NOT NULL,
  liquidity    text    NOT NULL,
  fee          numeric NOT NULL,
  fee_bps      numeric NOT NULL,
  realized_pnl numeric NOT NULL,
  margin_mode  text    NOT NULL,
  created_at   bigint  NOT NULL,
  PRIMARY KEY (account_id, engine, trade_id)
);
CREATE INDEX trades_by_order ON trades (account_id, engine, order_id);

-- The public trade tape: one row per fill.
CREATE TABLE market_trades (
  market_id  text    NOT NULL,
  trade_id   bigint  NOT NULL,
  price      numeric NOT NULL,
  quantity   numeric NOT NULL,
  taker_side text    NOT NULL,
  created_at bigint  NOT NULL,
  PRIMARY KEY (market_id, trade_id)
);

-- One-minute candles: trades (v base quantity, q quote notional, n fills), mark and index, DVOL.
CREATE TABLE candles_1m (
  market_id text    NOT NULL,
  t         bigint  NOT NULL,
  o numeric NOT NULL, h numeric NOT NULL, l numeric NOT NULL, c numeric NOT NULL,
  v numeric NOT NULL, q numeric NOT NULL, n integer NOT NULL,
  PRIMARY KEY (market_id, t)
);
CREATE TABLE prices_1m (
  market_id text   NOT NULL,
  t         bigint NOT NULL,
  mo numeric, mh numeric, ml numeric, mc numeric,
  io numeric, ih numeric, il numeric, ic numeric,
  PRIMARY KEY (market_id, t)
);
CREATE TABLE dvol_1m (
  underlying text   NOT NULL,
  t          bigint NOT NULL,
  o numeric NOT NULL, h numeric NOT NULL, l numeric NOT NULL, c numeric NOT NULL,
  PRIMARY KEY (underlying, t)
);

-- Down Migration
DROP TABLE dvol_1m;
DROP TABLE prices_1m;
DROP TABLE candles_1m;
DROP TABLE market_trades;
DROP TABLE trades;
DROP TABLE orders;
DROP TABLE settlements;
DROP TABLE ledger_balances;
DROP TABLE ledger_entries;
DROP TABLE history_watermark;
