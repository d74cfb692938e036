package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
			if ids := storedIDs(t, n); fmt.Sprint(ids) != "[new-0 new-1 new-2]" {
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

// The -wal or -shm beside the file removed under the server (by hand, or
// by a cleaner of temporary files): SQLite goes on with the files it has
// open, no name leads to them, and what it commits to a removed WAL is
// gone with the process. The store writes no more after the commit that
// finds one gone, as for a replaced file, but first copies a removed WAL
// into the file at the path (a removed -shm leaves the WAL at the path
// whole): what a kill -9 leaves there (the file, and the -wal at the
// path if any) holds every write answered as kept, that commit's
// included. Before, writes went on answered as kept, and the file at the
// path held none of the last 20; then that commit was answered as not
// kept while the file held it.
func TestARemovedWALOrSharedMemoryStopsWritesAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	for _, side := range []string{"-wal", "-shm"} {
		t.Run(side, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "comb.db")
			s, err := Open(ctx, Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := range 20 {
				if err := pushID(ctx, s, fmt.Sprint("kept-", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Remove(path + side); err != nil {
				t.Fatal(err)
			}
			if err := pushID(ctx, s, "after"); err != nil {
				t.Fatalf("the push that finds %s removed: %v, want it kept", side, err)
			}
			if err := pushID(ctx, s, "later"); !errors.Is(err, combtype.ErrReplaced) {
				t.Fatalf("a later push: %v, want ErrReplaced", err)
			}
			select {
			case <-s.Replaced():
			default:
				t.Fatal("Replaced is not closed")
			}
			n, crashed := openCrashed(t, path)
			defer n.Close()
			kept := 0
			for _, id := range storedIDs(t, n) {
				if strings.HasPrefix(id, "kept-") {
					kept++
				}
			}
			if kept != 20 || !slices.Contains(storedIDs(t, n), "after") {
				t.Errorf("the file at the path holds %d of the first 20 writes answered as kept, and of the one that found %s removed: %v",
					kept, side, slices.Contains(storedIDs(t, n), "after"))
			}
			if slices.Contains(storedIDs(t, n), "later") {
				t.Error("the file at the path holds a write answered as not kept")
			}
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			if rep, err := Check(ctx, crashed); err != nil || len(rep.Findings) > 0 {
				t.Errorf("check of what the path held: %+v, %v", rep, err)
			}
		})
	}
}

// pushID pushes one message of transactionId id to queue "q" of s.
func pushID(ctx context.Context, s *Store, id string) error {
	_, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: id, Payload: []byte(`"` + id + `"`)}})
	return err
}

// storedIDs is the transactionIds of queue "q"'s messages in s, sorted.
func storedIDs(t *testing.T, s *Store) []string {
	t.Helper()
	msgs, _, err := s.ListMessages(context.Background(), "", combtype.MessageFilter{Queue: "q", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.TxnID)
	}
	slices.Sort(ids)
	return ids
}

// openCrashed opens a copy of what a kill -9 would leave at path now: the
// file, and the -wal at the path if there is one. It returns the copy's
// path too.
func openCrashed(t *testing.T, path string) (*Store, string) {
	t.Helper()
	crashed := filepath.Join(t.TempDir(), "comb.db")
	copyFile(t, path, crashed)
	if _, err := os.Stat(path + "-wal"); err == nil {
		copyFile(t, path+"-wal", crashed+"-wal")
	}
	n, err := Open(context.Background(), Options{Path: crashed})
	if err != nil {
		t.Fatal(err)
	}
	return n, crashed
}

// pathHolds checks that what the path holds, opened as a crash leaves it,
// is queue "q" with the messages want and nothing else, and checks clean.
func pathHolds(t *testing.T, path string, want []string) {
	t.Helper()
	n, crashed := openCrashed(t, path)
	defer n.Close()
	want = slices.Sorted(slices.Values(want))
	if got := storedIDs(t, n); !slices.Equal(got, want) {
		t.Errorf("the file at the path holds %v, want %v", got, want)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Check(context.Background(), crashed); err != nil || len(rep.Findings) > 0 {
		t.Errorf("check of what the path held: %+v, %v", rep, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A file emptied (or removed) after a crash, its WAL left beside it: the
// WAL holds the last writes of a database, and SQLite would take the
// empty file for a new one and delete that WAL at its first read. Open
// refuses instead and leaves the WAL where it is. Before, the store
// opened empty and the WAL was gone.
func TestAnEmptiedFileBesideItsWALIsRefused(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"emptied", "removed"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "comb.db")
			s, err := Open(ctx, Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := range 10 {
				if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(fmt.Sprint(i))}}); err != nil {
					t.Fatal(err)
				}
			}
			// What a kill -9 leaves, then the file emptied or removed.
			crashed := filepath.Join(t.TempDir(), "comb.db")
			copyFile(t, path+"-wal", crashed+"-wal")
			if how == "emptied" {
				if err := os.WriteFile(crashed, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			wal, err := os.Stat(crashed + "-wal")
			if err != nil || wal.Size() <= walHeaderSize {
				t.Fatalf("the WAL to leave beside the file: %v, %v; the test proves nothing", wal, err)
			}
			n, err := Open(ctx, Options{Path: crashed})
			if err == nil {
				n.Close()
				t.Fatal("opened an emptied file beside a WAL with frames")
			}
			if !errors.Is(err, combtype.ErrDamaged) || !strings.Contains(err.Error(), "WAL beside it") {
				t.Errorf("open: %v, want ErrDamaged naming the WAL", err)
			}
			// The refusal made the file it refused, empty, and left it.
			if _, err := os.Lstat(crashed); how == "removed" && err == nil {
				t.Error("the refused open left a file at the path")
			}
			if fi, err := os.Stat(crashed + "-wal"); err != nil || fi.Size() != wal.Size() {
				t.Errorf("the WAL after the refused open: %v, %v; want it as it was", fi, err)
			}
			if how == "removed" {
				return // comb check of a missing file says it is missing
			}
			if _, err := Check(ctx, crashed); !errors.Is(err, combtype.ErrDamaged) || !strings.Contains(err.Error(), "WAL beside it") {
				t.Errorf("check: %v, want ErrDamaged naming the WAL", err)
			}
			if fi, err := os.Stat(crashed + "-wal"); err != nil || fi.Size() != wal.Size() {
				t.Errorf("the WAL after the refused check: %v, %v; want it as it was", fi, err)
			}
		})
	}
}

// The -wal or -shm cut to nothing under the server (truncate -s 0, a log
// rotator, > comb.db-wal): no name changes, and SQLite goes on with a
// wal-index that lists frames the WAL no longer holds. The store finds
// the cut before its next commit (or within its once-a-second look while
// idle), answers that write and every later one as not kept, and runs no
// checkpoint: a cut WAL is moved aside, and the file keeps everything its
// last checkpoint copied in; a cut -shm leaves the WAL whole, and every
// write answered as kept is in what the path holds. Before, the next
// commit went past a gap of zeros that a checkpoint then copied into the
// file (malformed, or all zeros), and a cut -shm made every write fail as
// read-only for good.
func TestACutWALOrSharedMemoryStopsWritesAndBreaksNothing(t *testing.T) {
	ctx := context.Background()
	for _, side := range []string{"-wal", "-shm"} {
		for _, when := range []string{"push", "idle"} {
			t.Run(side+" "+when, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "comb.db")
				s, err := Open(ctx, Options{Path: path})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for i := range 20 {
					id := fmt.Sprint("file-", i)
					if err := pushID(ctx, s, id); err != nil {
						t.Fatal(err)
					}
					want = append(want, id)
				}
				if err := s.Close(); err != nil { // checkpointed into the file
					t.Fatal(err)
				}
				if s, err = Open(ctx, Options{Path: path}); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				for i := range 5 {
					id := fmt.Sprint("wal-", i)
					if err := pushID(ctx, s, id); err != nil {
						t.Fatal(err)
					}
					if side == "-shm" {
						want = append(want, id) // a cut -shm leaves them in the WAL
					}
				}
				if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() <= walHeaderSize {
					t.Fatalf("the WAL holds no frames to cut: %v, %v; the test proves nothing", fi, err)
				}
				if err := os.Truncate(path+side, 0); err != nil {
					t.Fatal(err)
				}
				if when == "idle" {
					select {
					case <-s.Replaced():
					case <-time.After(10 * time.Second):
						t.Errorf("the idle writer did not find the %s cut", side)
					}
				}
				if err := pushID(ctx, s, "after"); !errors.Is(err, combtype.ErrReplaced) {
					t.Errorf("push after %s was cut: %v, want ErrReplaced", side, err)
				}
				select {
				case <-s.Replaced():
				default:
					t.Error("Replaced is not closed")
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if side == "-wal" {
					if _, err := os.Stat(path + "-wal"); err == nil {
						t.Error("the cut WAL is still at the path")
					}
					if aside, _ := filepath.Glob(path + "-wal.cut-*"); len(aside) != 1 {
						t.Errorf("the cut WAL moved aside: %v", aside)
					}
				}
				pathHolds(t, path, want)
			})
		}
	}
}

// The -shm written over in place while the server runs: an earlier copy
// of it put back (cp, rsync --inplace), of the same WAL or of one since
// started over, or zeros (dd conv=notrunc). SQLite would go on through
// an index of another moment, writing the next commit over committed
// frames; and an earlier WAL's index was taken for a cut WAL, which was
// moved aside whole and its commits lost at the next start. The store
// stops writing and keeps the WAL, from which the next start rebuilds
// the index: every write answered as kept is in what the path holds.
func TestASharedMemoryWrittenOverKeepsTheWAL(t *testing.T) {
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("no dd") // coreutils: on every machine the tests run on
	}
	ctx := context.Background()
	for _, over := range []string{"earlier index", "earlier WAL's index", "zeros"} {
		for _, when := range []string{"push", "idle"} {
			t.Run(over+" "+when, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "comb.db")
				s, err := Open(ctx, Options{Path: path})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				var want []string
				push := func(prefix string) {
					for i := range 5 {
						id := fmt.Sprint(prefix, i)
						if err := pushID(ctx, s, id); err != nil {
							t.Fatal(err)
						}
						want = append(want, id)
					}
				}
				push("a-")
				saved, err := os.ReadFile(path + "-shm")
				if err != nil {
					t.Fatal(err)
				}
				if over == "earlier WAL's index" {
					// A checkpoint of another connection lets the next
					// commit start the WAL over, with new salts.
					db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
					if err != nil {
						t.Fatal(err)
					}
					if _, err := db.Exec("PRAGMA wal_checkpoint(RESTART)"); err != nil {
						t.Fatal(err)
					}
					db.Close()
				}
				push("b-")
				if over == "earlier WAL's index" {
					wal, err := os.ReadFile(path + "-wal")
					if err != nil || bytes.Equal(wal[16:24], saved[32:40]) {
						t.Fatalf("the WAL did not start over (%v): the test proves nothing", err)
					}
				}
				if over == "zeros" {
					saved = make([]byte, len(saved))
				}
				// From another process: a descriptor of the -shm closed in
				// this one would drop SQLite's locks on it.
				src := filepath.Join(t.TempDir(), "shm")
				if err := os.WriteFile(src, saved, 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command(dd, "if="+src, "of="+path+"-shm", "conv=notrunc", "status=none").CombinedOutput(); err != nil {
					t.Fatalf("dd: %v %s", err, out)
				}
				if when == "idle" {
					select {
					case <-s.Replaced():
					case <-time.After(10 * time.Second):
						t.Errorf("the idle writer did not find the -shm written over")
					}
				}
				if err := pushID(ctx, s, "after"); !errors.Is(err, combtype.ErrReplaced) {
					t.Errorf("push after the -shm was written over: %v, want ErrReplaced", err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if aside, _ := filepath.Glob(path + "-wal.cut-*"); len(aside) != 0 {
					t.Errorf("the WAL was moved aside: %v", aside)
				}
				pathHolds(t, path, want)
			})
		}
	}
}
