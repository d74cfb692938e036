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

// noFollow: an open on Windows does not follow a symlink made without
// administrator rights, and ownFile refuses one that is there.
const noFollow = 0

// fileLinks is how many names fi has, as far as Windows' file
// information tells: hard links are rare there and not counted.
func fileLinks(os.FileInfo) uint64 { return 1 }
