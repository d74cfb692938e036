package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/comb-broker/comb/combtype"
)

// Backup writes a consistent copy of the open database to the new file dst
// with VACUUM INTO. It reads one snapshot on its own read-only connection, so writes
// keep committing while it runs, and the copy holds exactly what was
// committed when it began. dst must not exist; it is removed on failure.
// The connection is SQLite's, which keeps the writer's locks when it
// closes; nothing else opens the database file (see lock.go).
func (s *Store) Backup(ctx context.Context, dst string) error {
	return BackupFile(ctx, s.path, dst)
}

// BackupFile copies the comb database at src to the new file dst, without
// opening it for writing: src may be in use by a running server. It
// refuses a file whose running server's WAL is gone from the directory
// (ErrStale): the file then lacks that server's recent writes.
func BackupFile(ctx context.Context, src, dst string) error {
	return BackupFileProgress(ctx, src, dst, nil)
}

// BackupFileProgress is BackupFile telling fn how far the copy has come:
// phase "copy" in bytes written to dst out of the source's pages in use,
// then "sync". The copy is made as BackupFile makes it; the progress is
// read from outside it (dst's size), from a watcher goroutine that stops
// before it returns. fn must return at once.
func BackupFileProgress(ctx context.Context, src, dst string, fn func(combtype.Progress)) error {
	if _, err := checkNotStale(src); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	db, err := openReadOnly(ctx, src)
	if err != nil {
		return err
	}
	defer db.Close()
	if fn == nil {
		return vacuumInto(ctx, db, dst, nil)
	}
	total, err := pageBytes(ctx, db)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	report := func() {
		// VACUUM INTO leaves out the free pages, so the copy ends near
		// total; it never shows done before it is.
		var n int64
		if info, err := os.Stat(dst); err == nil {
			n = min(info.Size(), total*99/100)
		}
		fn(combtype.Progress{Phase: "copy", Done: n, Total: total, Unit: combtype.UnitBytes})
	}
	report()
	stop := sync.OnceFunc(watch(progressInterval, report))
	defer stop()
	return vacuumInto(ctx, db, dst, func() {
		stop()
		fn(combtype.Progress{Phase: "sync", Done: -1, Total: total, Unit: combtype.UnitBytes})
	})
}

// checkNotStale refuses a file that a comb serves, in this process or
// another, while its -wal is missing from the directory. A running server
// always has one; without it, what any other connection reads is the file
// as of the WAL's last checkpoint, and the server's writes since are only
// in a WAL that nothing else can open. It must run before the caller opens
// a connection of its own to path (see servedBy).
// It reports whether a comb serves the file.
func checkNotStale(path string) (inUse bool, err error) {
	inUse, err = servedBy(path)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	if !inUse {
		return false, nil
	}
	if _, err := os.Lstat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("%w: %s is served by a running comb but its -wal file is gone from the directory, "+
			"so the file lacks the server's recent writes; stop the server with SIGTERM (not kill -9), "+
			"which writes them into the file, then try again", combtype.ErrStale, path)
	}
	return true, nil
}

// vacuumInto calls copied, if not nil, once VACUUM INTO has returned.
func vacuumInto(ctx context.Context, db *sql.DB, dst string, copied func()) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("backup: %w: %s already exists", combtype.ErrInvalid, dst)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	// A -wal left at the name by a database deleted without it names no
	// database: whatever opened the copy next would replay it into the
	// copy's pages.
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(dst + side); err == nil {
			return fmt.Errorf("backup: %w: %s is left beside the name from another database, and would be read as the copy's; move it away",
				combtype.ErrInvalid, dst+side)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("backup: %w", err)
		}
	}
	_, err := db.ExecContext(ctx, "VACUUM INTO ?", dst)
	if copied != nil {
		copied()
	}
	if err != nil {
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
