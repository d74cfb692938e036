package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A snapshot's cursors are read a page at a time, in partition creation
// order, and create, update and Snapshot hand back the first page only:
// reading them all held a million cursors in memory (473 MB) for one
// request.
func TestSnapshotCursorsAreReadAPageAtATime(t *testing.T) {
	st := combtest.MustOpenStore(t, combtest.Options{})
	ctx := context.Background()
	const n = 1234
	var items []combtype.PushItem
	for i := range n {
		// Names in the reverse of creation order.
		items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%04d", n-i), Payload: []byte("1")})
	}
	if _, err := st.Push(ctx, "", items); err != nil {
		t.Fatal(err)
	}
	sn, err := st.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	first := func(what string, sn *combtype.Snapshot) {
		t.Helper()
		if len(sn.Cursors) != combtype.DefaultPageLimit || sn.Cursors[0].Partition != fmt.Sprintf("p%04d", n) ||
			sn.CursorsNext != sn.Cursors[len(sn.Cursors)-1].PartitionID {
			t.Fatalf("%s: %d cursors from %+v, next %q; want the first %d, in creation order", what, len(sn.Cursors),
				sn.Cursors[0], sn.CursorsNext, combtype.DefaultPageLimit)
		}
	}
	first("create", sn)
	if sn, err = st.UpdateSnapshot(ctx, "", "s", combtype.SnapshotUpdate{SetLabels: true, Labels: map[string]string{"a": "b"}}); err != nil {
		t.Fatal(err)
	}
	first("update", sn)
	if sn, err = st.Snapshot(ctx, "", "s"); err != nil {
		t.Fatal(err)
	}
	first("Snapshot", sn)

	seen := map[string]bool{}
	pg := combtype.Page{Limit: 500}
	for pages := 1; ; pages++ {
		sn, info, err := st.SnapshotCursorPage(ctx, "", "s", pg)
		if err != nil {
			t.Fatal(err)
		}
		if sn.Labels["a"] != "b" || info.Total != -1 || info.Next != sn.CursorsNext || info.More != (info.Next != "") {
			t.Fatalf("page %d: labels %v, info %+v, CursorsNext %q", pages, sn.Labels, info, sn.CursorsNext)
		}
		for i, c := range sn.Cursors {
			if want := fmt.Sprintf("p%04d", n-len(seen)); c.Partition != want || c.Committed != -1 {
				t.Fatalf("page %d row %d: %+v, want %s at -1", pages, i, c, want)
			}
			seen[c.PartitionID] = true
		}
		if !info.More {
			if pages != 3 || len(sn.Cursors) != n-1000 || len(seen) != n {
				t.Fatalf("%d pages of %d cursors, the last %d; want 3 pages of all %d", pages, len(seen), len(sn.Cursors), n)
			}
			break
		}
		pg.After = info.Next
	}
	for _, pg := range []combtype.Page{{Offset: 1}, {After: "nope"}} {
		if _, _, err := st.SnapshotCursorPage(ctx, "", "s", pg); !errors.Is(err, combtype.ErrInvalid) {
			t.Errorf("page %+v: %v, want ErrInvalid", pg, err)
		}
	}
	if _, _, err := st.SnapshotCursorPage(ctx, "", "gone", combtype.Page{}); !errors.Is(err, combtype.ErrSnapshotNotFound) {
		t.Errorf("unknown snapshot: %v", err)
	}
}
