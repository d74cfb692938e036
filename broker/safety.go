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
