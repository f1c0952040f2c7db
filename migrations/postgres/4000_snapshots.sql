-- Up Migration
-- The distributed mode's core snapshots (src/adapters/postgres/snapshot-store.ts,
-- docs/architecture.md "Distributed mode: snapshots"): the core's state at `seq` of command_log,
-- so that a core, a gateway or the projector starts from the newest one and replays only the log
-- after it. `snapshot` holds the same bytes as a snapshot file of the embedded mode
-- (src/adapters/store/snapshot-files.ts: a CRC-checked header naming seq, chain link, state layout
-- and the SHA-256 of the image, then the image gzipped), checked in full before it is used;
-- `chain` is the log's link at `seq`, where the follower's chain check goes on from. The writer
-- keeps the newest SNAPSHOT_KEEP rows.
CREATE TABLE core_snapshots (
  seq        bigint PRIMARY KEY,
  chain      bigint NOT NULL,
  ts         bigint NOT NULL,
  layout     text   NOT NULL,
  state_hash text   NOT NULL,
  snapshot   bytea  NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- The image is already compressed: no second compression by TOAST.
ALTER TABLE core_snapshots ALTER COLUMN snapshot SET STORAGE EXTERNAL;

-- Down Migration
DROP TABLE core_snapshots;
