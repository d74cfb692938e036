//go:build windows

package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/comb-broker/comb/combtype"
	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive, non-blocking lock on f that Windows releases
// when the process exits, however it exits.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if err != nil {
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return combtype.ErrLocked
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}
