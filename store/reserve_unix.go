//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// diskSpace reports the bytes free to this process and the size of the
// file system holding dir. It reads the file system's counters and opens
// nothing.
func diskSpace(dir string) (free, total int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), true
}

// allocate gives f size bytes of real blocks: the reserve is only worth
// something if the space is taken, not promised, so a sparse file will not
// do.
func allocate(f *os.File, size int64) error {
	if err := fallocate(f, size); err == nil || !errors.Is(err, errNoFallocate) {
		return err
	}
	return writeZeros(f, size)
}

// noFollow keeps an open of the reserve from following a symlink put in
// its place since ownFile looked.
const noFollow = unix.O_NOFOLLOW

// fileLinks is how many names fi has.
func fileLinks(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
