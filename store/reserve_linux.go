package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func fallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return errNoFallocate
	}
	if err != nil {
		return fmt.Errorf("fallocate: %w", err)
	}
	return nil
}
