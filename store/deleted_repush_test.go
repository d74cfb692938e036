package store

import (
	"context"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// A deleted message's transactionId is free again, as in Queen: pushed
// again, it is a new message that a group receives, not a duplicate of
// the deleted one. Before, the push answered "duplicate" with the deleted
// message's id and stored nothing: the message was never delivered.
func TestAPushAfterItsMessageWasDeletedIsStoredAgain(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	uuid, _, first := pushOne(t, s, "q", "y1")
	pushOne(t, s, "q", "other")
	if found, err := s.DeleteMessage(ctx, "", uuid, "y1"); err != nil || !found {
		t.Fatalf("delete y1 = %v, %v", found, err)
	}
	res, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "y1", Payload: []byte("again")}})
	if err != nil || res[0].Status != combtype.StatusQueued || res[0].Offset == first {
		t.Fatalf("push y1 after its delete = %+v, %v; want queued at a new offset", res, err)
	}
	// Pushed once more, it is a duplicate of the new one.
	dup, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "y1", Payload: []byte("third")}})
	if err != nil || dup[0].Status != combtype.StatusDuplicate || dup[0].Offset != res[0].Offset {
		t.Fatalf("push y1 a third time = %+v, %v; want a duplicate of offset %d", dup, err, res[0].Offset)
	}
	got, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "fresh", Batch: 10})
	if err != nil {
		t.Fatal(err)
	}
	var payloads []string
	for _, m := range got.Messages {
		payloads = append(payloads, m.TxnID+"="+string(m.Payload))
	}
	if len(payloads) != 2 || payloads[0] != "other=other" || payloads[1] != "y1=again" {
		t.Fatalf("a fresh group got %q, want [other=other y1=again]", payloads)
	}
	// The deleted one stays deleted.
	if found, err := s.DeleteMessage(ctx, "", uuid, "y1"); err != nil || !found {
		t.Fatalf("delete of the new y1 = %v, %v", found, err)
	}
}
