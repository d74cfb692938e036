-- +goose Up
-- The partitions of a queue written since a point of the segment sequence
-- (last_segment_id > a group's start_seq), read through this index: a pop
-- of a group subscribed to new messages, or from a time past the data,
-- looks only at partitions that could have something for it instead of
-- every partition of the queue (store/pop.go, dueSuspects).
CREATE INDEX partitions_queue_last_segment ON partitions (queue_id, last_segment_id);

-- +goose Down
DROP INDEX partitions_queue_last_segment;
