package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

func TestSnapshotFloorPinsWhatLiveSnapshotsNeed(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC))
	st := combtest.MustOpenStore(t, combtest.Options{Clock: clk})
	ctx := context.Background()
	seekPush(t, st, "", "q", "Default", 10)
	q, err := st.Queue(ctx, "", "q")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := st.Partitions(ctx, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	pid := parts[0].ID
	if _, ok, err := st.SnapshotFloor(ctx, pid); err != nil || ok {
		t.Fatalf("floor without snapshots = %v, %v", ok, err)
	}
	at := func(group string, committed int64) {
		t.Helper()
		if _, err := st.Seek(ctx, "", combtype.SeekRequest{Group: group, Queue: "q", Target: combtype.SeekTarget{Offset: &committed}}); err != nil {
			t.Fatal(err)
		}
	}
	at("a", 3)
	at("b", 1)
	if _, err := st.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "a-week", Group: "a", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "b-hour", Group: "b", Queue: "q", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "b-hour", Group: "b", Queue: "q"}); !errors.Is(err, combtype.ErrSnapshotExists) {
		t.Fatalf("second b-hour = %v", err)
	}
	// Moving the groups afterwards does not move what the snapshots need.
	at("a", 9)
	at("b", 9)
	if floor, ok, err := st.SnapshotFloor(ctx, pid); err != nil || !ok || floor != 2 {
		t.Fatalf("floor = %d, %v, %v; want 2 (b-hour captured 1)", floor, ok, err)
	}
	clk.Advance(time.Hour) // b-hour expires, swept or not
	if floor, ok, err := st.SnapshotFloor(ctx, pid); err != nil || !ok || floor != 4 {
		t.Fatalf("floor after b-hour expired = %d, %v, %v; want 4", floor, ok, err)
	}
	// A partition created after the snapshots is not pinned by them.
	seekPush(t, st, "", "q", "later", 1)
	parts, _ = st.Partitions(ctx, q.ID)
	if _, ok, err := st.SnapshotFloor(ctx, parts[1].ID); err != nil || ok {
		t.Fatalf("later partition pinned: %v, %v", ok, err)
	}

	n, err := st.ExpireSnapshots(ctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1", n, err)
	}
	if _, err := st.Snapshot(ctx, "", "b-hour"); !errors.Is(err, combtype.ErrSnapshotNotFound) {
		t.Fatalf("b-hour after the sweep = %v", err)
	}
	clk.Advance(7 * 24 * time.Hour)
	if n, err := st.ExpireSnapshots(ctx); err != nil || n != 1 {
		t.Fatalf("second sweep = %d, %v", n, err)
	}
	if _, ok, err := st.SnapshotFloor(ctx, pid); err != nil || ok {
		t.Fatalf("floor after every snapshot expired = %v, %v", ok, err)
	}
}

func TestSnapshotsAreScopedByTenant(t *testing.T) {
	st := combtest.MustOpenStore(t, combtest.Options{})
	ctx := context.Background()
	seekPush(t, st, "acme", "q", "Default", 2)
	seekPush(t, st, "globex", "q", "Default", 2)
	for _, tenant := range []string{"acme", "globex"} {
		if _, err := st.CreateSnapshot(ctx, tenant, combtype.CreateSnapshotRequest{Name: "s", Group: "g", Queue: "q"}); err != nil {
			t.Fatalf("%s: %v", tenant, err)
		}
	}
	if err := st.DeleteSnapshot(ctx, "acme", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Snapshot(ctx, "globex", "s"); err != nil {
		t.Fatalf("globex's snapshot went with acme's: %v", err)
	}
	list, err := st.Snapshots(ctx, "acme", "", "")
	if err != nil || len(list) != 0 {
		t.Fatalf("acme list = %v, %v", list, err)
	}
	// A tenant cannot seek to another tenant's snapshot.
	_, err = st.Seek(ctx, "acme", combtype.SeekRequest{Group: "g", Queue: "q", Target: combtype.SeekTarget{Snapshot: "s"}})
	if !errors.Is(err, combtype.ErrSnapshotNotFound) {
		t.Fatalf("cross-tenant snapshot seek = %v", err)
	}
}
