-- +goose Up
-- A partition's last_offset names its newest stored message, and comb only
-- ever moves it forward. Set back by another program (a sqlite3 session, a
-- DB browser) below a segment still stored, the next push wrote a segment
-- at an offset one already held: every push to the partition answered 500
-- (UNIQUE segments.partition_id, base_offset), a queue delete 500 (CHECK
-- log_start <= last_offset + 1), and pops stopped short of messages
-- already acknowledged. The edit itself is refused instead, as the CHECK
-- constraints refuse values of the wrong type. Moving it back past
-- segments deleted first is allowed: nothing stored is hidden then.
-- comb's own updates only move it forward, so the subquery never runs for
-- them.
-- +goose StatementBegin
CREATE TRIGGER partitions_last_offset_never_back
BEFORE UPDATE OF last_offset ON partitions
WHEN NEW.last_offset < OLD.last_offset AND NEW.last_offset < (
    SELECT base_offset + frame_count - 1 FROM segments
    WHERE partition_id = NEW.id ORDER BY base_offset DESC LIMIT 1)
BEGIN
    SELECT RAISE(ABORT, 'comb: last_offset may not move back below a stored message (delete its segments first)');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER partitions_last_offset_never_back;
