-- Up Migration
-- The distributed mode's durable record (src/adapters/postgres/command-log.ts): one row per
-- command the leader core applied, in seq order, each row's command in the journal's compact
-- encoding and linked into the same CRC-32 chain as the embedded journal (docs/architecture.md).
-- command_id is the gateway's id of the submission: unique, so a retried submission is applied once.
CREATE TABLE command_log (
  seq        bigint PRIMARY KEY,
  epoch      bigint NOT NULL,
  ts         bigint NOT NULL,
  command_id text UNIQUE,
  command    bytea  NOT NULL,
  chain      bigint NOT NULL
);
-- The leader's fencing token: a core that wins the advisory lock bumps the epoch; every append
-- checks, in its own transaction, that the epoch is still the one it bumped (a deposed leader's
-- append fails).
CREATE TABLE core_leader (
  id     integer PRIMARY KEY CHECK (id = 1),
  epoch  bigint NOT NULL,
  holder text,
  since  timestamptz
);
INSERT INTO core_leader (id, epoch) VALUES (1, 0);

-- Down Migration
DROP TABLE core_leader;
DROP TABLE command_log;
