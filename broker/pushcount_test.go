package broker_test

import (
	"context"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A push naming several queues, in runs and interleaved, with a duplicate
// among them, counts each queue's stored messages and no duplicate.
func TestAPushCountsEachQueuesStoredMessages(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	ctx := context.Background()
	item := func(q, txn string) combtype.PushItem {
		return combtype.PushItem{Queue: q, Payload: []byte(`{"n":1}`), TxnID: txn}
	}
	if _, err := b.Push(ctx, []combtype.PushItem{item("b", "b0")}); err != nil {
		t.Fatalf("push: %v", err)
	}
	res, err := b.Push(ctx, []combtype.PushItem{
		item("a", "a1"), item("a", "a2"), item("b", "b0"), item("b", "b1"), item("a", "a3"), item("c", "c1"), item("c", "c1"),
	})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	queued := 0
	for _, r := range res {
		if r.Status == "queued" {
			queued++
		}
	}
	if queued != 5 {
		t.Fatalf("queued %d of the second push, want 5: %+v", queued, res)
	}
	m := b.Metrics()
	if got := m.Pushed.Load(); got != 6 {
		t.Errorf("pushed %d in all, want 6", got)
	}
	want := map[string]int64{"a": 3, "b": 2, "c": 1}
	qs := m.Queues()
	for q, n := range want {
		c := qs[broker.QueueKey{Queue: q}]
		if c == nil || c.Pushed.Load() != n {
			t.Errorf("queue %s: pushed %v, want %d", q, c, n)
		}
	}
}

// The id a push answers for a message is the id its pop delivers it under,
// in every partition the push wrote to.
func TestAPushAnswersTheIdsItsMessagesArePoppedUnder(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	ctx := context.Background()
	var items []combtype.PushItem
	for i := range 6 {
		items = append(items, combtype.PushItem{Queue: "q", Partition: []string{"p0", "p1"}[i%2], Payload: []byte(`{"n":1}`)})
	}
	res, err := b.Push(ctx, items)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	pushed := map[string]string{} // txn id -> message id
	for _, r := range res {
		pushed[r.TxnID] = r.MessageID
	}
	popped := 0
	for _, part := range []string{"p0", "p1"} {
		p, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Partition: part, Batch: 10, AutoAck: true})
		if err != nil {
			t.Fatalf("pop %s: %v", part, err)
		}
		for _, m := range p.Messages {
			popped++
			if pushed[m.TxnID] != m.ID {
				t.Errorf("%s: popped as %s, the push answered %q", m.TxnID, m.ID, pushed[m.TxnID])
			}
		}
	}
	if popped != len(items) {
		t.Fatalf("popped %d, want %d", popped, len(items))
	}
}
