package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// The cursor figures the queue views sum by SQLite (sumPartCursors,
// namedGroups) are those read a row at a time in Go: over groups that
// popped, acked some, hold live and expired leases, tie at the least
// offset, consume in queue mode, only subscribed (implied cursors), and
// rows with no subscription, on partitions no group has met too.
func TestCursorSumsBySQLiteEqualThoseReadARowAtATime(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := openTestStore(t, clk)
	rng := rand.New(rand.NewPCG(7, 11))
	for p := range 6 {
		var items []combtype.PushItem
		for m := range 4 + p {
			items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", p), Payload: []byte(fmt.Sprint(m))})
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	// A partition no group meets before the groups below subscribed.
	for g := range 40 {
		group := fmt.Sprintf("g%02d", g)
		if g%10 == 9 {
			group = combtype.QueueModeGroup
		}
		for range rng.IntN(4) {
			res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: group, Batch: 1 + rng.IntN(3),
				SubscriptionMode: []string{"all", "new"}[rng.IntN(2)]})
			if err != nil {
				t.Fatal(err)
			}
			if res == nil || rng.IntN(3) == 0 {
				continue // left leased
			}
			var acks []combtype.AckItem
			for _, m := range res.Messages {
				acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, Group: group})
			}
			if _, err := s.Ack(ctx, "", group, acks); err != nil {
				t.Fatal(err)
			}
		}
		if g%7 == 3 {
			clk.Advance(10 * time.Minute) // the leases so far expire
		}
	}
	for _, g := range []string{"h0", "h1", combtype.QueueModeGroup} { // left leased, live
		if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: g, Batch: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "late", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	// Rows with no subscription, as an older comb's seek left them.
	writeSQL(t, s, `DELETE FROM subscriptions WHERE group_name IN ('g01', 'g02', 'g13')`)

	q, err := getQueue(ctx, s.r, "", "q")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := queryPartitions(ctx, s.r, `SELECT `+partitionColumns+` FROM partitions WHERE queue_id = ? ORDER BY id`, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int64
	for _, p := range parts {
		pids = append(pids, p.ID)
	}
	now := micros(clk.Now())
	summed, err := sumPartCursors(ctx, s.r, pids, now)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	rowByRow, err := readPartCursors(ctx, s.r, pids, now, impliedSummed, func(c *cursor) {
		if c.group != combtype.QueueModeGroup {
			names[c.group] = true
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	show := func(c *cursor) string {
		if c == nil {
			return "none"
		}
		return fmt.Sprintf("%s at %d lease %v..%v to %v", c.group, c.committed, c.leaseFrom, c.leaseTo, c.leaseExpires)
	}
	leased, tied := 0, 0
	for _, p := range parts {
		a, b := summed[p.ID], rowByRow[p.ID]
		if (a == nil) != (b == nil) {
			t.Fatalf("partition %s: summed %+v, read %+v", p.Name, a, b)
		}
		if a == nil {
			continue
		}
		if a.totalConsumed != b.totalConsumed || a.batches != b.batches || a.lastConsumedAt != b.lastConsumedAt ||
			a.live != b.live || a.named != b.named {
			t.Errorf("partition %s: summed %+v, read %+v", p.Name, *a, *b)
		}
		if show(a.qm) != show(b.qm) || show(a.least) != show(b.least) {
			t.Errorf("partition %s: queue mode %s, least %s; read %s, %s", p.Name, show(a.qm), show(a.least),
				show(b.qm), show(b.least))
		}
		leased += b.live
		if b.least != nil && b.least.leaseID.Valid {
			tied++
		}
	}
	if leased == 0 {
		t.Fatal("no live lease among the cursors: the case does not test what it says")
	}
	// The named groups: the subscribed ones and those with rows only.
	out := []*combtype.QueueStats{{Queue: *q, Partitions: make([]combtype.PartitionStats, 1)}}
	if err := subscribedGroups(ctx, s.r, out, func(_ int64, g string) {
		if g != combtype.QueueModeGroup {
			names[g] = true
		}
	}); err != nil {
		t.Fatal(err)
	}
	counts, err := namedGroups(ctx, s.r, out, pids)
	if err != nil {
		t.Fatal(err)
	}
	if counts[q.ID] != len(names) || len(names) < 20 {
		t.Errorf("named groups counted %d, read %d", counts[q.ID], len(names))
	}
	t.Logf("%d partitions, %d live leases, %d least cursors leased, %d named groups", len(parts), leased, tied, len(names))
}
