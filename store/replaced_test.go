package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// A file replaced under the server by its name (a backup restored with mv
// over the path, or the file removed) is written no more: the commit that
// finds it answers as not kept, every later write is refused, the WAL
// beside the path holds nothing of the old file's, and a store opened on
// the path then serves the new file whole. Before, writes went on into
// the file no name led to, answered as kept, and the next open replayed
// the old file's WAL into the new one.
func TestAFileReplacedUnderTheServerIsWrittenNoMore(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"mv", "rm"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "comb.db")
			s, err := Open(ctx, Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			push := func(s *Store, ids ...string) error {
				var items []combtype.PushItem
				for _, id := range ids {
					items = append(items, combtype.PushItem{Queue: "q", TxnID: id, Payload: []byte(`"` + id + `"`)})
				}
				_, err := s.Push(ctx, "", items)
				return err
			}
			for i := range 20 {
				if err := push(s, fmt.Sprint("old-", i)); err != nil {
					t.Fatal(err)
				}
			}
			switch how {
			case "mv":
				// The file to restore: another comb database, closed.
				other := filepath.Join(dir, "restore.db")
				o, err := Open(ctx, Options{Path: other})
				if err != nil {
					t.Fatal(err)
				}
				if err := push(o, "new-0", "new-1", "new-2"); err != nil {
					t.Fatal(err)
				}
				if err := o.Close(); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(other, path); err != nil {
					t.Fatal(err)
				}
			case "rm":
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
			if err := push(s, "after"); !errors.Is(err, combtype.ErrReplaced) {
				t.Fatalf("push after the file was replaced: %v, want ErrReplaced", err)
			}
			if err := push(s, "later"); !errors.Is(err, combtype.ErrReplaced) {
				t.Fatalf("a later push: %v, want ErrReplaced", err)
			}
			select {
			case <-s.Replaced():
			default:
				t.Fatal("Replaced is not closed")
			}
			if err := s.Health(ctx); !errors.Is(err, combtype.ErrReplaced) {
				t.Errorf("health: %v, want ErrReplaced", err)
			}
			if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
				t.Errorf("the WAL beside the path holds %d bytes of the replaced file", fi.Size())
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if how == "rm" {
				return
			}
			n, err := Open(ctx, Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			msgs, _, err := n.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range msgs {
				ids = append(ids, m.TxnID)
			}
			slices.Sort(ids)
			if fmt.Sprint(ids) != "[new-0 new-1 new-2]" {
				t.Errorf("the file at the path holds %v, want what was restored", ids)
			}
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			if rep, err := Check(ctx, path); err != nil || len(rep.Findings) > 0 || rep.Frames != 3 {
				t.Errorf("check of the restored file: %+v, %v", rep, err)
			}
		})
	}
}

// With nothing written, the writer finds the replacement within its
// once-a-second look, and empties its WAL then.
func TestAFileReplacedWhileIdleIsFoundWithinSeconds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "comb.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, filepath.Join(dir, "aside.db")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Replaced():
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not find the file gone")
	}
	if err := s.Health(ctx); !errors.Is(err, combtype.ErrReplaced) {
		t.Errorf("health: %v, want ErrReplaced", err)
	}
}

// A program embedding the store that changes its working directory after
// opening a file by a relative path still has the same file: the path is
// the one it named at open.
func TestARelativePathStaysTheFileAfterTheWorkingDirectoryChanges(t *testing.T) {
	ctx := context.Background()
	t.Chdir(t.TempDir())
	s, err := Open(ctx, Options{Path: "comb.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Chdir(t.TempDir())
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte("1")}}); err != nil {
		t.Fatalf("push after a change of directory: %v", err)
	}
	select {
	case <-s.Replaced():
		t.Fatal("the file is taken for replaced")
	default:
	}
}
