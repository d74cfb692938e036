-- +goose Up
-- The message listing walks a large queue's segments newest first through
-- this index (store/messages.go) and stops once its page is full, instead
-- of sorting the segments of every partition. Unlike segments_partition_time
-- (dropped in 00010), which put one entry in each written partition's
-- leaf, the entries of one commit share a created_at and land together in
-- the rightmost leaf: about one more page per commit, not per partition.
CREATE INDEX segments_time ON segments (created_at);

-- +goose Down
DROP INDEX segments_time;
