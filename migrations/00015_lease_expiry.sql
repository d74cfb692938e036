-- +goose Up
-- Leases by expiry: the once-a-second look for leases that expired since
-- the last look (store.LeasesExpiredBetween) reads the range that expired
-- instead of every leased cursor, which with thousands of consumers
-- holding a lease was a scan of thousands of rows every second.
CREATE INDEX cursors_lease_expiry ON cursors (lease_expires_at) WHERE lease_id IS NOT NULL;

-- +goose Down
DROP INDEX cursors_lease_expiry;
