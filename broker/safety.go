package broker

import (
	"context"

	"github.com/comb-broker/comb/store"
)

// Errors about the database file and its space, for errors.Is.
var (
	// ErrFull: a write found the disk or Options.MaxDBBytes full and
	// stored nothing. Reads, and writes that free space, keep working;
	// writes resume once space returns.
	ErrFull = store.ErrFull
	// ErrNotComb: the file is not a comb database; it was left untouched.
	ErrNotComb = store.ErrNotComb
	// ErrSchemaTooNew: the file was written by a newer comb; it was left untouched.
	ErrSchemaTooNew = store.ErrSchemaTooNew
	// ErrLocked: another process (or another Open here) has the file open.
	ErrLocked = store.ErrLocked
)

type (
	// CheckReport is what Check found in a database file.
	CheckReport = store.CheckReport
	// Finding is one problem Check found, naming queue, partition and offsets.
	Finding = store.Finding
)

// Check verifies the database at path without changing it: SQLite's
// integrity check, every segment's checksum, the log invariants and rows
// whose owner is gone. The file may be in use by a running broker. An error
// means the check could not run; problems found are the report's Findings.
func Check(ctx context.Context, path string) (*CheckReport, error) {
	return store.Check(ctx, path)
}

// BackupFile writes a consistent copy of the database at src to the new
// file dst. src may be in use by a running broker, whose writes continue.
func BackupFile(ctx context.Context, src, dst string) error {
	return store.BackupFile(ctx, src, dst)
}

// Backup writes a consistent copy of the open database to the new file dst
// while writes keep flowing: the copy holds every write answered before
// Backup began.
func (b *Broker) Backup(ctx context.Context, dst string) error {
	return b.st.Backup(ctx, dst)
}
