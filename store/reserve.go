package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Disk headroom. On a file system full to the last byte SQLite cannot
// commit anything, deletes included: a delete appends its pages to the WAL,
// and the checkpoint that would let the WAL be reused must first copy the
// commits already in it into the database file, which then grows. comb
// keeps two margins so that deletes, retention and acks always find room:
//
//   - a floor: a write that carries payloads (pushes, transactions with
//     pushes, buffered pushes, stream sinks, traces) is refused with
//     ErrFull while the file system has less than half a reserve free, so
//     comb's own pushes never fill the disk to the last byte and the
//     checkpoints that keep the WAL short keep completing;
//   - a reserve: a file of ordinary blocks beside the database (never the
//     database, -wal or -shm path: closing any descriptor of those would
//     drop SQLite's locks), for when something else fills the disk. When a
//     write that carries no payloads (a queue delete, retention, an ack, a
//     claim) then fails for lack of space, the writer gives the reserve
//     back to the file system and commits that write again at once, in the
//     room given back, before another program can take it.
//
// While the disk is below the floor, the writer returns the pages that
// deletes and retention freed to the file system in bounded vacuum steps,
// and takes the reserve again once there is room for it and the floor:
// pushes then resume, with no restart and no file removed by hand.

// Sizing of the reserve.
const (
	// DefaultDiskReserve is the reserve on a file system of at least
	// 16 × its size: room for a retention or delete op, a bounded vacuum
	// step and the checkpoint of the WAL left by the last commits.
	DefaultDiskReserve = 16 << 20
	// minDiskReserve: below this the file system is too small to matter;
	// the reserve is still taken so the mechanism is the same.
	minDiskReserve = 64 << 10
	// reserveVacuumPages is the most free pages one recovery step returns
	// to the file system; each moved page is written to the WAL first.
	reserveVacuumPages = 128
	// reserveMaxSteps bounds the vacuum steps of one recovery pass.
	reserveMaxSteps = 64
	// defaultWALPages is SQLite's default wal_autocheckpoint.
	defaultWALPages = 1000
)

// diskReserve is the writer's headroom. Writer goroutine only, after Open.
type diskReserve struct {
	path string
	size int64 // 0 = no reserve (the file system could not be measured)
	f    *os.File
	held bool
	// refusing is set while payload writes are refused, so the change is
	// logged once each way.
	refusing bool
	// spare is what the last measure of the disk (at spareAt) left above
	// the floor, less a bound of what each commit admitted since may have
	// written. While it covers the next commit's bound and the measure is
	// younger than diskMeasureEvery, the next commit is admitted without
	// measuring again: a statfs per commit was 2.5% of the server's CPU
	// for pushes of one message. Near the floor the spare is below one
	// commit's bound, so every commit measures, as it always did.
	spare   int64
	spareAt time.Time
	// measure reads the free and total bytes of a directory's file
	// system; now reads the time. diskSpace and time.Now unless a test
	// sets them.
	measure func(dir string) (free, total int64, ok bool)
	now     func() time.Time
}

// diskMeasureEvery bounds how old a measure of the free space may be and
// still admit a commit: what other programs write meanwhile is caught by
// the next measure, or by SQLite's own SQLITE_FULL (onFull).
const diskMeasureEvery = 100 * time.Millisecond

// commitDiskBound bounds what a commit carrying bytes of payloads may add
// to the disk: its WAL frames (whole pages, ~20 per commit of small
// pushes) and their later copy into the database file.
func commitDiskBound(bytes int64) int64 { return 2*bytes + 1<<20 }

// admitMeasured reports whether a commit bounded by bound fits in what
// the last recent measure left above the floor, and takes it from there.
func (r *diskReserve) admitMeasured(bound int64) bool {
	if !r.held || r.refusing || r.spareAt.IsZero() || r.spare < bound || r.clock().Sub(r.spareAt) >= diskMeasureEvery {
		return false
	}
	r.spare -= bound
	return true
}

// forgetMeasure makes the next commit that carries payloads measure.
func (r *diskReserve) forgetMeasure() { r.spare, r.spareAt = 0, time.Time{} }

func (r *diskReserve) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// reservePath is where the reserve of the database at path lives: beside
// the file the path resolves to, so a symlinked database keeps its
// headroom on its own file system. Resolving reads links, never opens the
// database.
func reservePath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path + ".reserve"
}

// reserveSize is the reserve for a file system of total bytes: a sixteenth
// of it, at most DefaultDiskReserve.
func reserveSize(total int64) int64 {
	return max(min(total/16, DefaultDiskReserve), minDiskReserve)
}

// walPagesFor is the wal_autocheckpoint that keeps the commits waiting in
// the WAL (what a checkpoint must copy into a growing database file) well
// inside the floor and the reserve.
func walPagesFor(reserve, pageSize int64) int64 {
	return max(min(reserve/4/pageSize, defaultWALPages), 16)
}

// floor is the free space below which payload writes are refused.
func (r *diskReserve) floor() int64 { return r.size / 2 }

// initDisk sizes and takes the reserve and sets the WAL's bounds on the
// writer's connection. A reserve that cannot be taken (the disk is full at
// start) leaves payload writes refused until there is room for it.
func (s *Store) initDisk(ctx context.Context) error {
	var pageSize int64
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return fmt.Errorf("read page_size: %w", err)
	}
	s.pageSize = pageSize
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&s.busyTimeout); err != nil {
		return fmt.Errorf("read busy_timeout: %w", err)
	}
	s.walPath = walPath(s.absPath)
	r := &s.disk
	r.path = reservePath(s.path)
	walPages := int64(defaultWALPages)
	if _, total, ok := diskSpace(filepath.Dir(r.path)); ok {
		r.size = reserveSize(total)
		walPages = walPagesFor(r.size, pageSize)
	}
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walPages)); err != nil {
		return fmt.Errorf("set wal_autocheckpoint: %w", err)
	}
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA journal_size_limit = %d", WALSizeLimit)); err != nil {
		return fmt.Errorf("set journal_size_limit: %w", err)
	}
	if r.size == 0 {
		return nil
	}
	if err := ownFile(r.path); err != nil {
		s.log.Warn("disk reserve not taken: its path is not a file of its own; remove it and restart comb to have the headroom deletes and retention need on a full disk",
			"reserve", r.path, "err", err)
		r.size = 0
		return nil
	}
	f, err := os.OpenFile(r.path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return fmt.Errorf("open disk reserve: %w", err)
	}
	r.f = f
	if err := r.take(); err != nil {
		s.log.Warn("disk reserve not taken: writes that carry payloads are refused until there is room",
			"reserve", r.path, "bytes", r.size, "err", err)
	}
	return nil
}

// ownFile reports why path, where the reserve is kept, is not a file of
// its own, if it is not: the reserve is filled and emptied, so through a
// symlink or a hard link it would fill or empty another file (the
// database itself, by a link made by hand, and its locks with it: a
// descriptor of the database closed drops them, lock.go). It is looked
// at without opening it; a missing path is created as a file of its own.
func ownFile(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%v)", path, fi.Mode().Type())
	case fileLinks(fi) > 1:
		return fmt.Errorf("%s has %d names (a hard link to another file)", path, fileLinks(fi))
	}
	return nil
}

// closeDisk closes the reserve's file and leaves it in place: it holds the
// headroom until the next start.
func (s *Store) closeDisk() error {
	if s.disk.f == nil {
		return nil
	}
	return s.disk.f.Close()
}

// take allocates the reserve's blocks.
func (r *diskReserve) take() error {
	if r.held {
		return nil
	}
	r.forgetMeasure()
	if err := allocate(r.f, r.size); err != nil {
		// Whatever part was allocated is given back: a partial reserve
		// would only take the room deletes need.
		r.f.Truncate(0)
		return fmt.Errorf("allocate %d bytes: %w", r.size, err)
	}
	r.held = true
	return nil
}

// release gives the reserve's blocks back to the file system.
func (r *diskReserve) release() error {
	if !r.held {
		return nil
	}
	r.forgetMeasure()
	if err := r.f.Truncate(0); err != nil {
		return fmt.Errorf("release disk reserve: %w", err)
	}
	r.held = false
	return nil
}

// free is the space left on the reserve's file system; ok is false where
// it cannot be read, and then no write is refused for want of it.
func (r *diskReserve) free() (int64, bool) {
	measure := r.measure
	if measure == nil {
		measure = diskSpace
	}
	free, _, ok := measure(filepath.Dir(r.path))
	return free, ok
}

// onFull is called by the writer when a commit of batch failed for lack
// of space. If the disk is below the floor and batch holds an op that
// carries no payloads, the reserve is given back for it and onFull reports
// true: those ops are then committed again, at once. A push never gets
// the reserve. A cap set by MaxDBBytes fills the database, not the disk,
// and one large commit can fail where small ones fit: the reserve stays.
func (s *Store) onFull(batch []*writeOp) bool {
	r := &s.disk
	r.forgetMeasure()
	if r.f == nil || !r.held {
		return false
	}
	needed := false
	for _, op := range batch {
		needed = needed || op.bytes == 0
	}
	if !needed {
		return false
	}
	if free, ok := r.free(); ok && free >= r.floor() {
		return false
	}
	if err := r.release(); err != nil {
		s.log.Error("disk full", "err", err)
		return false
	}
	s.log.Warn("disk full: gave back the disk reserve so deletes, retention and acks can commit",
		"reserve", r.path, "bytes", r.size)
	return true
}

// admit is the writer's gate for a batch that carries payloads: below the
// floor, or without the reserve, it first tries to make room, and if there
// is still none it answers every op that carries payloads with ErrFull and
// returns the others.
func (s *Store) admit(batch []*writeOp) []*writeOp {
	r := &s.disk
	if r.f == nil {
		return batch
	}
	payloads := false
	var bytes int64
	for _, op := range batch {
		payloads = payloads || op.bytes > 0
		bytes += int64(op.bytes)
	}
	if !payloads || r.admitMeasured(commitDiskBound(bytes)) {
		return batch
	}
	if s.roomForPayloads() {
		r.spare -= commitDiskBound(bytes)
		return batch
	}
	if s.recoverSpace() {
		return batch
	}
	kept := batch[:0]
	for _, op := range batch {
		if op.bytes > 0 {
			op.done <- fmt.Errorf("%w: less than %d bytes free on the disk beside comb's reserve", combtype.ErrFull, r.floor())
			continue
		}
		kept = append(kept, op)
	}
	return kept
}

// roomForPayloads reports whether payload writes may go: the reserve is
// held and the disk is above the floor. It logs when that changes.
func (s *Store) roomForPayloads() bool {
	r := &s.disk
	free, ok := r.free()
	room := r.held && (!ok || free >= r.floor())
	r.forgetMeasure()
	if room && ok {
		r.spare, r.spareAt = free-r.floor(), r.clock()
	}
	if refusing := !room; refusing != r.refusing {
		r.refusing = refusing
		if room {
			s.log.Info("disk has room again: writes that carry payloads are accepted", "free", free, "reserve", r.size)
		} else {
			s.log.Warn("disk nearly full: writes that carry payloads get 507 until retention, a queue delete or the operator makes room",
				"free", free, "floor", r.floor(), "reserveHeld", r.held)
		}
	}
	return room
}

// recoverSpace, while payload writes have no room, checkpoints the WAL,
// returns free pages of the database to the file system in bounded steps
// (each step's moved pages go through the WAL, which the checkpoint after
// it lets be reused and which truncates the file), and takes the reserve
// again once there is room for it and the floor. It reports whether
// payload writes have room now.
func (s *Store) recoverSpace() bool {
	r := &s.disk
	ctx := context.Background()
	s.checkpoint(ctx, "PASSIVE")
	for step := 0; ; step++ {
		free, ok := r.free()
		if !ok {
			return s.roomForPayloads()
		}
		if !r.held && free >= r.size+r.floor() {
			if err := r.take(); err == nil {
				s.log.Info("disk reserve taken again", "reserve", r.path, "bytes", r.size)
				free -= r.size
			}
		}
		if r.held && free >= r.floor() {
			return s.roomForPayloads()
		}
		var freelist int64
		if step == reserveMaxSteps || s.wconn.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&freelist) != nil || freelist == 0 {
			return s.roomForPayloads()
		}
		want := r.floor() - free
		if !r.held {
			want += r.size
		}
		pages := min(freelist, reserveVacuumPages, want/s.pageSize+1)
		if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", pages)); err != nil {
			return s.roomForPayloads()
		}
		if done, _ := s.checkpoint(ctx, "PASSIVE"); !done {
			// A reader holds the WAL: the file cannot shrink yet.
			return s.roomForPayloads()
		}
	}
}

// checkpoint runs a checkpoint of mode on the writer's connection and
// reports whether it copied the whole WAL into the database. Failures are
// not errors here: a checkpoint that cannot complete now (a reader, a full
// disk) leaves the commits durable in the WAL.
func (s *Store) checkpoint(ctx context.Context, mode string) (complete bool, err error) {
	var busy, logFrames, done int64
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &logFrames, &done); err != nil {
		return false, fmt.Errorf("checkpoint %s: %w", mode, err)
	}
	return busy == 0 && logFrames == done, nil
}

var errNoFallocate = errors.New("fallocate not supported")

// writeZeros fills f with size zero bytes and syncs them, for file systems
// that cannot allocate without writing.
func writeZeros(f *os.File, size int64) error {
	if _, err := f.Seek(0, 0); err != nil {
		return fmt.Errorf("seek reserve: %w", err)
	}
	buf := make([]byte, 64<<10)
	for left := size; left > 0; {
		n := min(left, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			return fmt.Errorf("write reserve: %w", err)
		}
		left -= n
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync reserve: %w", err)
	}
	return nil
}
