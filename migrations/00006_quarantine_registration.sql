-- +goose Up
-- Segments that failed their checksum or did not decode, put aside with a
-- copy of their bytes so an operator can inspect or restore them; the
-- groups that met one moved past it.
CREATE TABLE quarantined_segments (
    id                 INTEGER PRIMARY KEY,
    tenant             TEXT    NOT NULL,
    queue_name         TEXT    NOT NULL,
    partition_name     TEXT    NOT NULL,
    partition_uuid     TEXT    NOT NULL,
    base_offset        INTEGER NOT NULL,
    frame_count        INTEGER NOT NULL,
    reason             TEXT    NOT NULL,
    segment_created_at INTEGER NOT NULL,
    codec              INTEGER NOT NULL,
    raw_size           INTEGER NOT NULL,
    checksum           INTEGER NOT NULL,
    data               BLOB    NOT NULL,
    quarantined_at     INTEGER NOT NULL,
    UNIQUE (partition_uuid, base_offset)
) STRICT;

-- The registration point of a subscription that takes every partition
-- created after it from its start: the highest partition id when it was
-- registered. Partition ids only grow, so unlike a wall-clock time the
-- point holds when the clock steps back. NULL: later partitions are seeded
-- by from_time.
ALTER TABLE subscriptions ADD COLUMN after_partition INTEGER;

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN after_partition;
DROP TABLE quarantined_segments;
