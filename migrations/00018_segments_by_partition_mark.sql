-- +goose Up
-- A partition's head when a group registered is the end of its newest
-- segment whose id is at most the registration's segment sequence
-- (store/implied.go, headAtSeqExpr). Through segments_partition_offset
-- alone that segment was found by walking back from the partition's
-- newest segment over every segment written since, once for every group
-- and partition without a cursor row: 10,000 groups subscribed to new
-- messages, 10 partitions each written 1,880 times since, took 20 s for a
-- status read.
--
-- This index holds the marks: the segments that hold an offset that is a
-- multiple of 64. Segment ids grow with base_offset within a partition,
-- so the first mark past a registration bounds the walk: the segments
-- between the one sought and that mark hold no multiple of 64, so there
-- are at most 63 of them. A mark is at most one segment in 64 messages,
-- so pushes pay little for it, where an index of every segment cost each
-- commit a leaf page per partition written (00010). The WHERE is the
-- marks' rule, which the query names to use it.
CREATE INDEX segments_partition_mark ON segments (partition_id, id)
    WHERE (base_offset + 63) / 64 * 64 < base_offset + frame_count;

-- +goose Down
DROP INDEX segments_partition_mark;
