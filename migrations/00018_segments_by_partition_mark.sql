-- +goose Up
-- Marks: the segments that hold an offset that is a multiple of 64, by
-- partition, in two partial indexes, so that a search of one partition's
-- segments walks at most 63 of them from the nearest mark instead of the
-- whole partition (store/implied.go):
--
-- - by id, for a partition's head when a group registered: the end of its
--   newest segment whose id is at most the registration's segment
--   sequence. It was found by walking back from the partition's newest
--   segment over every segment written since, once for every group and
--   partition without a cursor row: 10,000 groups subscribed to new
--   messages, 10 partitions each written 1,880 times since, took 20 s for
--   a status read.
-- - by commit time, for where a group that starts from a time starts: the
--   first segment committed at or after it, found by walking from the
--   partition's oldest segment over every segment before it. 1,000 such
--   groups over 1,000 segments of history a partition took 4.2 s for a
--   message listing.
--
-- Within a partition both id and created_at grow with base_offset, so the
-- nearest mark on either side bounds the walk: the segments between the
-- one sought and that mark hold no multiple of 64. A mark is at most one
-- segment in 64 messages, so pushes pay little for these, where an index
-- of every segment cost each commit a leaf page per partition written
-- (00010). The WHERE is the marks' rule, which the queries name to use
-- them.
CREATE INDEX segments_partition_mark ON segments (partition_id, id)
    WHERE (base_offset + 63) / 64 * 64 < base_offset + frame_count;
CREATE INDEX segments_partition_mark_time ON segments (partition_id, created_at)
    WHERE (base_offset + 63) / 64 * 64 < base_offset + frame_count;

-- +goose Down
DROP INDEX segments_partition_mark_time;
DROP INDEX segments_partition_mark;
