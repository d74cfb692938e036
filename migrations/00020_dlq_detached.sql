-- +goose Up
-- The dead letters of a deleted queue, waiting to be purged. A queue
-- delete used to delete its DLQ rows in its first write, which held the
-- writer, and with it every push, for as long as the rows took (a million
-- rows: 2.8 s). The delete now records the highest DLQ row id at that
-- moment here instead: every read of a tenant's dead letters hides the
-- rows of tenant's queue_name with an id up to through_id, a recreated
-- queue's rows get higher ids (new rows take an id above through_id while
-- the row is here), and the purge deletes the hidden rows a bounded batch
-- at a time, then this row.
CREATE TABLE dlq_detached (
    tenant     TEXT    NOT NULL,
    queue_name TEXT    NOT NULL,
    through_id INTEGER NOT NULL,
    PRIMARY KEY (tenant, queue_name)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE dlq_detached;
