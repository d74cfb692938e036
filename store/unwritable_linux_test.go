package store

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// A file the file system stops taking writes to while served (made
// immutable here; a file system remounted read-only or a disk error
// fails the same way, SQLITE_IOERR or SQLITE_READONLY): each write fails
// whole as ErrUnwritable, which the server answers 503 and its clients
// retry, Health says so, and once the file can be written again writes
// go on and nothing answered before is lost. Before, each was an
// unnamed error (a 500 "Internal server error"), Health stayed healthy,
// and a failed batch was split to commit op by op, each failing again.
func TestAFileThatCannotBeWrittenFailsWritesAsUnwritable(t *testing.T) {
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Skip("chattr is not installed")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	push := func(id string) error { return pushID(ctx, s, id) }
	for i := range 5 {
		if err := push(fmt.Sprint("before-", i)); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{path, path + "-wal"}
	if out, err := exec.Command(chattr, append([]string{"+i"}, files...)...).CombinedOutput(); err != nil {
		t.Skipf("chattr +i (needs root and a file system that keeps the flag): %v: %s", err, out)
	}
	undo := func() {
		if out, err := exec.Command(chattr, append([]string{"-i"}, files...)...).CombinedOutput(); err != nil {
			t.Errorf("chattr -i: %v: %s", err, out)
		}
	}
	t.Cleanup(undo)
	for i := range 3 {
		if err := push(fmt.Sprint("refused-", i)); !errors.Is(err, combtype.ErrUnwritable) {
			t.Fatalf("push to an immutable file: %v, want ErrUnwritable", err)
		}
	}
	if err := s.Health(ctx); !errors.Is(err, combtype.ErrUnwritable) {
		t.Errorf("health while the file cannot be written: %v, want ErrUnwritable", err)
	}
	undo()
	if err := push("after"); err != nil {
		t.Fatalf("push once the file can be written again: %v", err)
	}
	if err := s.Health(ctx); err != nil {
		t.Errorf("health once the file can be written again: %v", err)
	}
	if ids := storedIDs(t, s); fmt.Sprint(ids) != "[after before-0 before-1 before-2 before-3 before-4]" {
		t.Errorf("stored: %v, want the five before and the one after, none refused", ids)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Check(ctx, path); err != nil || len(rep.Findings) > 0 {
		t.Errorf("check: %+v, %v", rep, err)
	}
}
