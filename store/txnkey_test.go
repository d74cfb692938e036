package store

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// collidingIDs returns two different UUID-shaped transactionIds with the
// same dedup key: same first 48 bits, same 15 hash bits.
func collidingIDs(t *testing.T) (string, string) {
	t.Helper()
	seen := map[int64]string{}
	for i := range 1 << 22 {
		id := fmt.Sprintf("0198c0de-7a1b-7000-8000-%012x", i)
		k := txnKey(id)
		if other, ok := seen[k]; ok {
			return other, id
		}
		seen[k] = id
	}
	t.Fatal("no colliding ids found")
	return "", ""
}

func TestTransactionIdsSharingADedupKeyStayDistinctMessages(t *testing.T) {
	s := openTestStore(t, clock.Real{})
	ctx := context.Background()
	a, b := collidingIDs(t)
	if txnKey(a) != txnKey(b) || a == b {
		t.Fatalf("ids %s and %s do not collide", a, b)
	}
	push := func(id string) combtype.PushResult {
		t.Helper()
		res, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p", Payload: []byte(`{"id":"` + id + `"}`), TxnID: id}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	ra := push(a)
	rb := push(b)
	if ra.Status != combtype.StatusQueued || rb.Status != combtype.StatusQueued || ra.Offset == rb.Offset {
		t.Fatalf("colliding ids: %+v and %+v, want both queued at different offsets", ra, rb)
	}
	if again := push(a); again.Status != combtype.StatusDuplicate || again.Offset != ra.Offset {
		t.Errorf("repeat of %s: %+v, want duplicate of offset %d", a, again, ra.Offset)
	}
	if again := push(b); again.Status != combtype.StatusDuplicate || again.Offset != rb.Offset {
		t.Errorf("repeat of %s: %+v, want duplicate of offset %d", b, again, rb.Offset)
	}
	// In one commit too: the second is new, its repeat a duplicate of it.
	res, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p2", Payload: []byte(`1`), TxnID: a},
		{Queue: "q", Partition: "p2", Payload: []byte(`2`), TxnID: b}, {Queue: "q", Partition: "p2", Payload: []byte(`3`), TxnID: b}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != combtype.StatusQueued || res[1].Status != combtype.StatusQueued || res[2].Status != combtype.StatusDuplicate || res[2].Offset != res[1].Offset {
		t.Errorf("one commit: %+v", res)
	}

	for _, want := range []combtype.PushResult{ra, rb} {
		d, err := s.GetMessage(ctx, "", want.PartitionID, want.TxnID)
		if err != nil {
			t.Fatalf("get %s: %v", want.TxnID, err)
		}
		if got := string(d.Payload); got != `{"id":"`+want.TxnID+`"}` {
			t.Errorf("get %s: payload %s", want.TxnID, got)
		}
	}

	// Acks complete up to the acked offset, so acking a must resolve to a's
	// offset for b to stay deliverable.
	pop, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Partition: "p", Batch: 1})
	if err != nil || len(pop.Messages) != 1 || pop.Messages[0].TxnID != a {
		t.Fatalf("pop: %+v %v", pop, err)
	}
	acks, err := s.Ack(ctx, "", "", []combtype.AckItem{{TxnID: a, PartitionID: ra.PartitionID, LeaseID: pop.Messages[0].LeaseID}})
	if err != nil || !acks[0].Success {
		t.Fatalf("ack %s: %+v %v", a, acks, err)
	}
	pop, err = s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Partition: "p", Batch: 10})
	if err != nil || len(pop.Messages) != 1 || pop.Messages[0].TxnID != b {
		t.Fatalf("after acking %s, pop: %+v %v, want %s still there", a, pop, err, b)
	}
}

func TestAnUnknownTransactionIdIsNotFoundEvenWhenItsKeyIsStored(t *testing.T) {
	s := openTestStore(t, clock.Real{})
	ctx := context.Background()
	a, b := collidingIDs(t)
	res, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`1`), TxnID: a}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetMessage(ctx, "", res[0].PartitionID, b); err != combtype.ErrMessageNotFound {
		t.Errorf("get %s (shares %s's key): %v, want ErrMessageNotFound", b, a, err)
	}
}

// Repeats are found whatever order keys arrive in: ids below the highest
// key stored, above it, and after a reopen, when the bound is read back
// from the index instead of carried over.
func TestRepeatsAreFoundAboveAndBelowTheHighestKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	open := func() *Store {
		s, err := Open(context.Background(), Options{Path: path})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return s
	}
	ctx := context.Background()
	// Time-ordered ids, newest first, and texts that are hashed.
	ids := []string{
		"0198c0de-7a1b-7000-8000-000000000009", "0198c0de-7a1a-7000-8000-000000000008",
		"0198c0de-7a19-7000-8000-000000000007", "order-3", "order-2", "order-1",
	}
	push := func(s *Store, id string) combtype.PushResult {
		t.Helper()
		res, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p", Payload: []byte(`1`), TxnID: id}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	s := open()
	first := map[string]int64{}
	for _, id := range ids {
		r := push(s, id)
		if r.Status != combtype.StatusQueued {
			t.Fatalf("first push of %s: %+v", id, r)
		}
		first[id] = r.Offset
	}
	check := func(s *Store, when string) {
		t.Helper()
		for _, id := range ids {
			if r := push(s, id); r.Status != combtype.StatusDuplicate || r.Offset != first[id] {
				t.Errorf("%s, repeat of %s: %+v, want duplicate of offset %d", when, id, r, first[id])
			}
		}
	}
	check(s, "same store")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	check(s, "after reopen")
}

// TestAKeyCeilingIsItsOwnPartitions: a partition's bound on its dedup keys,
// read again after a reopen, is its own highest key, not the highest of
// all partitions, which a transactionId that is not a UUID (hashed
// anywhere below 2^63) would set for everyone.
func TestAKeyCeilingIsItsOwnPartitions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	st, err := Open(ctx, Options{Path: path, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	v7 := newUUID()
	if _, err := st.Push(ctx, "", []combtype.PushItem{{Queue: "a", TxnID: "order-1", Payload: []byte(`{}`)},
		{Queue: "b", TxnID: v7, Payload: []byte(`{}`)}, {Queue: "c", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if txnKey("order-1") <= txnKey(v7) {
		t.Fatalf("fixture: the hashed key %d is not above the UUIDv7 key %d", txnKey("order-1"), txnKey(v7))
	}

	st, err = Open(ctx, Options{Path: path, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ceilings := map[string]int64{}
	err = st.submit(ctx, &writeOp{apply: func(w *wtx) error {
		for _, q := range []string{"a", "b", "c", "d"} {
			var id int64
			if err := w.QueryRowContext(w.ctx, `SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
				WHERE q.name = ?`, q).Scan(&id); err != nil {
				id = -1 // "d" has no partition
			}
			c, err := w.keyCeiling(id)
			if err != nil {
				return err
			}
			ceilings[q] = c
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ceilings["a"] != txnKey("order-1") || ceilings["b"] != txnKey(v7) || ceilings["d"] != math.MinInt64 {
		t.Errorf("ceilings = %v; want a=%d b=%d d=%d", ceilings, txnKey("order-1"), txnKey(v7), int64(math.MinInt64))
	}
	if ceilings["c"] == math.MinInt64 || ceilings["c"] >= txnKey("order-1") {
		t.Errorf("ceiling of c = %d, want the key of its generated id", ceilings["c"])
	}
}
