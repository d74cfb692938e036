-- +goose Up
-- A group's cursors are no longer seeded on every partition when it
-- subscribes: a missing cursor row is read as the subscription implies
-- (store/implied.go), and a row is written when the group first claims,
-- acks or seeks on the partition. The registration is kept here, apart
-- from mode and from_time, which UpdateSubscription rewrites for the
-- partitions met later.
--
-- start_seq is the segment sequence at registration: segment ids are
-- handed out in commit order, store-wide, and never reused below a
-- registered start_seq (store/writer.go), so "the partition's head when
-- the group subscribed" is the end of its last segment with id <=
-- start_seq. Unlike a wall-clock time, that holds when the clock steps
-- back. NULL: a registration from before lazy cursors, whose cursors were
-- seeded; partitions it meets later follow mode, from_time and
-- after_partition as before.
-- start_partition is the highest partition id at registration: partitions
-- up to it follow start_mode / start_from, later ones the (possibly
-- updated) mode and from_time.
ALTER TABLE subscriptions ADD COLUMN start_mode TEXT CHECK (start_mode IN ('all', 'new', 'timestamp'));
ALTER TABLE subscriptions ADD COLUMN start_from INTEGER;
ALTER TABLE subscriptions ADD COLUMN start_seq INTEGER;
ALTER TABLE subscriptions ADD COLUMN start_partition INTEGER;

-- The id of the partition's newest segment, written with last_offset: a
-- partition not written since a group registered (last_segment_id <=
-- start_seq) stands where it stood then, without a look at its segments.
-- 0 on partitions not written since this migration, whose segments all
-- came before any registration that has a start_seq.
ALTER TABLE partitions ADD COLUMN last_segment_id INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE partitions DROP COLUMN last_segment_id;
ALTER TABLE subscriptions DROP COLUMN start_partition;
ALTER TABLE subscriptions DROP COLUMN start_seq;
ALTER TABLE subscriptions DROP COLUMN start_from;
ALTER TABLE subscriptions DROP COLUMN start_mode;
