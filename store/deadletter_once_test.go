package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// An ack with status dlq repeated, in one request or in several, copies
// the message into the dead-letter table once per group.
func TestAMessageIsDeadLetteredOncePerGroup(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	uuid, _, _ := pushOne(t, s, "q", "a")
	dlq := func(group string) combtype.TxOp {
		return combtype.TxOp{Type: "ack", Ack: combtype.AckItem{TxnID: "a", PartitionID: uuid, Group: group, Status: combtype.AckDLQ}}
	}
	copies := func(group string) int {
		return countRows(t, s, `SELECT COUNT(*) FROM dlq WHERE group_name = ?`, group)
	}
	ops := []combtype.TxOp{dlq("g"), dlq("g"), dlq("g"), dlq("g")}
	res, err := s.Transaction(ctx, "", ops)
	if err != nil || !res[3].Ack.Success {
		t.Fatalf("transaction repeating a dlq ack = %+v, %v", res, err)
	}
	if n := copies("g"); n != 1 {
		t.Fatalf("a transaction repeating one dlq ack 4 times left %d dead letters, want 1", n)
	}
	if _, err := s.Transaction(ctx, "", ops[:1]); err != nil {
		t.Fatal(err)
	}
	acks, err := s.Ack(ctx, "", "g", []combtype.AckItem{{TxnID: "a", PartitionID: uuid, Status: combtype.AckDLQ}})
	if err != nil || !acks[0].Success {
		t.Fatalf("ack dlq again = %+v, %v", acks, err)
	}
	if n := copies("g"); n != 1 {
		t.Fatalf("the dlq ack sent again by a transaction and an ack left %d dead letters, want 1", n)
	}
	// Another group's failure is its own.
	if _, err := s.Transaction(ctx, "", []combtype.TxOp{dlq("h")}); err != nil {
		t.Fatal(err)
	}
	if g, h := copies("g"), copies("h"); g != 1 || h != 1 {
		t.Fatalf("dead letters of g and h = %d, %d; want 1 each", g, h)
	}
}

// The dead-letter copies of one request are bounded in bytes: past
// maxDeadLetterBytes the request is refused and nothing of it is kept.
func TestTheDeadLetterCopiesOfOneRequestAreBounded(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s := openTestStore(t, clk)
	const size = 2 << 20
	n := maxDeadLetterBytes/size + 1
	var uuid string
	for i := range n {
		res, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: fmt.Sprint("m", i),
			Payload: bytes.Repeat([]byte{'x'}, size)}})
		if err != nil || res[0].Status != combtype.StatusQueued {
			t.Fatalf("push = %+v, %v", res, err)
		}
		uuid = res[0].PartitionID
	}
	var ops []combtype.TxOp
	var acks []combtype.AckItem
	for i := range n {
		it := combtype.AckItem{TxnID: fmt.Sprint("m", i), PartitionID: uuid, Group: "g", Status: combtype.AckDLQ}
		ops = append(ops, combtype.TxOp{Type: "ack", Ack: it})
		acks = append(acks, it)
	}
	if _, err := s.Transaction(ctx, "", ops); !errors.Is(err, combtype.ErrInvalid) {
		t.Fatalf("a transaction dead-lettering %d MiB = %v, want ErrInvalid", n*size>>20, err)
	}
	// A plain ack dead-letters for a group with a cursor, and without a
	// live lease: a pop's, expired.
	if res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 1}); err != nil || len(res.Messages) != 1 {
		t.Fatalf("pop = %+v, %v", res, err)
	}
	clk.Advance(2 * time.Minute)
	if _, err := s.Ack(ctx, "", "g", acks); !errors.Is(err, combtype.ErrInvalid) {
		t.Fatalf("an ack batch dead-lettering %d MiB = %v, want ErrInvalid", n*size>>20, err)
	}
	if d, c := countRows(t, s, `SELECT COUNT(*) FROM dlq`), countRows(t, s, `SELECT COUNT(*) FROM cursors WHERE committed >= 0`); d != 0 || c != 0 {
		t.Fatalf("after the refusals: %d dead letters, %d cursors moved; want none", d, c)
	}
	// Up to the bound, and one message past it alone, is dead-lettered.
	if res, err := s.Transaction(ctx, "", ops[:n-1]); err != nil || !res[n-2].Ack.Success {
		t.Fatalf("a transaction dead-lettering %d MiB = %v", (n-1)*size>>20, err)
	}
	if res, err := s.Ack(ctx, "", "g", acks[n-1:]); err != nil || !res[0].Success {
		t.Fatalf("an ack dead-lettering one message = %+v, %v", res, err)
	}
	if d := countRows(t, s, `SELECT COUNT(*) FROM dlq`); d != n {
		t.Fatalf("%d dead letters, want %d", d, n)
	}
}

// The dead-letter copies of one request decode each segment they copy
// from once: each copy decoded its whole segment, and 10,000 dlq acks of
// one transaction held every other client's writes 2.6-4.1 s.
func TestDeadLetterCopiesDecodeEachSegmentOnce(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	const n = 200
	var items []combtype.PushItem
	for i := range n {
		items = append(items, combtype.PushItem{Queue: "q", TxnID: fmt.Sprint("m", i), Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	res, err := s.Push(ctx, "", items)
	if err != nil {
		t.Fatal(err)
	}
	var ops []combtype.TxOp
	for i, r := range res {
		ops = append(ops, combtype.TxOp{Type: "ack", Ack: combtype.AckItem{TxnID: items[i].TxnID, PartitionID: r.PartitionID, Group: "g", Status: combtype.AckDLQ}})
	}
	before := s.stats.SegmentsDecoded.Load()
	if _, err := s.Transaction(ctx, "", ops); err != nil {
		t.Fatal(err)
	}
	if d := s.stats.SegmentsDecoded.Load() - before; d != 1 {
		t.Errorf("%d dlq acks of the messages of one segment decoded %d segments, want 1", n, d)
	}
	rows, err := s.rdb.Query(`SELECT txn_id, payload FROM dlq WHERE group_name = 'g' ORDER BY offset`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var id string
		var payload []byte
		if err := rows.Scan(&id, &payload); err != nil {
			t.Fatal(err)
		}
		if id != items[i].TxnID || !bytes.Equal(payload, items[i].Payload) {
			t.Fatalf("dead letter %d is %s %s, want %s %s", i, id, payload, items[i].TxnID, items[i].Payload)
		}
	}
	if i != n {
		t.Fatalf("%d dead letters, want %d", i, n)
	}
}

// The same failed acks twice in one batch, under the lease of their pop:
// each repeat reports what the first did. Applied again, the repeat of
// the last found the lease the first acks had ended and was refused
// ("Invalid or expired lease"), and a repeat of the first answered that
// it had not dead-lettered the message.
func TestARepeatedAckInOneBatchReportsWhatTheFirstDid(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	opts := combtype.DefaultQueueOptions()
	opts.RetryLimit = 0
	if _, _, err := s.Configure(ctx, "", combtype.ConfigureRequest{Queue: "q", Options: opts}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "t0", Payload: []byte(`0`)}, {Queue: "q", TxnID: "t1", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 2})
	if err != nil || len(res.Messages) != 2 {
		t.Fatalf("pop = %+v, %v", res, err)
	}
	var acks []combtype.AckItem
	for range 2 {
		for _, m := range res.Messages {
			acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: combtype.AckFailed, Error: "boom"})
		}
	}
	out, err := s.Ack(ctx, "", "", acks)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out {
		if !r.Success || r.Err != nil || !r.DLQ || r.TxnID != acks[i].TxnID {
			t.Errorf("ack %d (%s) = %+v, want success and dead-lettered, as the first", i, acks[i].TxnID, r)
		}
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM dlq`); n != 2 {
		t.Errorf("%d dead letters, want 2", n)
	}
}
