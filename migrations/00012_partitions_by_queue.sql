-- +goose Up
-- A queue's partitions in creation order, a page at a time: the rowid
-- rides in the index after queue_id, so "WHERE queue_id = ? AND id > ?
-- ORDER BY id LIMIT n" reads n entries (store/pages.go). The unique
-- (queue_id, name) index orders by name and would sort the whole queue.
CREATE INDEX partitions_queue_id ON partitions (queue_id);

-- +goose Down
DROP INDEX partitions_queue_id;
