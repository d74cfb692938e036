package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// The lock that keeps a second comb off a database file.
//
// It is an OS lock on one byte of the database file itself, held on a
// descriptor this process keeps open while the Store is open, so it follows
// the file and not its name: a symlink, a hard link, a bind mount or
// another spelling of the path reaches the same lock. The byte lies far past
// anything SQLite reads, writes or locks (its lock bytes sit at 1 GiB and a
// database ends before 2^48 bytes), so the lock never meets SQLite's own,
// nor those of outside readers such as sqlite3 or litestream.
//
// On POSIX systems closing any descriptor of a file drops every fcntl lock
// the process holds on it, SQLite's included; an outside sqlite3 that then
// finds no lock takes the WAL for its own and deletes it on close, under a
// server still writing to it. So nothing here opens and closes a file this
// process serves: an Open of a file already served in this process is
// refused before anything is opened, by the table below, and a descriptor
// opened before that could be known is kept until the Store that serves
// the file closes.
const lockOffset = 1 << 62

// servedFiles are the database files this process holds the lock of. It is
// process-wide because POSIX record locks are: the kernel cannot tell a
// second Open in this process from the first.
var servedFiles struct {
	sync.Mutex
	locks []*dbLock
}

// dbLock is a held lock on one database file.
type dbLock struct {
	f  *os.File    // the locked descriptor, open until release
	id os.FileInfo // the file's identity, for os.SameFile
	// kept are descriptors of the same file that a refused Open of this
	// process opened; they close with f, never while the file is served.
	kept []*os.File
}

// served returns the lock of this process on the file fi, or nil. The
// caller holds servedFiles.
func served(fi os.FileInfo) *dbLock {
	for _, l := range servedFiles.locks {
		if os.SameFile(l.id, fi) {
			return l
		}
	}
	return nil
}

// lockDB opens path, creating it owner-only if missing, and takes the lock
// that keeps every other comb, in this process or another, from opening the
// same file by any name. It never closes a descriptor of a file this
// process serves.
func lockDB(path string) (*dbLock, error) {
	servedFiles.Lock()
	defer servedFiles.Unlock()
	if fi, err := os.Stat(path); err == nil && served(fi) != nil {
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		// No Store of this process had the file when it was looked up
		// above, and the table is held since.
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if l := served(fi); l != nil {
		// The name was pointed at a served file between the two looks.
		l.kept = append(l.kept, f)
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	if err := lockFile(f); err != nil {
		// Closing drops record locks of this process on the file, but no
		// Store of this process serves it.
		f.Close()
		return nil, fmt.Errorf("%w: %s", err, path)
	}
	l := &dbLock{f: f, id: fi}
	servedFiles.locks = append(servedFiles.locks, l)
	return l, nil
}

// readHeader reads the start of the locked file through the lock's own
// descriptor.
func (l *dbLock) readHeader(buf []byte) (int, error) {
	n, err := l.f.ReadAt(buf, 0)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// release closes the lock's descriptors, which releases the lock. Call it
// once every SQLite connection of the Store is closed.
func (l *dbLock) release() error {
	servedFiles.Lock()
	defer servedFiles.Unlock()
	for i, o := range servedFiles.locks {
		if o == l {
			servedFiles.locks = append(servedFiles.locks[:i], servedFiles.locks[i+1:]...)
			break
		}
	}
	errs := []error{l.f.Close()}
	for _, f := range l.kept {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// servedBy reports whether a comb serves the file at path, in this process
// or another, without taking the lock. It opens the file only when no Store
// of this process serves it, and before any connection of the caller does.
func servedBy(path string) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	servedFiles.Lock()
	defer servedFiles.Unlock()
	if served(fi) != nil {
		return true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return lockHeld(f)
}
