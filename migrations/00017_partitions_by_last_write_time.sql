-- +goose Up
-- The partitions of a queue last written at or after a time, read through
-- this index: the tenant's lag summary (store/lag.go, sumLag) reads, for a
-- group subscribed from a time, the partitions that existed when it
-- subscribed and were written from that time on, instead of every
-- partition that existed then (about a second per such group at a million
-- partitions).
CREATE INDEX partitions_queue_last_segment_at ON partitions (queue_id, last_segment_at);

-- +goose Down
DROP INDEX partitions_queue_last_segment_at;
