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

// The views read a partition's cursors as a summary (partCursors), the
// cursors subscriptions imply summed by SQLite, where they held every
// cursor: the status cursor, the counts and the figures of each partition
// must be those the whole list gives, whatever mix of rows, implied
// cursors, ties, queue mode and leases the groups left.
func TestCursorSummariesGiveWhatTheWholeListGives(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(24) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			clk := clock.NewManual(t0)
			s := openTestStore(t, clk)
			parts := 2 + rnd.IntN(4)
			push := func() {
				var items []combtype.PushItem
				for range 1 + rnd.IntN(12) {
					items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", rnd.IntN(parts)), Payload: []byte("1")})
				}
				if _, err := s.Push(ctx, "", items); err != nil {
					t.Fatal(err)
				}
			}
			push()
			modes := []string{"all", "new", ""}
			// Queue mode decides every partition it has met, and its
			// subscription implies it on each: only some runs have it.
			queueMode := seed%3 == 0
			for step := range 60 {
				switch rnd.IntN(6) {
				case 0:
					push()
				case 1:
					clk.Advance(time.Duration(rnd.IntN(90)) * time.Second) // some leases expire
				case 2:
					// A group moved to a time: partitions it meets later
					// start there, not at their oldest message.
					at := clk.Now().Add(time.Duration(rnd.IntN(130)-10) * time.Minute)
					if _, err := s.UpdateSubscription(ctx, "", fmt.Sprintf("g%d", rnd.IntN(8)), at); err != nil {
						t.Fatalf("step %d: update subscription: %v", step, err)
					}
				default:
					g := fmt.Sprintf("g%d", rnd.IntN(8))
					if queueMode && rnd.IntN(4) == 0 {
						g = ""
					}
					res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: g, Batch: 1 + rnd.IntN(3),
						SubscriptionMode: modes[rnd.IntN(len(modes))]})
					if err != nil {
						t.Fatalf("step %d: pop: %v", step, err)
					}
					if len(res.Messages) > 0 && rnd.IntN(2) == 0 {
						var acks []combtype.AckItem
						for _, m := range res.Messages {
							acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: res.LeaseID,
								Group: g, Status: combtype.AckCompleted})
						}
						if _, err := s.Ack(ctx, "", g, acks); err != nil {
							t.Fatalf("step %d: ack: %v", step, err)
						}
					}
				}
			}
			// A partition made after every group subscribed: none has a
			// row there, the queue-mode group included.
			if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "late", Payload: []byte("1")}}); err != nil {
				t.Fatal(err)
			}
			qs, err := s.QueueStats(ctx, "", "q")
			if err != nil {
				t.Fatal(err)
			}
			now := micros(clk.Now())
			var pids []int64
			for _, ps := range qs.Partitions {
				pids = append(pids, ps.ID)
			}
			// The whole list: rows first, then implied, as they were held.
			all := map[int64][]cursor{}
			rows, err := s.r.QueryContext(ctx, `SELECT `+cursorColumns+` FROM cursors c
				WHERE c.partition_id IN (SELECT value FROM json_each(?))`, jsonInts(pids))
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				c, err := scanCursor(rows)
				if err != nil {
					t.Fatal(err)
				}
				all[c.partitionID] = append(all[c.partitionID], c)
			}
			rows.Close()
			if err := eachImpliedCursor(ctx, s.r, pids, func(c *cursor) { all[c.partitionID] = append(all[c.partitionID], *c) }); err != nil {
				t.Fatal(err)
			}
			groups := map[string]bool{}
			for _, ps := range qs.Partitions {
				cs := all[ps.ID]
				var pick *cursor
				var live, named int
				var consumed, batches int64
				qm := false
				for i := range cs {
					c := &cs[i]
					consumed, batches = consumed+c.totalConsumed, batches+c.batches
					if c.live(now) {
						live++
					}
					if c.group == combtype.QueueModeGroup {
						qm = true
						continue
					}
					named++
					groups[c.group] = true
					if pick == nil || c.committed < pick.committed {
						pick = c
					}
				}
				for i := range cs {
					if cs[i].group == combtype.QueueModeGroup {
						pick = &cs[i]
					}
				}
				want := partitionCounts(&ps.Partition, pick, now)
				want.DeadLetter = ps.Counts.DeadLetter
				if ps.Counts != want || ps.LiveLeases != live || ps.BusGroups != named || ps.HasQueueMode != qm ||
					ps.TotalConsumed != consumed || ps.BatchesConsumed != batches {
					t.Errorf("partition %s: counts %+v live %d groups %d qm %v consumed %d/%d; the whole list gives %+v %d %d %v %d/%d",
						ps.Name, ps.Counts, ps.LiveLeases, ps.BusGroups, ps.HasQueueMode, ps.TotalConsumed, ps.BatchesConsumed,
						want, live, named, qm, consumed, batches)
				}
			}
			if qs.BusGroups != len(groups) {
				t.Errorf("queue: %d named groups, the whole list has %d", qs.BusGroups, len(groups))
			}
			// The message views: how many named groups are past each
			// message, of how many.
			byUUID := map[string]int64{}
			for _, ps := range qs.Partitions {
				byUUID[ps.UUID] = ps.ID
			}
			msgs, _, err := s.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 1000})
			if err != nil || len(msgs) == 0 {
				t.Fatalf("list messages = %d, %v", len(msgs), err)
			}
			for _, m := range msgs {
				var past, named int
				var least, qm *cursor
				cs := all[byUUID[m.PartitionID]]
				for i, c := range cs {
					if c.group == combtype.QueueModeGroup {
						qm = &cs[i]
						continue
					}
					named++
					if m.Offset <= c.committed {
						past++
					}
					if least == nil || c.committed < least.committed {
						least = &cs[i]
					}
				}
				if m.ConsumedBy != past || m.TotalGroups != named {
					t.Errorf("message %s/%d: consumed by %d of %d groups, the whole list gives %d of %d",
						m.Partition, m.Offset, m.ConsumedBy, m.TotalGroups, past, named)
				}
				// Its status is the one the whole list's status cursor gives.
				v := &partitionView{qm: qm, sc: least}
				if qm != nil {
					v.sc = qm
				}
				if st, qst, _, _ := v.status(m.Offset, false, now); m.Status != st || m.QueueStatus != qst {
					t.Errorf("message %s/%d: status %q queue status %q, the whole list gives %q %q",
						m.Partition, m.Offset, m.Status, m.QueueStatus, st, qst)
				}
			}
		})
	}
}
