package store_test

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// rowCounts counts the rows of the log tables.
func rowCounts(t testing.TB, st *store.Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"queues", "partitions", "segments", "txids", "cursors", "subscriptions", "dlq", "tombstones",
		"snapshots", "snapshot_cursors", "traces", "trace_names"} {
		var n int
		if err := st.ReadDB().QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

// fillQueue pushes rounds commits of perPart messages to each of parts
// partitions of queue: rounds*parts segments.
func fillQueue(t testing.TB, st *store.Store, queue string, parts, perPart, rounds int) {
	t.Helper()
	fillQueuePadded(t, st, queue, parts, perPart, rounds, 0)
}

// fillQueuePadded is fillQueue with payloads carrying pad random bytes (as
// hex, so they compress about as well as typical JSON).
func fillQueuePadded(t testing.TB, st *store.Store, queue string, parts, perPart, rounds, pad int) {
	t.Helper()
	rnd := make([]byte, pad)
	for r := range rounds {
		items := make([]combtype.PushItem, 0, parts*perPart)
		for p := range parts {
			for i := range perPart {
				crand.Read(rnd)
				items = append(items, combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%d", p),
					TxnID: fmt.Sprintf("%d-%d-%d", r, p, i), Payload: []byte(`{"pad":"` + hex.EncodeToString(rnd) + `"}`)})
			}
		}
		if _, err := st.Push(context.Background(), "", items); err != nil {
			t.Fatalf("push: %v", err)
		}
	}
}

func TestQueueStatsCounts(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	fillQueue(t, st, "c", 2, 5, 1)
	if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "c", Partition: "p0", Batch: 2, AutoAck: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "c", Partition: "p0", Batch: 2}); err != nil {
		t.Fatal(err)
	}
	qs, err := st.QueueStats(ctx, "", "c")
	if err != nil {
		t.Fatal(err)
	}
	want := combtype.MessageCounts{Total: 10, Pending: 6, Processing: 2, Completed: 2}
	if qs.Counts != want {
		t.Fatalf("counts = %+v, want %+v", qs.Counts, want)
	}
	if !qs.HasQueueMode || qs.BusGroups != 0 || qs.Partitions[0].TotalConsumed != 2 || qs.Partitions[0].LeaseExpiresAt.IsZero() {
		t.Fatalf("stats = %+v", qs.Partitions[0])
	}
	if _, err := st.QueueStats(ctx, "other-tenant", "c"); err != combtype.ErrQueueNotFound {
		t.Fatalf("other tenant: %v", err)
	}
}
