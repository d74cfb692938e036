package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Bounding the WAL. SQLite appends every commit to the -wal file and
// starts it over only once a checkpoint has copied all of it into the
// database and no reader still needs it. A reader that holds one read
// transaction (a sqlite3 session, a backup, litestream) keeps it from
// starting over, so the WAL grows by everything committed meanwhile; that
// growth cannot be avoided while the reader holds on. What comb bounds is
// what is left afterwards: journal_size_limit cuts the file back to
// WALSizeLimit whenever SQLite starts the WAL over, and when the writer is
// idle a truncating checkpoint empties a WAL larger than that.

// WALSizeLimit is the size the -wal file is cut back to once no reader
// holds it (SQLite's journal_size_limit).
const WALSizeLimit = 16 << 20

// walIdleAfter is how long the writer waits without a write before it
// shrinks the WAL or looks for room on a full disk; walRetryAfter is how
// often it tries again while a reader or a full disk stops it.
const (
	walIdleAfter  = 500 * time.Millisecond
	walRetryAfter = time.Second
)

// walPath is the WAL of the database at path, beside the file the path
// resolves to, where SQLite puts it. Only ever stat'ed, never opened.
func walPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path + "-wal"
}

// idleWork runs on the writer goroutine when no write came for
// walIdleAfter. It returns when to run again (0: at the next idle time
// after a commit).
func (s *Store) idleWork() time.Duration {
	if s.sideCut() {
		// No checkpoint may run on a cut WAL (sidecut.go).
		s.noteReplaced()
		return 0
	}
	var again time.Duration
	if s.disk.f != nil && (s.disk.refusing || !s.disk.held) && !s.recoverSpace() {
		again = walRetryAfter
	}
	if fi, err := os.Stat(s.walPath); err == nil && fi.Size() > WALSizeLimit {
		if done, err := s.truncateWAL(context.Background()); err != nil || !done {
			again = walRetryAfter
		}
	}
	return again
}

// truncateWAL copies the WAL into the database and empties it, unless a
// reader holds it: then it gives up at once rather than keep the writer
// waiting (busy_timeout is 0 for the checkpoint) and reports false.
func (s *Store) truncateWAL(ctx context.Context) (bool, error) {
	if _, err := s.wconn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false, fmt.Errorf("set busy_timeout: %w", err)
	}
	done, err := s.checkpoint(ctx, "TRUNCATE")
	if _, rerr := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", s.busyTimeout)); rerr != nil && err == nil {
		err = fmt.Errorf("restore busy_timeout: %w", rerr)
	}
	return done, err
}
