-- +goose Up
-- The dedup index leads with txn_key instead of partition_id. A transactionId
-- of the SDKs (UUIDv7) puts its time in the key's high bits, so keys grow
-- with time across all partitions: under (txn_key, partition_id, offset) a
-- commit's keys all land at the index's right edge, about one leaf page per
-- commit. Under (partition_id, txn_key, offset) a commit that pushed to ten
-- partitions dirtied ten leaves, each one WAL frame written at commit: a
-- third of the writer's CPU when producers push one message at a time.
--
-- Lookups name the partition and a key, so they seek (txn_key, partition_id)
-- as before. What asked for the rows of one partition (a queue delete, the
-- eviction of a segment that does not decode) now decodes the transactionIds
-- from the segments where it can, or scans.
--
-- A push looks its keys up only when they are not above the highest key
-- its partition holds. That bound, which the old key order gave by one seek
-- per partition, is kept on the partition row instead (max_txn_key, NULL
-- for none), filled here from the old index before it goes.
ALTER TABLE partitions ADD COLUMN max_txn_key INTEGER;
UPDATE partitions SET max_txn_key = (SELECT max(txn_key) FROM txids WHERE partition_id = partitions.id);

-- SQLite cannot change a primary key in place: the table is rebuilt. The
-- rows are copied in the new key order so the copy appends instead of
-- inserting at random places. Column order is kept, so every statement that
-- names the columns reads the same.
CREATE TABLE txids_by_key (
    partition_id INTEGER NOT NULL,
    txn_key      INTEGER NOT NULL,
    offset       INTEGER NOT NULL,
    PRIMARY KEY (txn_key, partition_id, offset)
) STRICT, WITHOUT ROWID;
INSERT INTO txids_by_key (partition_id, txn_key, offset)
    SELECT partition_id, txn_key, offset FROM txids ORDER BY txn_key, partition_id, offset;
DROP TABLE txids;
ALTER TABLE txids_by_key RENAME TO txids;

-- +goose Down
CREATE TABLE txids_by_partition (
    partition_id INTEGER NOT NULL,
    txn_key      INTEGER NOT NULL,
    offset       INTEGER NOT NULL,
    PRIMARY KEY (partition_id, txn_key, offset)
) STRICT, WITHOUT ROWID;
INSERT INTO txids_by_partition (partition_id, txn_key, offset)
    SELECT partition_id, txn_key, offset FROM txids ORDER BY partition_id, txn_key, offset;
DROP TABLE txids;
ALTER TABLE txids_by_partition RENAME TO txids;
ALTER TABLE partitions DROP COLUMN max_txn_key;
