package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// A purge step spends its budget of rows across detached snapshots and
// stream state keys, not one snapshot or key a write: 30 snapshots of 2
// partitions and 30 queries of 2 state rows each are a few writes, and a
// query without state leaves no key to purge.
func TestAPurgeStepSpansSnapshotsAndStateKeys(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	for _, part := range []string{"p1", "p2"} {
		lossPush(t, s, "src", part, "m")
	}
	for i := range 30 {
		if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: fmt.Sprintf("s%d", i), Group: "g", Queue: "src"}); err != nil {
			t.Fatal(err)
		}
		registerWithState(t, s, fmt.Sprintf("q%d", i), "src", "0b7e5c1e-0000-4000-8000-000000000001", "1", "2")
	}
	for i := range 10 {
		if _, err := s.RegisterStreamQuery(ctx, "", combtype.StreamRegisterRequest{Name: fmt.Sprintf("empty%d", i), SourceQueue: "src", ConfigHash: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.detachQueue(ctx, "", "src"); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_state_detached`); n != 30 {
		t.Fatalf("%d detached state keys, want the 30 queries with state", n)
	}
	// 30 x (2 cursors + the snapshot row), 20 rows a write: 10 snapshots
	// taken and 10 of their cursors, so 5 snapshots a write; the sixth
	// takes the last 5 and finds no other.
	purge := func(what string, f func(w *wtx) (bool, error), want int) {
		t.Helper()
		for ops := 1; ; ops++ {
			if step(t, s, f) {
				if ops != want {
					t.Fatalf("%s purged in %d writes, want %d", what, ops, want)
				}
				return
			}
			if ops > want {
				t.Fatalf("%s not purged in %d writes", what, ops)
			}
			checkClean(t, path, fmt.Sprintf("after %s purge write %d", what, ops))
		}
	}
	purge("snapshots", func(w *wtx) (bool, error) { return w.purgeSnapshotStep(20) }, 6)
	if n := countRows(t, s, `SELECT COUNT(*) FROM snapshots`) + countRows(t, s, `SELECT COUNT(*) FROM snapshot_cursors`); n != 0 {
		t.Fatalf("%d snapshot rows and cursors left", n)
	}
	// The same for 30 keys of 2 state rows.
	purge("stream state", func(w *wtx) (bool, error) { return w.purgeStreamStep(20, 1<<20) }, 6)
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_state`) + countRows(t, s, `SELECT COUNT(*) FROM stream_state_detached`); n != 0 {
		t.Fatalf("%d state rows and keys left", n)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_queries`); n != 0 {
		t.Fatalf("%d stream queries left", n)
	}
}

// The expiry sweep detaches the expired snapshots a batch a write, the
// earliest first, leaving the live ones and those a seek is applying.
func TestTheExpirySweepDetachesInBatches(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	lossPush(t, s, "q", "", "m")
	for i := range 25 {
		if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: fmt.Sprintf("e%02d", i), Queue: "q", TTL: time.Minute + time.Duration(i)*time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "live", Queue: "q", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	var n int
	step(t, s, func(w *wtx) (bool, error) {
		var err error
		n, err = w.expireSnapshotStep(10)
		return true, err
	})
	if n != 10 {
		t.Fatalf("one step detached %d, want 10", n)
	}
	if l, err := s.Snapshots(ctx, "", "", ""); err != nil || len(l) != 1 || l[0].Name != "live" {
		t.Fatalf("snapshots after a step = %+v, %v", l, err)
	}
	// The first to expire went first.
	if n := countRows(t, s, `SELECT COUNT(*) FROM snapshots WHERE created_at = 0 AND name < 'e10'`); n != 10 {
		t.Fatalf("%d of e00..e09 detached, want 10", n)
	}
	total, err := s.expireSnapshots(ctx, 10)
	if err != nil || total != 15 {
		t.Fatalf("the sweep's rest = %d, %v; want 15", total, err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM snapshots`); n != 1 {
		t.Fatalf("%d snapshot rows after the sweep, want live", n)
	}
}
