//go:build windows

package store

import (
	"os"

	"golang.org/x/sys/windows"
)

// diskSpace reports the bytes free to this process and the size of the
// volume holding dir.
func diskSpace(dir string) (free, total int64, ok bool) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, 0, false
	}
	var avail, size, all uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &size, &all); err != nil {
		return 0, 0, false
	}
	return int64(avail), int64(size), true
}

func allocate(f *os.File, size int64) error { return writeZeros(f, size) }
