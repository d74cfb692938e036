package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// A damaged WAL, found before SQLite's recovery drops what follows it.
//
// When a database opens after a crash, SQLite replays its WAL frame by
// frame and stops at the first frame whose checksum or salt is wrong:
// every commit after it is discarded, silently. That is right for a
// write torn by the crash (the last frames, never acknowledged), and a
// loss when a frame in the middle was damaged on disk: every commit after
// it had been answered. SQLite's checksums chain each frame to the one
// before, from the stored value, so a frame after a damaged one still
// verifies on its own; a commit frame that does, past the frame recovery
// stops at, is a commit recovery will drop.
//
// Open reads the WAL that way before SQLite does (the process holds no
// SQLite connection to the file yet, so closing this descriptor drops no
// lock of SQLite's: lock.go), and when it finds such commits it keeps a
// copy of the WAL as found beside it, the only place their pages are, and
// says so. Recovery then goes on as SQLite does it: the file opens as of
// the last commit before the damage.

const (
	walMagicLE         = 0x377f0682 // checksums over little-endian words
	walMagicBE         = 0x377f0683 // over big-endian ones
	walFrameHeaderSize = 24
)

// walScan is what a WAL holds, read as recovery reads it.
type walScan struct {
	frames    int   // whole frames of the current generation (the header's salts)
	kept      int   // commits recovery keeps
	badFrame  int   // the frame recovery stops at, or -1
	dropped   int   // commits after it that verify: recovery drops them
	droppedAt int64 // the byte offset of badFrame
	// header is set when the WAL's header is what is damaged: recovery
	// reads none of the WAL, and every commit that verifies is dropped
	// (badFrame 0, droppedAt 0).
	header bool
}

// scanWAL reads the WAL at walFile. A missing or empty WAL, or one whose
// header does not verify and whose first frame does not either (recovery
// reads none of it then, as for a WAL that was being started), is
// reported as holding nothing. A header that does not verify before a
// first frame that does (against the salts the frame repeats and the
// checksum the header stored, or the one its other bytes make) is a
// damaged header: recovery would drop every commit, all of them answered.
func scanWAL(walFile string) (walScan, error) {
	scan := walScan{badFrame: -1}
	if fi, err := os.Stat(walFile); err != nil || !fi.Mode().IsRegular() {
		// Absent, or not a file (checkSideFiles names it): opened, a
		// named pipe would block until something wrote to it.
		return scan, nil
	}
	f, err := os.Open(walFile)
	if errors.Is(err, fs.ErrNotExist) {
		return scan, nil
	}
	if err != nil {
		return scan, fmt.Errorf("read %s: %w", walFile, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<17) // a frame of the largest page fits, for Peek
	var hdr [walHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return scan, nil // shorter than a header: nothing to recover
	}
	words, pageSize, s0, s1, ok := walHeader(hdr[:])
	salt1, salt2 := binary.BigEndian.Uint32(hdr[16:]), binary.BigEndian.Uint32(hdr[20:])
	if !ok {
		if words, pageSize, s0, s1, ok = damagedHeader(hdr[:], pageSize, strings.TrimSuffix(walFile, "-wal"), r); !ok {
			return scan, nil
		}
		first, _ := r.Peek(walFrameHeaderSize)
		salt1, salt2 = binary.BigEndian.Uint32(first[8:]), binary.BigEndian.Uint32(first[12:])
		scan.header, scan.badFrame = true, 0
	}
	frame := make([]byte, walFrameHeaderSize+pageSize)
	for i := 0; ; i++ {
		if _, err := io.ReadFull(r, frame); err != nil {
			break // the end, or a frame cut short: recovery reads no further
		}
		fh, page := frame[:walFrameHeaderSize], frame[walFrameHeaderSize:]
		current := binary.BigEndian.Uint32(fh[8:]) == salt1 && binary.BigEndian.Uint32(fh[12:]) == salt2
		c0, c1 := walChecksum(words, s0, s1, fh[:8])
		c0, c1 = walChecksum(words, c0, c1, page)
		stored0, stored1 := binary.BigEndian.Uint32(fh[16:]), binary.BigEndian.Uint32(fh[20:])
		ok := current && binary.BigEndian.Uint32(fh[0:]) != 0 && c0 == stored0 && c1 == stored1
		commit := binary.BigEndian.Uint32(fh[4:]) != 0
		if current {
			scan.frames++
		}
		switch {
		case scan.badFrame < 0 && ok:
			if commit {
				scan.kept++
			}
		case scan.badFrame < 0:
			scan.badFrame, scan.droppedAt = i, int64(walHeaderSize+i*len(frame))
		case ok && commit:
			scan.dropped++
		}
		// The next frame chains from this one's stored checksum, which is
		// what it was written against, damaged or not.
		s0, s1 = stored0, stored1
	}
	return scan, nil
}

// walHeader reads a WAL header as recovery does: ok only when its magic,
// page size and checksum hold. pageSize is the one it states, if valid.
func walHeader(hdr []byte) (words binary.ByteOrder, pageSize int, s0, s1 uint32, ok bool) {
	pageSize = validPageSize(int(binary.BigEndian.Uint32(hdr[8:])))
	magic := binary.BigEndian.Uint32(hdr[0:])
	if (magic != walMagicLE && magic != walMagicBE) || pageSize == 0 {
		return nil, pageSize, 0, 0, false
	}
	words = binary.ByteOrder(binary.LittleEndian)
	if magic == walMagicBE {
		words = binary.BigEndian
	}
	s0, s1 = walChecksum(words, 0, 0, hdr[:24])
	return words, pageSize, s0, s1, s0 == binary.BigEndian.Uint32(hdr[24:]) && s1 == binary.BigEndian.Uint32(hdr[28:])
}

// validPageSize is n when n is a page size SQLite writes (1 standing for
// 65536), else 0.
func validPageSize(n int) int {
	if n == 1 {
		n = 65536
	}
	if n < 512 || n > 65536 || n&(n-1) != 0 {
		return 0
	}
	return n
}

// damagedHeader finds how the first frame of a WAL whose header did not
// verify was written, if it verifies at all: in either byte order, from
// the checksum the header stored or the one its first 24 bytes make, of
// the page size the header states or else the database file's.
func damagedHeader(hdr []byte, pageSize int, dbFile string, r *bufio.Reader) (binary.ByteOrder, int, uint32, uint32, bool) {
	if pageSize == 0 {
		var db [headerSize]byte
		f, err := os.Open(dbFile)
		if err != nil {
			return nil, 0, 0, 0, false
		}
		n, _ := f.ReadAt(db[:], 0)
		f.Close()
		if n < len(db) {
			return nil, 0, 0, 0, false
		}
		if pageSize = validPageSize(int(binary.BigEndian.Uint16(db[16:18]))); pageSize == 0 {
			return nil, 0, 0, 0, false
		}
	}
	frame, err := r.Peek(walFrameHeaderSize + pageSize)
	if err != nil {
		return nil, 0, 0, 0, false
	}
	fh, page := frame[:walFrameHeaderSize], frame[walFrameHeaderSize:]
	if binary.BigEndian.Uint32(fh[0:]) == 0 {
		return nil, 0, 0, 0, false
	}
	for _, words := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		m0, m1 := walChecksum(words, 0, 0, hdr[:24])
		for _, seed := range [][2]uint32{{binary.BigEndian.Uint32(hdr[24:]), binary.BigEndian.Uint32(hdr[28:])}, {m0, m1}} {
			c0, c1 := walChecksum(words, seed[0], seed[1], fh[:8])
			c0, c1 = walChecksum(words, c0, c1, page)
			if c0 == binary.BigEndian.Uint32(fh[16:]) && c1 == binary.BigEndian.Uint32(fh[20:]) {
				return words, pageSize, seed[0], seed[1], true
			}
		}
	}
	return nil, 0, 0, 0, false
}

// walChecksum is SQLite's WAL checksum of b (a multiple of 8 bytes) from
// s0, s1.
func walChecksum(words binary.ByteOrder, s0, s1 uint32, b []byte) (uint32, uint32) {
	for i := 0; i+8 <= len(b); i += 8 {
		s0 += words.Uint32(b[i:]) + s1
		s1 += words.Uint32(b[i+4:]) + s0
	}
	return s0, s1
}

// keepDamagedWAL copies the WAL of path aside when recovery would drop
// commits that verify, and returns the copy's path and what was found;
// "" when the WAL holds no such commits.
func keepDamagedWAL(path string, now time.Time) (string, walScan, error) {
	wal := walPath(path)
	scan, err := scanWAL(wal)
	if err != nil || scan.dropped == 0 {
		return "", scan, err
	}
	kept := wal + ".damaged-" + strconv.FormatInt(now.Unix(), 10)
	if err := copyNewFile(wal, kept); err != nil {
		return "", scan, fmt.Errorf("keep the damaged WAL: %w", err)
	}
	return kept, scan, nil
}

// copyNewFile copies src to the new file dst (owner-only) and syncs it.
func copyNewFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := errors.Join(out.Sync(), out.Close()); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}
