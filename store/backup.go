package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Backup writes a consistent copy of the open database to the new file dst
// with VACUUM INTO. It reads one snapshot on its own read-only connection, so writes
// keep committing while it runs, and the copy holds exactly what was
// committed when it began. dst must not exist; it is removed on failure.
// The connection is SQLite's, which keeps the writer's locks when it
// closes; nothing else opens the database file (see lock.go).
func (s *Store) Backup(ctx context.Context, dst string) error {
	err := BackupFile(ctx, s.path, dst)
	if errors.Is(err, combtype.ErrDamaged) {
		// A damaged page only the copy read (its connection is not one
		// of the server's, which count what they meet) is the served
		// file's damage all the same: Health says so from now on.
		s.stats.Damaged.Add(1)
	}
	return err
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
	inUse, err := checkNotStale(src)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if !inUse {
		// The copy would be of what SQLite's recovery makes of a damaged
		// WAL: without the commits it drops, and checked clean
		// (waldamage.go).
		if scan, err := scanWAL(walPath(src)); err != nil {
			return fmt.Errorf("backup: %w", err)
		} else if scan.dropped > 0 {
			return fmt.Errorf("backup: %w: the WAL beside %s is damaged, and SQLite's recovery would drop %d commits that still verify; "+
				"comb check --db says where, and comb serve, started on the file, keeps a copy of the WAL before recovery (docs/operations.md, The WAL)",
				combtype.ErrDamaged, src, scan.dropped)
		}
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
	// The -wal is beside the file a symlink leads to, where SQLite puts it.
	if _, err := os.Lstat(walPath(path)); errors.Is(err, fs.ErrNotExist) {
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
	if err := newEpoch(ctx, dst); err != nil {
		os.Remove(dst)
		return fmt.Errorf("backup: %w", err)
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

// newEpoch gives the copy at path a message id epoch of its own (ids.go:
// idEpochKey), before anything else opens it. A copy of a file older than
// the settings table keeps the ids of its source.
//
// The write goes through SQLite, which raises the change counter in the
// copy's header; it is then put back to what VACUUM INTO wrote (1, with
// its version-valid-for), so that the copy still tells itself apart from
// any file comb serves when it is copied over one (replaced.go). Nothing
// else has the copy open.
func newEpoch(ctx context.Context, path string) error {
	before, err := readCounters(path)
	wal := errors.Is(err, errWALCopy)
	if err != nil && !wal {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("open the copy %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'settings'`).Scan(&n); err != nil {
		return fmt.Errorf("read the copy %s: %w", path, err)
	}
	if n == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		idEpochKey, newIDEpoch(), time.Now().UnixMicro()); err != nil {
		return fmt.Errorf("give the copy %s its message id epoch: %w", path, classify(err))
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close the copy %s: %w", path, err)
	}
	if wal {
		return nil
	}
	return writeCounters(path, before)
}

// The file change counter and its version-valid-for, in a SQLite file's
// header (file format: offsets 24 and 92, big-endian).
const (
	counterAt      = 24
	validForAt     = 92
	rollbackFormat = 1 // header bytes 18 and 19 of a file not in WAL mode
)

type counters [2][4]byte

// errWALCopy is a copy in WAL mode, whose counters a write leaves alone.
var errWALCopy = errors.New("the copy is in WAL mode")

// readCounters reads the counters of the rollback-mode file at path.
func readCounters(path string) (counters, error) {
	var c counters
	f, err := os.Open(path)
	if err != nil {
		return c, fmt.Errorf("read the copy's header: %w", err)
	}
	defer f.Close()
	var h [headerSize]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return c, fmt.Errorf("read the copy's header: %w", err)
	}
	if string(h[:len(sqliteMagic)]) != sqliteMagic {
		return c, fmt.Errorf("the copy %s is not a SQLite file", path)
	}
	if h[18] != rollbackFormat || h[19] != rollbackFormat {
		// In WAL mode SQLite leaves the counter as it is.
		return c, errWALCopy
	}
	copy(c[0][:], h[counterAt:])
	copy(c[1][:], h[validForAt:])
	return c, nil
}

// writeCounters puts c back into the header of the file at path.
func writeCounters(path string, c counters) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("write the copy's header: %w", err)
	}
	_, err1 := f.WriteAt(c[0][:], counterAt)
	_, err2 := f.WriteAt(c[1][:], validForAt)
	if err := errors.Join(err1, err2, f.Close()); err != nil {
		return fmt.Errorf("write the copy's header: %w", err)
	}
	return nil
}
