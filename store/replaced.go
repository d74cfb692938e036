package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A file replaced under the server.
//
// The server writes through descriptors it opened, so when the path it
// was given comes to name another file (a backup moved over it while the
// server runs; cp over it writes into the same file, below) or none
// (rm), its writes go on into a file no name leads to, and are lost to
// the one the path names. Worse, the WAL and shared-memory files beside
// the path are still this process's: the next process to open the path
// replays this one's WAL into a file it was never part of (by hand: a
// restore under a running server, then kill -9, and comb check found 98
// findings in the file at the path).
//
// So the writer checks, after every commit (one stat of the path) and
// every fileLookEvery while idle, that the path still names the file it
// locked. Once it does not, the writer copies its WAL into its own file
// and empties it, so that the path's WAL holds nothing of this process's
// for whoever opens the path next, and writes nothing more: every write,
// the commit that found it included, answers combtype.ErrReplaced, as
// not kept. Reads go on, of the file it has. Its SQLite connections stay
// open until the process exits: closing the last one would copy the WAL
// at the path into this process's file and delete it, under a process
// that may by then serve the new file through it.

// fileLookEvery is how often the idle writer looks at the file, its -wal
// and -shm (fileReplaced: a stat of the path, a read of the header, the
// -wal and -shm read and looked up, about 15 us). Until it looks, a kill
// -9 after a file was moved, replaced or written over leaves the path's
// WAL with what that file did not get: looked at once a second, moving the
// database and a kill -9 0.3-0.6 s after lost 176-227 answered pushes to
// the moved file (they were in the WAL at the old path), and a backup
// moved or copied over the path had the old WAL replayed into it.
const fileLookEvery = 100 * time.Millisecond

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

// A file overwritten in place.
//
// A backup copied over the path (cp backup.db comb.db, cat > comb.db)
// writes into the very file the server serves, so the path still names
// it. Every page SQLite then reads from the file is the backup's, and
// every one it reads from its WAL is the server's: the two make no
// database (by hand: a restore so under a running server, 50 more pushes
// answered 201, then kill -9, and comb check found the file malformed).
//
// Such a copy is told by the file's header, which the writer reads
// through its lock's descriptor (never closed while the file is served;
// lock.go) along with the path check. SQLite writes the header only as
// a checkpoint copies page 1 out of the WAL, with a change counter (bytes
// 24-27) that the commit which wrote that page raised from the counter it
// read: so in the file it never decreases. A copy made by comb backup
// or sqlite3's .backup has a counter of 1, below any file comb has
// served (2 once it is in WAL mode); a copy in progress is shorter than a
// header or of another page size. A reading that says so is read again
// (a checkpoint of another program may be writing page 1 at the moment),
// and the file is taken for overwritten only if the second reading says
// so too. A byte copy of the file made while it was served and copied
// back before the counter moved on is not told apart; docs/operations.md
// says to stop the server before a restore.
//
// Then the server writes nothing more, as for a replaced file, and its
// WAL must not reach the copy: the next process would replay it into the
// copy's pages. It is moved aside (a rename opens and closes nothing of
// the file's), to walPath+".overwritten-" and the time, for whoever wants
// the writes it held.

// fileHead is what the writer follows of the database file's header.
type fileHead struct {
	known    bool // read at open; false turns the check off
	pageSize uint32
	counter  uint32
}

// sqliteMagic begins every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// headerSize is the length of a SQLite database file's header.
const headerSize = 100

// readHead reads the file's header through the lock's descriptor: ok
// false when the file is shorter than a header, err when it cannot be
// read.
func (s *Store) readHead() (pageSize, counter uint32, magic, ok bool, err error) {
	var b [headerSize]byte
	n, err := s.lock.f.ReadAt(b[:], 0)
	if n < len(b) {
		if errors.Is(err, io.EOF) {
			return 0, 0, false, false, nil
		}
		return 0, 0, false, false, fmt.Errorf("read the header of %s: %w", s.path, err)
	}
	pageSize = uint32(binary.BigEndian.Uint16(b[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	return pageSize, binary.BigEndian.Uint32(b[24:28]), string(b[:16]) == sqliteMagic, true, nil
}

// initHead takes the header as it is at open.
func (s *Store) initHead() {
	pageSize, counter, magic, ok, err := s.readHead()
	if err != nil || !magic || !ok {
		s.log.Warn("the database file's header could not be read: a backup copied over the file while comb serves it will not be noticed",
			"path", s.path, "err", err)
		return
	}
	s.head = fileHead{known: true, pageSize: pageSize, counter: counter}
}

// overwrittenAgain is how long the writer waits to read a header that
// says the file was overwritten a second time.
const overwrittenAgain = 20 * time.Millisecond

// overwritten reports whether the file was overwritten in place, as its
// header tells (above). Writer goroutine only.
func (s *Store) overwritten() bool {
	if !s.head.known {
		return false
	}
	for try := 0; ; try++ {
		pageSize, counter, magic, ok, err := s.readHead()
		if err != nil {
			return false // not a reading of the header at all
		}
		if ok && magic && pageSize == s.head.pageSize && counter >= s.head.counter {
			s.head.counter = counter
			return false
		}
		if try == 1 {
			return true
		}
		time.Sleep(overwrittenAgain)
	}
}

// setWALAside moves the WAL of a file overwritten in place, or the WAL
// cut under the server (sidecut.go), out of the way of the next process
// to open the path (above); why names the file it is moved to.
func (s *Store) setWALAside(why string) {
	aside := fmt.Sprintf("%s.%s-%s", s.walPath, why, time.Now().UTC().Format("20060102T150405Z"))
	if err := os.Rename(s.walPath, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Error(why+" WAL: it could not be moved aside; remove it before comb opens the file again, or the next start reads it",
			"wal", s.walPath, "err", err)
		return
	}
	s.log.Warn(why+" WAL: this process's WAL is moved aside, so that the next start does not read it",
		"wal", aside)
}

// The WAL and shared-memory files removed under the server.
//
// SQLite keeps the -wal and -shm files beside the database open for as
// long as the process has a connection, and never unlinks them while it
// does. Removed by hand or by a cleaner of temporary files, they live on
// as files no name leads to: commits still go into the removed WAL and
// are answered as kept, and a kill -9 then loses every one not yet
// checkpointed (by hand: rm of the -wal, 100 pushes answered 201, kill
// -9, 82 of them gone, comb check clean). A removed -shm is worse: the
// next program to open the path builds a wal-index of its own, its locks
// and the server's no longer meet, and two writers append to one WAL.
//
// So along with the path the writer checks that the -wal and -shm paths
// still name the files it found there at open. Once one does not, it
// copies its WAL into the database file (still the one at the path, so
// nothing committed is lost with the removed WAL) and writes nothing
// more, as for a replaced file: restarted, comb serves the file with a
// WAL and wal-index of its own again.

// sideFiles is what the writer found at the -wal and -shm paths at open.
type sideFiles struct {
	wal, shm os.FileInfo // nil: not there at open, not checked
	shmPath  string      // resolved once, as walPath is: checked after every commit
	// walF and shmF are the two opened for reading at open, kept until the
	// connections close, and shmSize the largest the -shm was seen
	// (sidecut.go).
	walF, shmF *os.File
	shmSize    int64
	// seen is the wal-index header of the last reading that agreed with
	// the WAL (sidecut.go).
	seen walIndexSeen
}

// initSideFiles takes the -wal and -shm as they are at open.
func (s *Store) initSideFiles() {
	if s.noIdentity {
		return
	}
	s.side.shmPath = shmPath(s.absPath)
	if fi, err := os.Stat(s.walPath); err == nil {
		s.side.wal = fi
	}
	if fi, err := os.Stat(s.side.shmPath); err == nil {
		s.side.shm = fi
	}
	s.openSides()
}

// shmPath is the shared-memory file of the database at path, beside the
// file the path resolves to.
func shmPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path + "-shm"
}

// sideRemoved reports whether the -wal or -shm path no longer names the
// file found there at open, and which.
func (s *Store) sideRemoved() (string, bool) {
	for _, f := range []struct {
		path string
		had  os.FileInfo
	}{{s.walPath, s.side.wal}, {s.side.shmPath, s.side.shm}} {
		if f.had == nil {
			continue
		}
		fi, err := os.Stat(f.path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !os.SameFile(f.had, fi)) {
			return f.path, true
		}
	}
	return "", false
}

// fileReplaced reports whether the file the store serves is no longer
// the one at its path (pathReplaced), was overwritten in place
// (overwritten, which sets inPlace), had its -wal or -shm cut (sideCut,
// which sets walCut or shmCut) or lost one (sideRemoved, which sets
// sideGone). Writer goroutine only.
func (s *Store) fileReplaced() bool {
	if s.pathReplaced() {
		return true
	}
	if s.overwritten() {
		s.inPlace = true
		return true
	}
	if s.sideCut() {
		return true
	}
	if name, gone := s.sideRemoved(); gone {
		s.sideGone = name
		return true
	}
	return false
}

// keptBesideRemoved reports whether a commit that found the -wal or -shm
// removed is kept all the same, once noteReplaced has run: the -shm
// removed, the commit is in the WAL at the path, which the next start
// reads; the -wal removed, once noteReplaced has copied it into the file.
func (s *Store) keptBesideRemoved() bool {
	switch s.sideGone {
	case "":
		return false
	case s.side.shmPath:
		return true
	default:
		return s.walEmptied
	}
}

// noteReplaced is the writer's turn from serving the file to refusing
// writes, once the path no longer names it; later calls retry emptying
// the WAL if a reader of the file kept it from finishing. Writer
// goroutine only.
func (s *Store) noteReplaced() {
	if !s.replaced.Load() {
		s.replaced.Store(true)
		close(s.replacedCh)
		switch {
		case s.walCut:
			s.log.Error("the database file's WAL was cut short (truncated) while comb served it: what it held is lost; comb moves it aside, writes nothing more and answers writes 503; restart comb to serve the file with what its last checkpoint holds",
				"path", s.path, "wal", s.walPath)
		case s.shmCut:
			s.log.Error("the database file's -shm was cut short (truncated) or written over (an earlier copy put back, zeros) while comb served it: comb writes nothing more and answers writes 503; restart comb, which rebuilds it from the WAL",
				"path", s.path, "shm", s.side.shmPath)
		case s.sideGone == s.side.shmPath:
			s.log.Error("the database file's "+filepath.Base(s.sideGone)+" was removed while comb served it: comb writes nothing more and answers writes 503; restart comb, which makes one anew from the WAL",
				"path", s.path, "removed", s.sideGone)
		case s.sideGone != "":
			s.log.Error("the database file's "+filepath.Base(s.sideGone)+" was removed while comb served it: comb copies its WAL into the file, writes nothing more and answers writes 503; restart comb to serve the file with files of its own again",
				"path", s.path, "removed", s.sideGone)
		case s.inPlace:
			s.log.Error("the database file was overwritten (a copy written over it) while comb served it: comb writes nothing more and answers writes 503; restart comb to serve the file now at the path",
				"path", s.path)
		default:
			s.log.Error("the database file was replaced or removed while comb served it: comb writes nothing more and answers writes 503; restart comb to serve the file now at the path",
				"path", s.path)
		}
		switch {
		case s.inPlace:
			s.setWALAside("overwritten")
			s.walEmptied = true // nothing of it may reach the copy
		case s.walCut:
			s.setWALAside("cut")
			s.walEmptied = true // a checkpoint would copy the gap's zeros into the file
		case s.shmCut, s.sideGone == s.side.shmPath:
			// The WAL at the path holds every commit, and the next start
			// reads it: a checkpoint now, through a -shm no other process
			// shares, could empty it under one that opened the path since.
			s.walEmptied = true
		}
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
