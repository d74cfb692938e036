package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// A snapshot past Options.MaxSnapshots and a streaming query past
// Options.MaxStreamQueries are refused and write nothing; expired
// snapshots are not counted, and a delete (of the snapshot, of the queue
// the queries read) makes room.
func TestSnapshotsAndStreamQueriesPastTheirBoundsAreRefused(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), Clock: clk, MaxSnapshots: 2, MaxStreamQueries: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	lossPush(t, s, "q", "", "m")
	lossPush(t, s, "other", "", "m")

	snap := func(name string, ttl time.Duration) error {
		_, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: name, Group: "g", Queue: "q", TTL: ttl})
		return err
	}
	for _, name := range []string{"s1", "s2"} {
		if err := snap(name, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := snap("s3", time.Hour); !errors.Is(err, combtype.ErrSnapshotLimit) {
		t.Fatalf("a third snapshot past a bound of 2 = %v, want ErrSnapshotLimit", err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM snapshots`); n != 2 {
		t.Fatalf("%d snapshot rows after the refusal, want 2", n)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM snapshot_cursors`); n != 2 {
		t.Fatalf("%d snapshot cursors after the refusal, want 2", n)
	}
	if err := s.DeleteSnapshot(ctx, "", "s1"); err != nil {
		t.Fatal(err)
	}
	if err := snap("s3", time.Minute); err != nil {
		t.Fatalf("a snapshot after a delete made room: %v", err)
	}
	// s3 expires; it holds no room from then on, swept or not.
	clk.Advance(2 * time.Minute)
	if err := snap("s4", time.Hour); err != nil {
		t.Fatalf("a snapshot beside an expired one: %v", err)
	}
	if err := snap("s5", time.Hour); !errors.Is(err, combtype.ErrSnapshotLimit) {
		t.Fatalf("a snapshot past s2 and s4 = %v, want ErrSnapshotLimit", err)
	}

	reg := func(name, source, hash string, reset bool) (combtype.StreamRegistration, error) {
		return s.RegisterStreamQuery(ctx, "", combtype.StreamRegisterRequest{Name: name, SourceQueue: source, ConfigHash: hash, Reset: reset})
	}
	for _, name := range []string{"a", "b"} {
		if _, err := reg(name, "q", "h", false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg("c", "other", "h", false); !errors.Is(err, combtype.ErrStreamQueryLimit) {
		t.Fatalf("a third query past a bound of 2 = %v, want ErrStreamQueryLimit", err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_queries`); n != 2 {
		t.Fatalf("%d stream queries after the refusal, want 2", n)
	}
	// A registered query registers again, and resets, at the bound.
	if r, err := reg("a", "q", "h", false); err != nil || r.Fresh {
		t.Fatalf("registering a again = %+v, %v", r, err)
	}
	if r, err := reg("b", "q", "h2", true); err != nil || !r.Reset {
		t.Fatalf("resetting b = %+v, %v", r, err)
	}
	if _, err := s.DeleteQueue(ctx, "", "q"); err != nil {
		t.Fatal(err)
	}
	if r, err := reg("c", "other", "h", false); err != nil || !r.Fresh {
		t.Fatalf("a query once the queue its two read is deleted = %+v, %v", r, err)
	}
}
