package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

func TestGroupStateIsDerived(t *testing.T) {
	cases := []struct {
		lag      time.Duration
		consumed int64
		want     string
	}{
		{0, 0, "Dead"},
		{0, 1, "Stable"},
		{300*time.Second + 999*time.Millisecond, 5, "Stable"}, // 300 s as listed is not > 300
		{301 * time.Second, 0, "Lagging"},
	}
	for _, c := range cases {
		g := combtype.GroupSummary{MaxTimeLag: c.lag, TotalConsumed: c.consumed}
		if got := g.State(); got != c.want {
			t.Errorf("State(lag %v, consumed %d) = %s, want %s", c.lag, c.consumed, got, c.want)
		}
	}
}

func TestReplayIsScopedByTenant(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC))
	st := combtest.MustOpenStore(t, combtest.Options{Clock: clk})
	ctx := context.Background()
	seekPush(t, st, "acme", "orders", "Default", 3)
	seekPush(t, st, "globex", "orders", "Default", 5)
	seekPush(t, st, "globex", "audit", "Default", 1)
	for _, tenant := range []string{"acme", "globex"} {
		if _, err := st.Pop(ctx, tenant, combtype.PopRequest{Queue: "orders", Group: "workers", Batch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Pop(ctx, "globex", combtype.PopRequest{Queue: "audit", Group: "workers", Batch: 1}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)

	groups, err := st.Groups(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].Group != "workers" || groups[0].Queue != "orders" || groups[0].TotalLag != 3 ||
		groups[0].Cursors != 1 || groups[0].MaxTimeLag != time.Minute {
		t.Fatalf("acme groups = %+v", groups)
	}
	// A queue that exists only for another tenant is not found.
	_, err = st.Seek(ctx, "acme", combtype.SeekRequest{Group: "workers", Queue: "audit", Target: combtype.SeekTarget{ToEnd: true}})
	if !errors.Is(err, combtype.ErrQueueNotFound) {
		t.Fatalf("seek of another tenant's queue = %v", err)
	}
	// acme's seek moves acme's cursor only.
	if _, err := st.Seek(ctx, "acme", combtype.SeekRequest{Group: "workers", Queue: "orders",
		Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
		t.Fatal(err)
	}
	if got := committedOf(t, st, "globex", "orders", "workers"); got["Default"] != -1 {
		t.Fatalf("globex cursor moved: %v", got)
	}
	n, err := st.UpdateSubscription(ctx, "acme", "workers", clk.Now())
	if err != nil || n != 1 {
		t.Fatalf("update subscription in acme = %d, %v; want 1 record", n, err)
	}
	n, err = st.DeleteGroup(ctx, "acme", "workers", "", true)
	if err != nil || n != 1 {
		t.Fatalf("delete in acme = %d, %v", n, err)
	}
	groups, err = st.Groups(ctx, "globex")
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Fatalf("globex lost cursors to acme's delete: %+v", groups)
	}
	lagging, err := st.LaggingPartitions(ctx, "globex", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(lagging) != 2 || lagging[0].Group != "workers" {
		t.Fatalf("globex lagging = %+v", lagging)
	}
	if lagging, _ := st.LaggingPartitions(ctx, "acme", 0); len(lagging) != 0 {
		t.Fatalf("acme lagging after delete = %+v", lagging)
	}
}

// TestBacklogCountsPartitionsWithoutACursorFromTheirStart checks the lag a
// forwarder reads: a partition the group has a cursor on counts what lies
// past it, one created since counts everything it retains.
func TestBacklogCountsPartitionsWithoutACursorFromTheirStart(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	push := func(partition string, n int) {
		items := make([]combtype.PushItem, n)
		for i := range items {
			items[i] = combtype.PushItem{Queue: "q", Partition: partition, Payload: []byte(`{}`)}
		}
		if _, err := st.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	push("a", 3)
	push("b", 2)
	if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "q", Partition: "a", Group: "g", AutoAck: true}); err != nil {
		t.Fatal(err)
	}
	push("c", 4) // after the group subscribed: no cursor until a pop meets it
	// A row only where the group claimed (a); b and c are read as the
	// subscription implies.
	if got, want := cursorCount(t, st, "g"), 1; got != want {
		t.Fatalf("group has %d cursors, want %d", got, want)
	}
	if got, err := st.Backlog(ctx, "", "q", "g"); err != nil || got != 2+2+4 {
		t.Fatalf("backlog = %d, %v; want %d", got, err, 2+2+4)
	}
}

func cursorCount(t *testing.T, st *store.Store, group string) int {
	t.Helper()
	var n int
	if err := st.ReadDB().QueryRow(`SELECT COUNT(*) FROM cursors WHERE group_name = ?`, group).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A group's delete counts its positions, rows and implied (a subscription
// with no row on a partition), the same whether it names the queue or
// deletes the group from every queue of the tenant.
func TestGroupDeleteCountsRowsAndImpliedPositions(t *testing.T) {
	ctx := context.Background()
	for _, scope := range []string{"q", ""} {
		st := combtest.MustOpenStore(t, combtest.Options{})
		for _, p := range []string{"a", "b", "c", "d"} {
			seekPush(t, st, "", "q", p, 2)
		}
		// popped: a row on the partition it popped, three implied.
		if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "popped", Batch: 1}); err != nil {
			t.Fatal(err)
		}
		// sought: a row on every partition, and the subscription its
		// first pop would have recorded (seekSubscribe).
		if _, err := st.Seek(ctx, "", combtype.SeekRequest{Group: "sought", Queue: "q", Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
			t.Fatal(err)
		}
		// subscribed: rows on no partition, four implied.
		if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "subscribed", Batch: 1,
			SubscriptionMode: "new"}); err != nil {
			t.Fatal(err)
		}
		// Without its metadata the group keeps its subscription, and with
		// it the positions it implies; with it, nothing is left.
		for group, want := range map[string][3]int64{"popped": {4, 4, 0}, "sought": {4, 4, 0},
			"subscribed": {4, 4, 0}, "stranger": {0, 0, 0}} {
			for i, metadata := range []bool{false, true, true} {
				n, err := st.DeleteGroup(ctx, "", group, scope, metadata)
				if err != nil || n != want[i] {
					t.Errorf("delete %d of %s from queue %q = %d, %v; want %d", i+1, group, scope, n, err, want[i])
				}
			}
		}
	}
}
