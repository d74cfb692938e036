package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/migrations"
)

// emptiedFile refuses the empty database file at path beside a WAL of
// walSize bytes (checkHeader).
func emptiedFile(path string, walSize int64) error {
	return fmt.Errorf("%w: %s is empty, but the WAL beside it holds %d bytes of a database's last writes: the file was emptied or removed while its WAL was left; restore it from a backup (docs/operations.md), or remove %s to start an empty database",
		combtype.ErrDamaged, path, walSize, walPath(path))
}

// walHeaderSize is the length of a WAL file's header; frames follow it.
const walHeaderSize = 32

// sqliteHeader opens every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// checkSideFiles refuses a -wal or -shm path beside the database at path
// that names something other than a file (a directory, a socket, a
// device): SQLite cannot open the database at all then, and said
// "unable to open database file", "attempt to write a readonly
// database", or, for a -wal directory beside a new file, was taken for a
// WAL of 4,096 bytes (emptiedFile). Nothing SQLite made is ever there.
func checkSideFiles(path string) error {
	for _, side := range []string{walPath(path), path + "-shm"} {
		fi, err := os.Stat(side)
		if err != nil || fi.Mode().IsRegular() {
			continue // absent is what SQLite expects; it says why else
		}
		return fmt.Errorf("%s is a %s, not a file SQLite made: no database can be opened beside it; move it away",
			side, fileKind(fi.Mode()))
	}
	return nil
}

// fileKind names what a mode that is not a regular file's is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// checkHeader refuses a non-empty file that is not a SQLite database, before
// any connection could write to it. It reads through the lock's descriptor:
// opening and closing another would drop SQLite's locks (see lock.go).
func checkHeader(l *dbLock, path string) error {
	head := make([]byte, len(sqliteHeader))
	n, err := l.readHeader(head)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if n == 0 {
		// A new, empty file, unless a WAL with frames lies beside it:
		// then the file was emptied or removed after a crash (SQLite
		// writes a database's header before its first WAL frame). SQLite
		// would take it for new and delete that WAL at the first read,
		// and with it the only trace of what the file held.
		if fi, err := os.Stat(walPath(path)); err == nil && fi.Size() > walHeaderSize {
			return emptiedFile(path, fi.Size())
		}
		return nil
	}
	if !bytes.Equal(head[:n], sqliteHeader) {
		return fmt.Errorf("%w: %s is not a SQLite database", combtype.ErrNotComb, path)
	}
	return nil
}

// latestMigration is the highest migration version this binary carries.
func latestMigration() (int64, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return 0, fmt.Errorf("list migrations: %w", err)
	}
	var latest int64
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			continue
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// checkSchema refuses a database that holds tables but none of comb's
// schema bookkeeping (someone else's file), and one whose schema is newer
// than this binary knows: applying migrations to either would change a file
// comb cannot read correctly. version is the schema's (versionrows.go), and
// mend says goose's rows claim otherwise and Open must write them again.
func checkSchema(ctx context.Context, db *sql.DB, path string) (version int64, mend bool, err error) {
	var tables, goose int
	if err := db.QueryRowContext(ctx,
		`SELECT COUNT(*), COUNT(*) FILTER (WHERE name = 'goose_db_version') FROM sqlite_schema WHERE type = 'table'`).
		Scan(&tables, &goose); err != nil {
		if sqliteCode(err) == sqliteNotADB {
			return 0, false, fmt.Errorf("%w: %s is not a SQLite database", combtype.ErrNotComb, path)
		}
		if sqliteExtendedCode(err) == sqliteReadOnlyRollback {
			// SQLite's words for it, "attempt to write a readonly
			// database", sent people looking at permissions.
			return 0, false, fmt.Errorf("read %s: %s-journal is a rollback journal that a program stopped in the middle of a write left; "+
				"the file is whole only once it is rolled back, which takes a writer: start comb serve on the file once "+
				"(it rolls the journal back, then serves), then run this again: %w", path, path, err)
		}
		// Not the file's content: its directory or file read-only, another
		// program's lock, damage. Said as what it is, not "not a comb
		// database".
		return 0, false, fmt.Errorf("read the schema of %s: %w", path, classify(err))
	}
	if tables == 0 {
		return 0, false, nil
	}
	latest, err := latestMigration()
	if err != nil {
		return 0, false, err
	}
	version, mend, err = schemaVersion(ctx, db, latest)
	if err != nil {
		return 0, false, fmt.Errorf("read schema version of %s: %w", path, classify(err))
	}
	if goose == 0 && !mend {
		return 0, false, fmt.Errorf("%w: %s holds tables but no comb schema", combtype.ErrNotComb, path)
	}
	if version > latest {
		return version, false, fmt.Errorf("%w: %s has schema version %d, this comb knows up to %d", combtype.ErrSchemaTooNew, path, version, latest)
	}
	return version, mend, nil
}

// openReadOnly opens path for reading only (mode=ro, which unlike
// query_only still allows VACUUM INTO another file): it is never created,
// migrated or switched to WAL, so an operator command cannot change the
// file it inspects. The file is opened only through SQLite, which keeps the
// locks of every connection of this process, a server's included, when one
// of them closes; SQLite itself refuses a file that is not a database.
func openReadOnly(ctx context.Context, path string) (*sql.DB, error) {
	if err := checkSideFiles(path); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if wal, err := os.Stat(walPath(path)); err == nil && fi.Size() == 0 && wal.Size() > walHeaderSize {
		// Before SQLite opens it: it would take the file for new and
		// delete that WAL (checkHeader).
		return nil, emptiedFile(path, wal.Size())
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+
		"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	version, _, err := checkSchema(ctx, db, path)
	if err == nil && version == 0 {
		// An empty file (or one with no table) is a new database to Open,
		// but nothing to check or copy: said so, rather than "no such
		// table: goose_db_version".
		err = fmt.Errorf("%w: %s holds no comb schema (an empty file?)", combtype.ErrNotComb, path)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// isFull reports whether err is SQLite's "database or disk is full", from
// the disk or from the page cap set by Options.MaxDBBytes.
func isFull(err error) bool { return sqliteCode(err) == sqliteFull }

// sqliteExtendedCode is the extended SQLite result code of err, or 0.
func sqliteExtendedCode(err error) int {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return 0
	}
	return se.Code()
}

// sqliteCode is the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return 0
	}
	// Extended result codes keep the primary code in the low byte.
	return se.Code() & 0xff
}

const (
	sqliteBusy     = 5  // SQLITE_BUSY
	sqliteReadOnly = 8  // SQLITE_READONLY
	sqliteIOErr    = 10 // SQLITE_IOERR
	sqliteCorrupt  = 11 // SQLITE_CORRUPT
	sqliteFull     = 13 // SQLITE_FULL
	sqliteNotADB   = 26 // SQLITE_NOTADB

	// sqliteReadOnlyRollback (SQLITE_READONLY_ROLLBACK) is a hot journal
	// that a read-only connection cannot roll back.
	sqliteReadOnlyRollback = sqliteReadOnly | 3<<8
)

// sqliteMessage is SQLite's own words in err, without the context
// wrapped around them.
func sqliteMessage(err error) string {
	var se interface {
		error
		Code() int
	}
	if errors.As(err, &se) {
		return se.Error()
	}
	return err.Error()
}

// isMalformed reports whether err is SQLite finding a page of the file
// damaged ("database disk image is malformed").
func isMalformed(err error) bool { return sqliteCode(err) == sqliteCorrupt }

// isBusy reports whether err is SQLite giving up on a lock another
// connection holds, after the busy timeout.
func isBusy(err error) bool { return sqliteCode(err) == sqliteBusy }

// isUnwritable reports whether err is the file system refusing SQLite's
// reads or writes of the file (read-only, immutable, permissions taken
// away, a disk error), not anything in the statement.
func isUnwritable(err error) bool {
	code := sqliteCode(err)
	return code == sqliteReadOnly || code == sqliteIOErr
}

// classify marks a write that failed for lack of space with ErrFull, one
// that found the file locked by another program with ErrFileBusy, and a
// read or write that met a damaged page with ErrDamaged, so callers can
// tell them from a bug and answer them as such. The server's own connections
// mark damage as they return it (openSQLite); this marks it on the paths
// that open a connection of their own.
func classify(err error) error {
	switch {
	case err == nil || errors.Is(err, combtype.ErrFull) || errors.Is(err, combtype.ErrFileBusy) || errors.Is(err, combtype.ErrDamaged) ||
		errors.Is(err, combtype.ErrUnwritable):
		return err
	case isDamage(err):
		return fmt.Errorf("%w: %w", combtype.ErrDamaged, err)
	case isFull(err):
		return fmt.Errorf("%w: %w", combtype.ErrFull, err)
	case isBusy(err):
		return fmt.Errorf("%w: %w", combtype.ErrFileBusy, err)
	case isUnwritable(err):
		return fmt.Errorf("%w: %w", combtype.ErrUnwritable, err)
	}
	return err
}
