-- +goose Up
-- A restore of a quarantined segment dead-letters its frames once for
-- each group that passed it: up to 256 rows a group, each with its
-- payload. It writes whole groups a bounded batch a write, in name order,
-- and keeps here the last group it wrote; a restore sent again after a
-- stop goes on after it. In one write, a segment passed by many groups
-- held the writer, and every push, for as long as those rows took.
ALTER TABLE quarantined_segments ADD COLUMN restored_through TEXT;

-- +goose Down
ALTER TABLE quarantined_segments DROP COLUMN restored_through;
