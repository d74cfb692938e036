package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
)

// A file replaced under the server.
//
// The server writes through descriptors it opened, so when the path it
// was given comes to name another file (a backup restored with mv or cp
// over it while the server runs) or none (rm), its writes go on into a
// file no name leads to, and are lost to the one the path names. Worse,
// the WAL and shared-memory files beside the path are still this
// process's: the next process to open the path replays this one's WAL
// into a file it was never part of (by hand: a restore under a running
// server, then kill -9, and comb check found 98 findings in the file at
// the path).
//
// So the writer checks, after every commit (one stat of the path) and
// once a second while idle, that the path still names the file it
// locked. Once it does not, the writer copies its WAL into its own file
// and empties it, so that the path's WAL holds nothing of this process's
// for whoever opens the path next, and writes nothing more: every write,
// the commit that found it included, answers combtype.ErrReplaced, as
// not kept. Reads go on, of the file it has. Its SQLite connections stay
// open until the process exits: closing the last one would copy the WAL
// at the path into this process's file and delete it, under a process
// that may by then serve the new file through it.

// pathReplaced reports whether the store's path no longer names the file
// it locked at open. A path that cannot be looked at for another reason
// (permissions changed) is not taken for replaced, nor any path on a file
// system where the two disagreed at open already (noIdentity): a server
// there would refuse every write from its first commit.
func (s *Store) pathReplaced() bool {
	if s.noIdentity {
		return false
	}
	fi, err := os.Stat(s.absPath)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && !os.SameFile(s.lock.id, fi)
}

// noteReplaced is the writer's turn from serving the file to refusing
// writes, once the path no longer names it; later calls retry emptying
// the WAL if a reader of the file kept it from finishing. Writer
// goroutine only.
func (s *Store) noteReplaced() {
	if !s.replaced.Load() {
		s.replaced.Store(true)
		close(s.replacedCh)
		s.log.Error("the database file was replaced or removed while comb served it: comb writes nothing more and answers writes 503; restart comb to serve the file now at the path",
			"path", s.path)
	}
	if s.walEmptied {
		return
	}
	// Without waiting: the readers of this process may be in the middle
	// of a read, and the next look tries again.
	ctx := context.Background()
	var busy, frames, copied int64
	if _, err := s.wconn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		s.log.Warn("replaced file: the WAL could not be emptied yet", "err", err)
		return
	}
	err := s.wconn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &copied)
	switch {
	case err != nil:
		s.log.Warn("replaced file: the WAL could not be emptied yet", "err", err)
	case busy != 0:
		s.log.Warn("replaced file: the WAL could not be emptied yet: a reader holds it", "walFrames", frames, "copied", copied)
	default:
		s.walEmptied = true
		s.log.Info("replaced file: this process's WAL is copied into the file it served and emptied", "path", s.walPath)
	}
}

// Replaced is closed once the path the store was opened with no longer
// names the file it serves (replaced or removed); from then on every
// write answers combtype.ErrReplaced.
func (s *Store) Replaced() <-chan struct{} { return s.replacedCh }
