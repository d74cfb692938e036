package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// The WAL or shared-memory file cut under the server.
//
// `truncate -s 0 comb.db-wal` (or a log rotator, or `> comb.db-wal`) keeps
// the file and empties it: no name changes, so sideRemoved sees nothing.
// The wal-index in the -shm still lists the frames the WAL held, SQLite
// writes the next commit past a gap of zeros, and the next checkpoint
// copies zeros out of that gap into the database's pages (by hand: the
// WAL cut while comb served, 20 more pushes, and the file was malformed
// or all zeros). Cutting the -shm to nothing makes every later write fail
// as read-only and every read with a disk I/O error, and the server never
// comes back.
//
// Both are told from the wal-index header, the first 96 bytes of the
// -shm: two copies of one 48-byte header that SQLite writes, in the
// machine's byte order, whenever a commit or a checkpoint changes the WAL.
// Its mxFrame is the last frame of the WAL that readers use, and its
// salts are the ones in the WAL's own header. SQLite sets mxFrame to 0
// before it empties or starts over the WAL, and writes frames before it
// counts them, so while mxFrame is not 0 the WAL is at least as long as
// its frames and begins with the same salts. A WAL shorter than that, or
// with other salts, was cut under the server; a -shm shorter than it was
// was cut too.
//
// The writer reads both through descriptors opened once at open and kept
// until the Store closes its connections: closing a descriptor of the -shm
// would drop SQLite's locks on it (lock.go). It reads them before every
// commit, so that no commit and no checkpoint of SQLite's runs on a cut
// WAL, and after every commit and every fileLookEvery while idle with
// the checks of replaced.go. A reading that says cut is read again a moment later (a
// program that writes the file may be between the two copies of the
// header), and only a second one that says so too counts.
//
// The -shm can also be written over in place: a copy saved earlier put
// back (cp, rsync --inplace), or zeros (dd conv=notrunc). SQLite then
// reads the WAL through an index of another moment: it appends the next
// commit over frames already committed, and readers miss what the old
// index does not list. The writer keeps the wal-index header of its last
// reading that agreed with the WAL (mxFrame and salts), and takes the
// -shm for written over when one says what no WAL of SQLite's can go
// through: with the same salts, mxFrame smaller than it was (SQLite only
// ever counts frames up, and starts a WAL over with new salts); salts
// other than the WAL's while the WAL still begins with the salts last
// seen (the WAL did not change: the -shm did; taken for a cut WAL, a
// whole WAL was moved aside and its commits lost); or a header that no
// longer is one (zeros) where one was. Like a cut -shm, it loses nothing
// more: the WAL is whole, and the next start rebuilds the index from it.
//
// Then the server writes nothing more, as for a replaced file. A cut WAL
// lost what it held, and must not be checkpointed: it is moved aside, as
// for a file overwritten in place, and the database file keeps what the
// last checkpoint copied into it. A cut -shm leaves the WAL whole, and
// the next start rebuilds the wal-index from it: nothing is copied and
// nothing moved.

// walIndexHeader is the length of the wal-index header, two copies of 48
// bytes, at the start of the -shm.
const walIndexHeader = 96

// walIndexVersion is the iVersion of every wal-index header SQLite writes.
const walIndexVersion = 3007000

// openSides opens the -wal and -shm found at open for reading, to be kept
// until closeSides. Not on Windows: there a descriptor kept open would stop
// SQLite from deleting the -shm at the last close.
func (s *Store) openSides() {
	if runtime.GOOS == "windows" || s.side.wal == nil || s.side.shm == nil {
		return
	}
	wal, err := os.Open(s.walPath)
	if err != nil {
		s.log.Warn("the WAL could not be opened for reading: a WAL cut while comb serves it will not be noticed", "wal", s.walPath, "err", err)
		return
	}
	shm, err := os.Open(s.side.shmPath)
	if err != nil {
		s.side.walF = wal // kept all the same: closed only with the connections
		s.log.Warn("the -shm could not be opened for reading: a WAL or -shm cut while comb serves it will not be noticed", "shm", s.side.shmPath, "err", err)
		return
	}
	s.side.walF, s.side.shmF = wal, shm
	if fi, err := shm.Stat(); err == nil {
		s.side.shmSize = fi.Size()
	}
}

// closeSides closes what openSides opened, once the SQLite connections are
// closed.
func (s *Store) closeSides() error {
	var errs []error
	for _, f := range []*os.File{s.side.walF, s.side.shmF} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	s.side.walF, s.side.shmF = nil, nil
	return errors.Join(errs...)
}

// sideCut reports whether the WAL or the -shm was cut under the server,
// and sets walCut or shmCut. Writer goroutine only.
func (s *Store) sideCut() bool {
	if s.side.shmF == nil {
		return false
	}
	for try := 0; ; try++ {
		wal, shm, err := s.readSides()
		if err != nil || (!wal && !shm) {
			return false
		}
		if try == 1 {
			s.walCut, s.shmCut = wal, shm
			return true
		}
		time.Sleep(overwrittenAgain)
	}
}

// readSides reads the -shm and the WAL once, as sideCut says.
func (s *Store) readSides() (walCut, shmCut bool, err error) {
	seen := s.side.seen
	walCut, shmCut, size, err := cutNow(s.side.walF, s.side.shmF, s.side.shmSize, &seen)
	if err == nil && !shmCut {
		s.side.shmSize = size
	}
	if err == nil && !walCut && !shmCut {
		s.side.seen = seen
	}
	return walCut, shmCut, err
}

// walIndexSeen is what a reading of the wal-index header that agreed
// with the WAL found.
type walIndexSeen struct {
	ok     bool
	salts  [8]byte
	frames uint32
}

// cutNow reads the -shm and the WAL through their descriptors once: the
// -shm is cut if shorter than shmSize, the largest it was seen, which
// comes back updated, or written over if it contradicts seen, the last
// reading that agreed with the WAL, which comes back updated if this one
// agrees too.
func cutNow(walF, shmF *os.File, shmSize int64, seen *walIndexSeen) (walCut, shmCut bool, size int64, err error) {
	fi, err := shmF.Stat()
	if err != nil {
		return false, false, shmSize, fmt.Errorf("stat %s: %w", shmF.Name(), err)
	}
	if fi.Size() < shmSize {
		return false, true, shmSize, nil
	}
	size = fi.Size()
	var h [walIndexHeader]byte
	if n, err := shmF.ReadAt(h[:], 0); n < len(h) {
		if errors.Is(err, io.EOF) {
			return false, false, size, nil // nothing of a header yet
		}
		return false, false, size, fmt.Errorf("read %s: %w", shmF.Name(), err)
	}
	first, second := h[:48], h[48:]
	if !bytes.Equal(first, second) {
		return false, false, size, nil // being written
	}
	if binary.NativeEndian.Uint32(first[0:4]) != walIndexVersion || first[12] == 0 {
		// Not built yet, unless one was seen: SQLite never unbuilds the
		// header of a -shm its connections hold.
		return false, seen.ok, size, nil
	}
	frames := binary.NativeEndian.Uint32(first[16:20])
	var salts [8]byte
	copy(salts[:], first[32:40])
	if seen.ok && salts == seen.salts && frames < seen.frames {
		return false, true, size, nil // an index of an earlier moment
	}
	if frames == 0 {
		return false, false, size, nil
	}
	pageSize := int64(binary.NativeEndian.Uint16(first[14:16]))
	if pageSize == 1 {
		pageSize = 65536
	}
	wfi, err := walF.Stat()
	if err != nil {
		return false, false, size, fmt.Errorf("stat %s: %w", walF.Name(), err)
	}
	if wfi.Size() < walHeaderSize+int64(frames)*(pageSize+24) {
		return true, false, size, nil
	}
	var w [walHeaderSize]byte
	if n, err := walF.ReadAt(w[:], 0); n < len(w) {
		return false, false, size, fmt.Errorf("read %s: %w", walF.Name(), err)
	}
	// The salts: bytes 16-23 of the WAL header, copied as they are into
	// bytes 32-39 of the wal-index header.
	if !bytes.Equal(w[16:24], salts[:]) {
		if seen.ok && bytes.Equal(w[16:24], seen.salts[:]) {
			return false, true, size, nil // the WAL is as it was: the -shm changed
		}
		return true, false, size, nil
	}
	*seen = walIndexSeen{ok: true, salts: salts, frames: frames}
	return false, false, size, nil
}
