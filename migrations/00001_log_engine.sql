-- +goose Up
-- The log engine: queues own partitions, partitions own segments (one row per
-- fused commit, frames packed and lz4-compressed), and consumption is one
-- cursor row per (partition, consumer group). Nothing here is per message
-- except the producer dedup index, which the ack path also needs to turn a
-- transactionId into an offset.
--
-- Times are integer microseconds since the Unix epoch. Every table that a
-- tenant can see carries the tenant directly or through its queue, so that
-- scoping by tenant never needs a data migration.

CREATE TABLE queues (
    id                          INTEGER PRIMARY KEY,
    uuid                        TEXT    NOT NULL UNIQUE,
    tenant                      TEXT    NOT NULL DEFAULT '',
    name                        TEXT    NOT NULL,
    namespace                   TEXT    NOT NULL DEFAULT '',
    task                        TEXT    NOT NULL DEFAULT '',
    lease_time                  INTEGER NOT NULL DEFAULT 300,
    retry_limit                 INTEGER NOT NULL DEFAULT 3,
    retry_delay                 INTEGER NOT NULL DEFAULT 1000,
    max_size                    INTEGER NOT NULL DEFAULT 0,
    ttl                         INTEGER NOT NULL DEFAULT 3600,
    dead_letter_queue           INTEGER NOT NULL DEFAULT 0 CHECK (dead_letter_queue IN (0, 1)),
    dlq_after_max_retries       INTEGER NOT NULL DEFAULT 0 CHECK (dlq_after_max_retries IN (0, 1)),
    priority                    INTEGER NOT NULL DEFAULT 0,
    delayed_processing          INTEGER NOT NULL DEFAULT 0,
    window_buffer               INTEGER NOT NULL DEFAULT 0,
    retention_seconds           INTEGER NOT NULL DEFAULT 0,
    completed_retention_seconds INTEGER NOT NULL DEFAULT 0,
    retention_enabled           INTEGER NOT NULL DEFAULT 0 CHECK (retention_enabled IN (0, 1)),
    encryption_enabled          INTEGER NOT NULL DEFAULT 0 CHECK (encryption_enabled IN (0, 1)),
    max_wait_time_seconds       INTEGER NOT NULL DEFAULT 0,
    -- Optional size bound in bytes of stored segments (0 = none), for small disks.
    max_bytes                   INTEGER NOT NULL DEFAULT 0,
    created_at                  INTEGER NOT NULL,
    UNIQUE (tenant, name)
) STRICT;

CREATE TABLE partitions (
    id              INTEGER PRIMARY KEY,
    uuid            TEXT    NOT NULL UNIQUE,
    queue_id        INTEGER NOT NULL,
    name            TEXT    NOT NULL,
    -- Highest offset written; -1 while empty. Offsets start at 0.
    last_offset     INTEGER NOT NULL DEFAULT -1,
    -- Retention watermark: the first offset still stored.
    log_start       INTEGER NOT NULL DEFAULT 0,
    -- created_at of the newest segment, so a clock stepping back never makes
    -- created_at decrease as the offset grows.
    last_segment_at INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    UNIQUE (queue_id, name),
    CHECK (log_start <= last_offset + 1)
) STRICT;

-- An ordinary rowid table: measured 2x faster to write and 4x faster to read
-- by point than WITHOUT ROWID for blobs of a few KB.
CREATE TABLE segments (
    id           INTEGER PRIMARY KEY,
    partition_id INTEGER NOT NULL,
    base_offset  INTEGER NOT NULL CHECK (base_offset >= 0),
    frame_count  INTEGER NOT NULL CHECK (frame_count > 0),
    created_at   INTEGER NOT NULL,
    -- 0 = frames stored raw, 1 = lz4 block.
    codec        INTEGER NOT NULL CHECK (codec IN (0, 1)),
    raw_size     INTEGER NOT NULL,
    -- CRC-32C of data as stored.
    checksum     INTEGER NOT NULL,
    data         BLOB    NOT NULL
) STRICT;
CREATE UNIQUE INDEX segments_partition_offset ON segments (partition_id, base_offset);
-- Timestamp seek and subscription seeding resolve a time to a segment through
-- this index (created_at is monotone in offset within a partition), so their
-- cost does not grow with the backlog.
CREATE INDEX segments_partition_time ON segments (partition_id, created_at);

-- Producer dedup: (partition, transactionId) -> offset. txn_key is a
-- 64-bit key computed from the transactionId (store/txnkey.go), not unique
-- to it: a key found is confirmed against the id stored in the frame at
-- its offset. An integer key keeps this table, the only one with a row per
-- message, about a third of the size a text key made it.
CREATE TABLE txids (
    partition_id INTEGER NOT NULL,
    txn_key      INTEGER NOT NULL,
    offset       INTEGER NOT NULL,
    PRIMARY KEY (partition_id, txn_key, offset)
) STRICT, WITHOUT ROWID;

-- One row per (partition, consumer group): everything a group knows.
CREATE TABLE cursors (
    partition_id     INTEGER NOT NULL,
    group_name       TEXT    NOT NULL,
    -- Highest offset completed; log_start - 1 means nothing consumed yet.
    committed        INTEGER NOT NULL,
    -- The one leased batch in flight: [lease_from, lease_to] until lease_expires_at.
    lease_id         TEXT,
    lease_from       INTEGER,
    lease_to         INTEGER,
    lease_expires_at INTEGER,
    -- Failed rounds of the current batch, reset when a batch completes and on seek.
    retry_count      INTEGER NOT NULL DEFAULT 0,
    -- Times the current batch was handed out again after a lease expired.
    redelivery_count INTEGER NOT NULL DEFAULT 0,
    total_consumed   INTEGER NOT NULL DEFAULT 0,
    batches_consumed INTEGER NOT NULL DEFAULT 0,
    last_consumed_at INTEGER,
    created_at       INTEGER NOT NULL,
    PRIMARY KEY (partition_id, group_name),
    CHECK ((lease_id IS NULL) = (lease_expires_at IS NULL))
) STRICT, WITHOUT ROWID;
CREATE INDEX cursors_lease ON cursors (lease_id) WHERE lease_id IS NOT NULL;
CREATE INDEX cursors_group ON cursors (group_name);

-- The durable subscription record written at a group's first pop of a queue.
-- from_time NULL means "oldest retained"; otherwise partitions met later are
-- seeded with a timestamp walk from it.
CREATE TABLE subscriptions (
    queue_id   INTEGER NOT NULL,
    group_name TEXT    NOT NULL,
    mode       TEXT    NOT NULL CHECK (mode IN ('all', 'new', 'timestamp')),
    from_time  INTEGER,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (queue_id, group_name)
) STRICT, WITHOUT ROWID;
CREATE INDEX subscriptions_group ON subscriptions (group_name);

-- Dead-lettered messages are copies: retention never touches this table and
-- a seek never redelivers from it.
CREATE TABLE dlq (
    id             INTEGER PRIMARY KEY,
    message_id     TEXT    NOT NULL,
    tenant         TEXT    NOT NULL DEFAULT '',
    queue_name     TEXT    NOT NULL,
    partition_name TEXT    NOT NULL,
    partition_uuid TEXT    NOT NULL,
    group_name     TEXT    NOT NULL,
    txn_id         TEXT    NOT NULL,
    offset         INTEGER NOT NULL,
    trace_id       TEXT,
    producer_sub   TEXT,
    payload        BLOB    NOT NULL,
    error_message  TEXT,
    retry_count    INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    failed_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX dlq_queue ON dlq (tenant, queue_name, failed_at);

-- +goose Down
DROP TABLE dlq;
DROP TABLE subscriptions;
DROP TABLE cursors;
DROP TABLE txids;
DROP TABLE segments;
DROP TABLE partitions;
DROP TABLE queues;
