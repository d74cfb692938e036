package broker

import (
	"context"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store"
)

// Check verifies the database at path without changing it: SQLite's
// integrity check, every segment's checksum, the log invariants and rows
// whose owner is gone. The file may be in use by a running broker. An error
// means the check could not run; problems found are the report's Findings.
func Check(ctx context.Context, path string) (*combtype.CheckReport, error) {
	return store.Check(ctx, path)
}

// BackupFile writes a consistent copy of the database at src to the new
// file dst. src may be in use by a running broker, whose writes continue.
func BackupFile(ctx context.Context, src, dst string) error {
	return store.BackupFile(ctx, src, dst)
}

// RestoreFile puts a verified copy of the backup at path for a broker to
// open, and moves the database that was there aside with its -wal and
// -shm (never leaving a backup beside an old WAL, which SQLite would
// replay into it). Nothing is put in place when the copy has findings
// (the report's Check says which) or a broker serves path
// (combtype.ErrLocked). fn, when not nil, hears how far the copy and its
// check have come, on the same terms as CheckProgress.
func RestoreFile(ctx context.Context, path, backup string, fn func(combtype.Progress)) (*combtype.RestoreReport, error) {
	return store.RestoreFile(ctx, path, backup, fn)
}
