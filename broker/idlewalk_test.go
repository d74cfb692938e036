package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A long-poll pop of a group with nothing due on a queue of many
// partitions parks after one walk of the queue; the claims the writer
// then makes for it at each push (store/handed.go) read the partitions
// written since that walk, not the queue: at a million partitions each
// such claim walked it inside the writer, 3 s a push, and pushes to
// every queue waited behind them.
func TestAParkedPopsClaimsReadWhatWasWrittenNotTheQueue(t *testing.T) {
	ctx := context.Background()
	b := combtest.OpenBrokerAt(t, filepath.Join(t.TempDir(), "comb.db"), combtest.Options{})
	defer combtest.CloseBroker(t, b)
	const n = 600
	items := make([]combtype.PushItem, n)
	for i := range items {
		items[i] = combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%04d", i), Payload: []byte(`1`)}
	}
	if _, err := b.Push(ctx, items); err != nil {
		t.Fatal(err)
	}
	// Group g consumes every partition: a cursor on each, nothing due.
	for got := 0; got < n; {
		res, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Group: "g", Batch: 100, Partitions: 100, AutoAck: true})
		if err != nil || len(res.Messages) == 0 {
			t.Fatalf("consume: %+v %v after %d", res, err, got)
		}
		got += len(res.Messages)
	}
	park := func() (<-chan *combtype.PopResult, func()) {
		parked, done := make(chan struct{}), make(chan *combtype.PopResult, 1)
		pctx, cancel := context.WithCancel(ctx)
		go func() {
			res, err := b.Pop(pctx, combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, Wait: true, Timeout: time.Minute,
				OnPark: func() { close(parked) }})
			if err != nil && pctx.Err() == nil {
				t.Errorf("long-poll: %v", err)
			}
			done <- res
		}()
		select {
		case <-parked:
		case res := <-done:
			t.Fatalf("the long-poll did not park: %+v", res)
		}
		return done, cancel
	}
	// More rounds than the partitions a mark reads before it walks
	// (store's maxSuspects): each claim renews it.
	for round := range 150 {
		done, cancel := park()
		walks := b.EngineStats().QueueWalks
		// A push elsewhere, then one to the queue.
		for _, it := range []combtype.PushItem{{Queue: "other", Payload: []byte(`0`)},
			{Queue: "q", Partition: fmt.Sprintf("p%04d", (7*round)%n), Payload: []byte(`2`)}} {
			if _, err := b.Push(ctx, []combtype.PushItem{it}); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case res := <-done:
			if res == nil || len(res.Messages) != 1 {
				t.Fatalf("round %d: the long-poll got %+v, want the message pushed to its queue", round, res)
			}
			m := res.Messages[0]
			if _, err := b.Ack(ctx, []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID,
				Group: "g", Status: combtype.AckCompleted}}); err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the long-poll was not answered", round)
		}
		cancel()
		if w := b.EngineStats().QueueWalks - walks; w != 0 {
			t.Fatalf("round %d: %d walks of the queue to hand one message to a parked pop", round, w)
		}
	}
}
