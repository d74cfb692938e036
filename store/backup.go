package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/comb-broker/comb/combtype"
	"os"
)

// Backup writes a consistent copy of the open database to the new file dst
// with VACUUM INTO. It reads one snapshot on its own read-only connection, so writes
// keep committing while it runs, and the copy holds exactly what was
// committed when it began. dst must not exist; it is removed on failure.
func (s *Store) Backup(ctx context.Context, dst string) error {
	return BackupFile(ctx, s.path, dst)
}

// BackupFile copies the comb database at src to the new file dst, without
// opening it for writing: src may be in use by a running server.
func BackupFile(ctx context.Context, src, dst string) error {
	db, err := openReadOnly(ctx, src)
	if err != nil {
		return err
	}
	defer db.Close()
	return vacuumInto(ctx, db, dst)
}

func vacuumInto(ctx context.Context, db *sql.DB, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("backup: %w: %s already exists", combtype.ErrInvalid, dst)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		os.Remove(dst)
		return fmt.Errorf("backup to %s: %w", dst, classify(err))
	}
	// VACUUM INTO writes without syncing; the copy is only a backup once
	// it is on disk.
	f, err := os.OpenFile(dst, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := errors.Join(f.Chmod(0o600), f.Sync(), f.Close()); err != nil {
		os.Remove(dst)
		return fmt.Errorf("backup: sync %s: %w", dst, err)
	}
	return nil
}
