package store

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
)

// Every acknowledged commit ends in a sync of the WAL. SQLite's Linux builds
// make that sync with fdatasync(2) (their configure script finds it); the
// transpiled library comb links keeps the source default, fsync(2), unless
// switched. fdatasync writes the data and every piece of metadata needed to
// read it back, the file's size included, and skips only the timestamps,
// whose journal commit on ext4 was most of what an fsync of the WAL waited
// for. A commit is as durable either way; it is answered sooner and costs
// less CPU (store's BenchmarkPushOneCPU).
//
// The switch is process-wide in the library: it also moves any other
// database an embedding program opens through the same driver to
// fdatasync, as its distribution's SQLite would sync it. Where the call
// does not exist (macOS, Windows) SQLite keeps its own sync.

// syncWithFdatasync makes SQLite's commits sync with fdatasync where the
// system has it.
func syncWithFdatasync() error {
	if _, err := sqlite.Fdatasync(true); err != nil && !errors.Is(err, sqlite.ErrFdatasyncUnavailable) {
		return fmt.Errorf("sync with fdatasync: %w", err)
	}
	return nil
}
