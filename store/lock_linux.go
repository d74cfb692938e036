//go:build linux

package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive, non-blocking open-file-description lock on
// comb's byte of f. Unlike a classic fcntl lock it belongs to this
// descriptor, not to the process: closing another descriptor of the file
// (SQLite's, say) leaves it in place. The kernel releases it when the
// descriptor closes, however the process ends. A kernel older than 3.15
// has no such locks and gets the classic one, which lock_unix.go explains.
func lockFile(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockOffset, Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EINVAL) {
		err = unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
	}
	if err != nil {
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return ErrLocked
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// lockHeld reports whether another descriptor holds comb's lock on f.
func lockHeld(f *os.File) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockOffset, Len: 1}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk)
	if errors.Is(err, unix.EINVAL) {
		lk = unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: lockOffset, Len: 1}
		err = unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk)
	}
	if err != nil {
		return false, fmt.Errorf("test lock of %s: %w", f.Name(), err)
	}
	return lk.Type != unix.F_UNLCK, nil
}
