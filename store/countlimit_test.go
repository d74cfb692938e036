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

// DeleteStreamQuery deletes one query and all of its state, leaving the
// others and the source queue; its id is gone for cycles, and its name
// registers again as a new query. StreamQueryPage lists a tenant's
// queries by name, a page at a time.
func TestAStreamQueryIsDeletedWithItsStateAlone(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	lossPush(t, s, "src", "", "m")
	const p1, p2 = "0b7e5c1e-0000-4000-8000-000000000001", "0b7e5c1e-0000-4000-8000-000000000002"
	gone := registerWithState(t, s, "b-gone", "src", p1, "1", "2", "3")
	registerWithState(t, s, "b-gone", "src", p2, "4")
	kept := registerWithState(t, s, "a-kept", "src", p1, "5")
	registerWithState(t, s, "c-kept", "src", p2, "6")
	if _, err := s.RegisterStreamQuery(ctx, "other", combtype.StreamRegisterRequest{Name: "b-gone", SourceQueue: "src", ConfigHash: "h"}); err != nil {
		t.Fatal(err)
	}

	page, info, err := s.StreamQueryPage(ctx, "", combtype.Page{Limit: 2})
	if err != nil || len(page) != 2 || page[0].Name != "a-kept" || page[1].Name != "b-gone" || info.Total != 3 || !info.More {
		t.Fatalf("first page = %+v, %+v, %v", page, info, err)
	}
	page, info, err = s.StreamQueryPage(ctx, "", combtype.Page{Limit: 2, Offset: 2})
	if err != nil || len(page) != 1 || page[0].Name != "c-kept" || info.More {
		t.Fatalf("second page = %+v, %+v, %v", page, info, err)
	}

	q, err := s.DeleteStreamQuery(ctx, "", "b-gone")
	if err != nil || q.ID != gone {
		t.Fatalf("delete = %+v, %v", q, err)
	}
	if _, err := s.DeleteStreamQuery(ctx, "", "b-gone"); !errors.Is(err, combtype.ErrQueryNotFound) {
		t.Fatalf("second delete = %v, want ErrQueryNotFound", err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_state WHERE query_id = ?`, gone) + countRows(t, s, `SELECT COUNT(*) FROM stream_state_detached`); n != 0 {
		t.Fatalf("%d state rows or keys of the deleted query left", n)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_state`); n != 2 {
		t.Fatalf("%d state rows left, want the two kept queries' 2", n)
	}
	if res, err := s.Cycle(ctx, "", combtype.CycleRequest{QueryID: gone, PartitionID: p1}); err != nil || !errors.Is(res.Err, combtype.ErrQueryNotFound) {
		t.Fatalf("cycle of the deleted query = %+v, %v", res, err)
	}
	if rows, err := s.StreamState(ctx, "", kept, p1, combtype.StateFilter{}); err != nil || len(rows) != 1 {
		t.Fatalf("state of a kept query = %v, %v", rows, err)
	}
	if l, _, err := s.StreamQueryPage(ctx, "other", combtype.Page{}); err != nil || len(l) != 1 {
		t.Fatalf("the other tenant's query of the same name = %+v, %v", l, err)
	}
	again, err := s.RegisterStreamQuery(ctx, "", combtype.StreamRegisterRequest{Name: "b-gone", SourceQueue: "src", ConfigHash: "h2"})
	if err != nil || !again.Fresh || again.Query.ID == gone {
		t.Fatalf("registering the name again = %+v, %v", again, err)
	}
	if res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "src", Batch: 1}); err != nil || len(res.Messages) != 1 {
		t.Fatalf("the source queue after the delete: %d messages, %v", len(res.Messages), err)
	}
	checkClean(t, path, "after the delete")
}
