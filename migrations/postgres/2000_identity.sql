-- Up Migration
-- The gateways' identity records in the distributed mode (src/adapters/postgres/identity-store.ts),
-- the same tables as the embedded SQLite store's (src/adapters/store/auth-store.ts) with the same
-- protection: an API key's row holds the SHA-256 of its secret only; the session signing secret is
-- kept as is (it signs), readable only by the database's own roles, unless JWT_SECRET(_FILE) keeps
-- it out of the database. Times are epoch milliseconds (bigint), as in SQLite.
CREATE TABLE siwe_nonces (
  nonce      text PRIMARY KEY,
  address    text   NOT NULL,
  requester  text   NOT NULL,
  issued_at  bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX siwe_nonces_expiry ON siwe_nonces (expires_at);
CREATE INDEX siwe_nonces_owner ON siwe_nonces (address, requester);

CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  address      text   NOT NULL,
  name         text   NOT NULL,
  scope        text   NOT NULL CHECK (scope IN ('read', 'trade')),
  allowed_ips  jsonb  NOT NULL,
  secret_hash  bytea  NOT NULL,
  expires_at   bigint,
  created_at   bigint NOT NULL,
  last_used_at bigint,
  revoked_at   bigint
);
CREATE INDEX api_keys_by_address ON api_keys (address, created_at);

-- recorded_at (the server's clock): the gateways' poll of recent revocations, the safety net for a
-- lost notification, reads by it.
CREATE TABLE revoked_sessions (
  jti         text PRIMARY KEY,
  expires_at  bigint      NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX revoked_sessions_recorded ON revoked_sessions (recorded_at);

CREATE TABLE secrets (
  name  text PRIMARY KEY,
  value bytea NOT NULL
);

-- Rate-limit budgets shared by the gateways (src/adapters/postgres/rate-budgets.ts): one counter per
-- key and window. UNLOGGED: a budget is worth nothing after a crash (the embedded mode keeps them
-- in memory and loses them on restart), so its writes skip the WAL.
CREATE UNLOGGED TABLE rate_budgets (
  key          text   NOT NULL,
  window_start bigint NOT NULL,
  expires_at   bigint NOT NULL,
  used         bigint NOT NULL,
  PRIMARY KEY (key, window_start)
);
CREATE INDEX rate_budgets_expiry ON rate_budgets (expires_at);

-- Down Migration
DROP TABLE rate_budgets;
DROP TABLE secrets;
DROP TABLE revoked_sessions;
DROP TABLE api_keys;
DROP TABLE siwe_nonces;
