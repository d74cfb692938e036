-- +goose Up
-- A time is resolved to a segment by searching the offset index
-- (store/landing.go): created_at never decreases with base_offset within a
-- partition. This index cost every push commit one more leaf page, one more
-- WAL frame, per partition it wrote to.
DROP INDEX segments_partition_time;

-- +goose Down
CREATE INDEX segments_partition_time ON segments (partition_id, created_at);
