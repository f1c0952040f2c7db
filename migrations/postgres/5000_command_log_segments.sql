-- Up Migration
-- The command log's archive (src/adapters/postgres/command-log-archive.ts, docs/architecture.md
-- "Distributed mode: archiving the command log"): runs of command_log rows that a core snapshot
-- covers, moved here by the projector, each row holding the same bytes as an archived journal
-- segment file of the embedded mode (src/adapters/store/journal-segments.ts: a CRC-checked header
-- naming the first and last seq, the chain links around them and the SHA-256 of the body, then the
-- gzipped commands, about 14 bytes a command instead of about 280 in command_log). A segment is
-- inserted and its rows deleted in one transaction, so every seq is in exactly one of the two
-- tables; readers take what is no longer in command_log from here, checked against the chain.
CREATE TABLE command_log_segments (
  first_seq   bigint PRIMARY KEY,
  last_seq    bigint NOT NULL UNIQUE CHECK (last_seq >= first_seq),
  last_ts     bigint NOT NULL,
  -- The chain link of the last record (the one after it links on from it); also in the header.
  last_link   bigint NOT NULL,
  segment     bytea  NOT NULL,
  archived_at timestamptz NOT NULL DEFAULT now()
);
-- The body is already compressed: no second compression by TOAST.
ALTER TABLE command_log_segments ALTER COLUMN segment SET STORAGE EXTERNAL;

-- Down Migration
DROP TABLE command_log_segments;
