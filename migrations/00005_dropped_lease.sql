-- +goose Up
-- The lease a failed or retry ack gave back, kept on the cursor so that the
-- other failed acks of that same batch, sent in later requests, are
-- answered as the no-ops they are instead of as an invalid lease.
ALTER TABLE cursors ADD COLUMN dropped_lease TEXT;

-- +goose Down
ALTER TABLE cursors DROP COLUMN dropped_lease;
