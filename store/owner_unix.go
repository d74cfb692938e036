//go:build unix

package store

import (
	"fmt"
	"os"
	"syscall"
)

// takeOwner gives dst the owner, group and permission bits of the file fi
// describes. A restore run as root (sudo) made the file root's, and the
// service's own user could not open it. Only root may give a file away;
// anyone else's copy is theirs already, so the owner is left then.
func takeOwner(dst string, fi os.FileInfo) error {
	if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("set the mode of %s: %w", dst, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return nil
	}
	if err := os.Chown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("set the owner of %s: %w", dst, err)
	}
	return nil
}
