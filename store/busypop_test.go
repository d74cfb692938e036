package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// TestABusyGroupsPopGoesStraightToItsClaim: a pop after one that took a
// full batch is sent to the writer without a look on a reader first; the
// pop that then finds the backlog drained costs one commit of nothing,
// and the pops after it look on a reader again and commit nothing.
func TestABusyGroupsPopGoesStraightToItsClaim(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	items := make([]combtype.PushItem, 200)
	for i := range items {
		items[i] = combtype.PushItem{Queue: "q", Partition: "p", TxnID: fmt.Sprint("t", i), Payload: []byte(`{}`)}
	}
	if _, err := s.Push(ctx, "", items); err != nil {
		t.Fatal(err)
	}
	req := combtype.PopRequest{Queue: "q", Group: "g", Batch: 100}
	pop := func(want int) (commits int64) {
		t.Helper()
		before := s.stats.Commits.Load()
		res, err := s.Pop(ctx, "", req)
		if err != nil || len(res.Messages) != want {
			t.Fatalf("pop: %d messages, %v; want %d", len(res.Messages), err, want)
		}
		if want > 0 {
			acks := make([]combtype.AckItem, len(res.Messages))
			for i, m := range res.Messages {
				acks[i] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}
			}
			if out, err := s.Ack(ctx, "", "g", acks); err != nil || !out[0].Success {
				t.Fatalf("ack: %+v, %v", out, err)
			}
			return s.stats.Commits.Load() - before - 1
		}
		return s.stats.Commits.Load() - before
	}
	pop(100)
	if !s.turn.wasFull(mustQueueID(t, s, "q"), "g") {
		t.Fatal("a full pop is not remembered")
	}
	pop(100)
	if n := pop(0); n != 1 {
		t.Fatalf("the pop that found the backlog drained made %d commits; want its claim's 1", n)
	}
	for range 3 {
		if n := pop(0); n != 0 {
			t.Fatalf("a pop of a drained queue after the first made %d commits; want a look on a reader only", n)
		}
	}
	// Pushed again: found by the reader's look, claimed, and not full.
	for i := range items[:10] {
		items[i].TxnID = fmt.Sprint("again", i)
	}
	if _, err := s.Push(ctx, "", items[:10]); err != nil {
		t.Fatal(err)
	}
	pop(10)
	if s.turn.wasFull(mustQueueID(t, s, "q"), "g") {
		t.Fatal("a pop of less than its batch is remembered as full")
	}
}

func mustQueueID(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	q, err := getQueue(context.Background(), s.r, "", name)
	if err != nil {
		t.Fatal(err)
	}
	return q.ID
}
