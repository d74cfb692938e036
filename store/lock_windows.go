//go:build windows

package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// lockRange is comb's byte of the database file as LockFileEx takes it.
func lockRange() *windows.Overlapped {
	return &windows.Overlapped{Offset: uint32(lockOffset & 0xffffffff), OffsetHigh: uint32(lockOffset >> 32)}
}

// lockFile takes an exclusive, non-blocking lock on comb's byte of f, past
// the end of any database, so that the mandatory byte-range locks of
// Windows never stop a read or write of SQLite's. Windows releases it when
// the handle closes or the process exits, however it exits.
func lockFile(f *os.File) error {
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, lockRange())
	if err != nil {
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return ErrLocked
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// lockHeld reports whether a handle holds comb's lock on f: a shared lock
// of the same byte is refused while it is held, and released at once when
// it is not.
func lockHeld(f *os.File) (bool, error) {
	h := windows.Handle(f.Fd())
	err := windows.LockFileEx(h, windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, lockRange())
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("test lock of %s: %w", f.Name(), err)
	}
	if err := windows.UnlockFileEx(h, 0, 1, 0, lockRange()); err != nil {
		return false, fmt.Errorf("test lock of %s: %w", f.Name(), err)
	}
	return false, nil
}
