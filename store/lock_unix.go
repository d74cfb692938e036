//go:build unix && !linux

package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive, non-blocking fcntl lock on comb's byte of
// f, which the kernel releases when the process ends, however it ends.
// Without open-file-description locks this lock belongs to the process, so
// it goes when the process closes any descriptor of the file. The Store
// closes none while it is open: its writer's connection stays open and, in
// WAL mode, holds SQLite's shared lock, and SQLite keeps every descriptor
// of a file open while one of its connections holds a lock there. A second
// Open in this process is refused by lockDB's table, not by this lock.
func lockFile(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockOffset, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return ErrLocked
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// lockHeld reports whether another process holds comb's lock on f.
func lockHeld(f *os.File) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockOffset, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return false, fmt.Errorf("test lock of %s: %w", f.Name(), err)
	}
	return lk.Type != unix.F_UNLCK, nil
}
