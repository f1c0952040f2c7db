-- Up Migration
-- When a key's revocation was recorded, on the server's clock (revoked_at is the service's time):
-- the gateways read the revocations recorded since their last read before every API-key check
-- (src/adapters/postgres/identity-changes.ts), as they do for sessions, so a key revoked through
-- one gateway is refused by every other on the client's next request, not a notification later.
ALTER TABLE api_keys ADD COLUMN revocation_recorded_at timestamptz;
CREATE INDEX api_keys_revocation_recorded ON api_keys (revocation_recorded_at) WHERE revocation_recorded_at IS NOT NULL;

-- Down Migration
DROP INDEX api_keys_revocation_recorded;
ALTER TABLE api_keys DROP COLUMN revocation_recorded_at;
