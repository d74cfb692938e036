-- +goose Up
-- A segment is immutable and holds many frames, so deleting one message
-- (DELETE /api/v1/messages/:partitionId/:transactionId) cannot remove its
-- frame. It records a tombstone instead: claims skip tombstoned offsets and
-- message reads hide them. Rows below a partition's log_start are dead
-- weight (retention removed the frame) and may be deleted at any time.
CREATE TABLE tombstones (
    partition_id INTEGER NOT NULL,
    offset       INTEGER NOT NULL CHECK (offset >= 0),
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (partition_id, offset)
) STRICT, WITHOUT ROWID;

-- Message reads report dead_letter when a DLQ copy of the message exists;
-- this makes that question one index seek per message or segment instead
-- of a scan of the queue's DLQ rows.
CREATE INDEX dlq_message ON dlq (partition_uuid, offset);

-- +goose Down
DROP INDEX dlq_message;
DROP TABLE tombstones;
