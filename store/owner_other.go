//go:build !unix

package store

import (
	"fmt"
	"os"
)

// takeOwner gives dst the permission bits of the file fi describes; files
// on these systems have no owner to carry over this way.
func takeOwner(dst string, fi os.FileInfo) error {
	if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("set the mode of %s: %w", dst, err)
	}
	return nil
}
