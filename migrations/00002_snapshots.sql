-- +goose Up
-- Snapshots: a consumer group's committed offsets on one queue, captured
-- under a name so the group (or another group on the same queue) can seek
-- back to them later. A snapshot expires (7 days by default) and is swept;
-- while it lives, time-based retention keeps what it needs.
--
-- Queues and partitions are named by uuid, never by rowid: a rowid can be
-- reused after a queue is deleted, a uuid cannot, so a snapshot never
-- applies to a queue recreated under the same name as if it were the old one.

CREATE TABLE snapshots (
    id          INTEGER PRIMARY KEY,
    tenant      TEXT    NOT NULL DEFAULT '',
    name        TEXT    NOT NULL CHECK (name != ''),
    group_name  TEXT    NOT NULL,
    queue_uuid  TEXT    NOT NULL,
    queue_name  TEXT    NOT NULL,
    -- A JSON object of string labels.
    labels      TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(labels) AND json_type(labels) = 'object'),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    UNIQUE (tenant, name),
    CHECK (expires_at > created_at)
) STRICT;
-- The hourly sweep deletes by expiry.
CREATE INDEX snapshots_expiry ON snapshots (expires_at);

-- One row per partition that existed when the snapshot was taken.
-- committed is the group's cursor then; log_start - 1 where the group had
-- none (it would have started from the oldest retained message).
CREATE TABLE snapshot_cursors (
    snapshot_id    INTEGER NOT NULL,
    partition_uuid TEXT    NOT NULL,
    partition_name TEXT    NOT NULL,
    committed      INTEGER NOT NULL,
    PRIMARY KEY (snapshot_id, partition_uuid)
) STRICT, WITHOUT ROWID;
-- Retention asks, per partition, for the lowest offset a live snapshot needs.
CREATE INDEX snapshot_cursors_partition ON snapshot_cursors (partition_uuid, committed);

-- +goose Down
DROP TABLE snapshot_cursors;
DROP TABLE snapshots;
