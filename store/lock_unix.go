//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/comb-broker/comb/combtype"
	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive, non-blocking lock on f that the kernel
// releases when the process exits, however it exits.
func lockFile(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return combtype.ErrLocked
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}
