package store

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// A group's pops of 100 end inside segments of 150: the next pop reads the
// rest of the segment the last one ended in from the writer's segment
// cache, other groups read what one group decoded, and retention taking a
// segment away makes the cache start over. Every pop delivers what the
// log holds at each offset.
func TestClaimsDecodeASegmentOnceAcrossPopsAndGroups(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	payload := func(off int64) string { return fmt.Sprintf(`{"n":%d}`, off) }
	var pid int64
	for seg := range 3 {
		items := make([]combtype.PushItem, 150)
		for i := range items {
			off := int64(seg*150 + i)
			items[i] = combtype.PushItem{Queue: "q", Partition: "p", TxnID: fmt.Sprint("t", off), Payload: []byte(payload(off))}
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.rdb.QueryRow(`SELECT id FROM partitions WHERE name = 'p'`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var segments int
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM segments WHERE partition_id = ?`, pid).Scan(&segments); err != nil || segments != 3 {
		t.Fatalf("segments = %d, %v; want 3 of 150", segments, err)
	}
	decoded := func() int64 { return s.rows.segs.decoded } // read after the writer answered
	popAck := func(group string, from, n int64) {
		t.Helper()
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: group, Batch: int(n)})
		if err != nil || len(res.Messages) != int(n) {
			t.Fatalf("pop of %s at %d: %d messages, %v", group, from, len(res.Messages), err)
		}
		acks := make([]combtype.AckItem, len(res.Messages))
		for i, m := range res.Messages {
			if m.Offset != from+int64(i) || string(m.Payload) != payload(m.Offset) {
				t.Fatalf("pop of %s at %d: message %d is offset %d %s", group, from, i, m.Offset, m.Payload)
			}
			acks[i] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}
		}
		out, err := s.Ack(ctx, "", group, acks)
		if err != nil || !out[len(out)-1].Success {
			t.Fatalf("ack of %s at %d: %+v, %v", group, from, out[len(out)-1], err)
		}
	}
	base := decoded()
	popAck("a", 0, 100)   // segment 0
	popAck("a", 100, 100) // the rest of segment 0, kept; segment 1
	popAck("a", 200, 100) // the rest of segment 1, kept
	if got := decoded() - base; got != 2 {
		t.Fatalf("one group's pops over 2 segments decoded %d", got)
	}
	popAck("b", 0, 100)
	popAck("b", 100, 100)
	if got := decoded() - base; got != 2 {
		t.Fatalf("a second group decoded %d more segments; want none", got-2)
	}
	// Retention takes segment 0 away: the cache starts over.
	if res, err := s.EvictPrefix(ctx, pid, 150, t0, EvictLimits{}); err != nil || res.Segments != 1 {
		t.Fatalf("evict = %+v, %v", res, err)
	}
	popAck("c", 150, 100)
	if got := decoded() - base; got != 3 {
		t.Fatalf("after retention: %d decoded in all; want segment 1 again (3)", got)
	}
	popAck("a", 300, 100) // segment 2: not decoded before
	popAck("b", 200, 100) // segment 1, kept since retention
	if got := decoded() - base; got != 4 {
		t.Fatalf("after retention, more pops: %d decoded in all; want 4", got)
	}
}

// storeWithALargeSegment is a store holding one message, "big" in queue
// q, in a segment too large for the writer's cache; it returns the
// payload and the message's partition id.
func storeWithALargeSegment(t *testing.T) (*Store, string, string) {
	t.Helper()
	s := openTestStore(t, clock.NewManual(t0))
	payload := `"` + strings.Repeat("z", 2*maxCachedSegmentBytes) + `"`
	out, err := s.Push(context.Background(), "", []combtype.PushItem{{Queue: "q", TxnID: "big", Payload: []byte(payload)}})
	if err != nil {
		t.Fatal(err)
	}
	return s, payload, out[0].PartitionID
}

// A segment too large to keep is decoded once while the messages of a
// claim of it are still held, and its frames are shared by the next
// claims; once nothing holds them, it is decoded again.
func TestClaimsShareALargeSegmentWhileItsMessagesAreHeld(t *testing.T) {
	ctx := context.Background()
	s, payload, _ := storeWithALargeSegment(t)
	decoded := func() int64 { return s.rows.segs.decoded } // read after the writer answered
	pop := func(group string) *combtype.PopResult {
		t.Helper()
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: group})
		if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Payload) != payload {
			t.Fatalf("pop of %s: %v", group, err)
		}
		return res
	}
	base := decoded()
	held := pop("g1")
	pop("g2")
	pop("g3")
	if got := decoded() - base; got != 1 {
		t.Fatalf("three groups' pops decoded the segment %d times while the first held it; want 1", got)
	}
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	runtime.GC()
	pop("g4")
	if got := decoded() - base; got != 2 {
		t.Fatalf("after nothing held it: decoded %d times in all; want 2", got)
	}
}

// Lookups of a message in a segment too large to keep share its decoded
// bytes with whatever still holds them, as claims do: the second lookup's
// payload is the first's, byte for byte in the same memory.
func TestLookupsShareALargeSegmentWhileItIsHeld(t *testing.T) {
	ctx := context.Background()
	s, payload, partitionID := storeWithALargeSegment(t)
	get := func() *combtype.MessageDetail {
		t.Helper()
		d, err := s.GetMessage(ctx, "", partitionID, "big")
		if err != nil || string(d.Payload) != payload {
			t.Fatalf("lookup: %v", err)
		}
		return d
	}
	first := get()
	second := get()
	if &first.Payload[0] != &second.Payload[0] {
		t.Fatal("the second lookup decoded the segment again while the first held it")
	}
	// A claim shares them too.
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g"})
	if err != nil || len(res.Messages) != 1 || &res.Messages[0].Payload[0] != &first.Payload[0] {
		t.Fatalf("a claim while a lookup held the segment: %v", err)
	}
	runtime.KeepAlive(first)
}
