//go:build unix

package store

import (
	"context"
	"os"
	"syscall"
	"testing"
)

// The restored file takes the mode, and under root the owner, of the file
// it replaces: a restore run with sudo left a file of root's, mode 0600,
// which the service's own user could not open.
func TestARestoredFileKeepsTheOwnerAndModeOfTheOneItReplaces(t *testing.T) {
	ctx := context.Background()
	db, backup := closedWithBackup(t)
	const uid, gid = 4242, 4343
	root := os.Geteuid() == 0
	if err := os.Chmod(db, 0o640); err != nil {
		t.Fatal(err)
	}
	if root {
		if err := os.Chown(db, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := RestoreFile(ctx, db, backup, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("restored file mode %v, want the replaced file's -rw-r-----", fi.Mode().Perm())
	}
	st := fi.Sys().(*syscall.Stat_t)
	if root && (st.Uid != uid || st.Gid != gid) {
		t.Errorf("restored file owned by %d:%d, want the replaced file's %d:%d", st.Uid, st.Gid, uid, gid)
	}
	if !root {
		t.Log("not root: the owner is not carried over, and not checked")
	}
}
