package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// TestAWriteRefusedForSpaceReportsOneFailureNotASpuriousRollback fills a
// database to its page cap. SQLite rolls a transaction back by itself when
// a write fails for lack of space, so the writer's own ROLLBACK then finds
// none: that must not be reported as a second failure ("cannot rollback -
// no transaction is active"), which retention logged every sweep.
func TestAWriteRefusedForSpaceReportsOneFailureNotASpuriousRollback(t *testing.T) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "comb.db"), MaxDBBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rnd := rand.New(rand.NewPCG(7, 8))
	var full error
	for b := 0; b < 1000 && full == nil; b++ {
		items := make([]combtype.PushItem, 20)
		for i := range items {
			raw := make([]byte, 2000)
			for j := range raw {
				raw[j] = 'a' + byte(rnd.IntN(26))
			}
			payload, _ := json.Marshal(string(raw))
			items[i] = combtype.PushItem{Queue: "q", TxnID: fmt.Sprintf("t-%d-%d", b, i), Payload: payload}
		}
		_, full = s.Push(context.Background(), "", items)
	}
	if !errors.Is(full, combtype.ErrFull) {
		t.Fatalf("push past the cap: %v", full)
	}
	if strings.Contains(full.Error(), "rollback") {
		t.Fatalf("a write refused for space reports a second failure: %v", full)
	}
}

// TestFreeSpaceIsMeasuredOncePerIntervalWhileFarAboveTheFloor: a commit of
// pushes measures the disk (a statfs) only when the last measure is older
// than diskMeasureEvery or what it left above the floor may not cover the
// commit; near the floor every commit measures, and below it pushes are
// refused as before.
func TestFreeSpaceIsMeasuredOncePerIntervalWhileFarAboveTheFloor(t *testing.T) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.disk.f == nil || !s.disk.held {
		t.Skip("no disk reserve on this file system")
	}
	var measures, free atomic.Int64
	var now atomic.Int64 // nanoseconds since base
	base := time.Now()
	s.disk.measure = func(string) (int64, int64, bool) {
		measures.Add(1)
		return free.Load(), 1 << 40, true
	}
	s.disk.now = func() time.Time { return base.Add(time.Duration(now.Load())) }
	floor := s.disk.floor()
	push := func(n int) error {
		_, err := s.Push(context.Background(), "", []combtype.PushItem{{Queue: "q", TxnID: fmt.Sprintf("m-%d", n), Payload: []byte(`{"a":1}`)}})
		return err
	}
	n := 0
	// Far above the floor: one measure for many commits.
	free.Store(floor + 10<<30)
	s.disk.forgetMeasure()
	for range 50 {
		if err := push(n); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if got := measures.Load(); got != 1 {
		t.Fatalf("far above the floor, 50 commits in one interval measured %d times, want 1", got)
	}
	now.Add(int64(diskMeasureEvery))
	if err := push(n); err != nil {
		t.Fatal(err)
	}
	n++
	if got := measures.Load(); got != 2 {
		t.Fatalf("a commit after the interval measured %d times in all, want 2", got)
	}
	// Near the floor: what a measure leaves covers one commit, not two.
	measures.Store(0)
	free.Store(floor + commitDiskBound(0) + commitDiskBound(0)/2)
	s.disk.forgetMeasure()
	for range 20 {
		if err := push(n); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if got := measures.Load(); got != 20 {
		t.Fatalf("near the floor, 20 commits measured %d times, want 20", got)
	}
	// Below it, with a fresh measure that had room: refused at once.
	free.Store(floor + 10<<30)
	if err := push(n); err != nil {
		t.Fatal(err)
	}
	n++
	free.Store(floor - 1)
	now.Add(int64(diskMeasureEvery))
	if err := push(n); !errors.Is(err, combtype.ErrFull) {
		t.Fatalf("a push below the floor: %v, want ErrFull", err)
	}
}

// The reserve's path made a symlink or a hard link to another file by
// hand: the reserve is filled and emptied, so through the link it would
// fill or empty that file, the database itself when the link leads to it
// (and closing the reserve would drop SQLite's locks on it). The store
// takes no reserve then, says so, and leaves the file as it was. Before,
// the file a symlink led to grew to the reserve's size.
func TestAReserveThatIsNotAFileOfItsOwnIsNotTaken(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"symlink", "hard link", "hard link to the database"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "comb.db")
			other := filepath.Join(dir, "notes.txt")
			if err := os.WriteFile(other, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			push := func(s *Store, n int) {
				for i := range n {
					if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(fmt.Sprint(i))}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			switch how {
			case "symlink":
				err := os.Symlink(other, path+".reserve")
				if err != nil {
					t.Fatal(err)
				}
			case "hard link":
				if err := os.Link(other, path+".reserve"); err != nil {
					t.Fatal(err)
				}
			default:
				s, err := Open(ctx, Options{Path: path})
				if err != nil {
					t.Fatal(err)
				}
				push(s, 5)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(path + ".reserve"); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(path, path+".reserve"); err != nil {
					t.Fatal(err)
				}
			}
			var logs strings.Builder
			s, err := Open(ctx, Options{Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.disk.f != nil || s.disk.held {
				t.Errorf("the store took a reserve through a %s", how)
			}
			if !strings.Contains(logs.String(), "disk reserve not taken") {
				t.Errorf("nothing said of the reserve not taken:\n%s", logs.String())
			}
			push(s, 5)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if how != "hard link to the database" {
				if b, err := os.ReadFile(other); err != nil || string(b) != "keep me" {
					t.Errorf("the file the reserve led to holds %d bytes (%v), want it as it was", len(b), err)
				}
				return
			}
			if rep, err := Check(ctx, path); err != nil || len(rep.Findings) > 0 || rep.Frames != 10 {
				t.Errorf("check of the database the reserve led to: %+v, %v; want 10 messages, clean", rep, err)
			}
		})
	}
}
