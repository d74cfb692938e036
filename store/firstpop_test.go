package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/seek"
)

// pushPartitions pushes msgs messages into each of n partitions of queue,
// named prefix0000000 on.
func pushPartitions(t *testing.T, s *Store, queue, prefix string, n, msgs int) {
	t.Helper()
	var items []combtype.PushItem
	for i := range n {
		for m := range msgs {
			items = append(items, combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("%s%07d", prefix, i), Payload: []byte(fmt.Sprint(m))})
		}
		if len(items) >= 5000 || i == n-1 {
			if _, err := s.Push(context.Background(), "", items); err != nil {
				t.Fatal(err)
			}
			items = items[:0]
		}
	}
}

// TestANewGroupsFirstPopHoldsTheWriterForFewStatements: the first pop of a
// new group subscribes it and seeds its cursors inside the single writer,
// which every other write waits for. It ran a statement per partition of
// the queue (20 s at a million partitions); the number of statements must
// not grow with the partitions.
func TestANewGroupsFirstPopHoldsTheWriterForFewStatements(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	pushPartitions(t, s, "small", "p", 10, 1)
	pushPartitions(t, s, "large", "p", 3000, 1)
	for _, mode := range []string{"all", "new", ""} {
		statements := map[string]int64{}
		for _, queue := range []string{"small", "large"} {
			before := s.wstatements.Load()
			res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: queue, Group: "g-" + mode, Batch: 1, SubscriptionMode: mode})
			if err != nil {
				t.Fatal(err)
			}
			statements[queue] = s.wstatements.Load() - before
			if want := map[bool]int{true: 0, false: 1}[mode == "new"]; len(res.Messages) != want {
				t.Errorf("mode %q, queue %s: first pop got %d messages, want %d", mode, queue, len(res.Messages), want)
			}
			var n int
			if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cursors c JOIN partitions p ON p.id = c.partition_id
				JOIN queues q ON q.id = p.queue_id WHERE q.name = ? AND c.group_name = ?`, queue, "g-"+mode).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"small": 10, "large": 3000}[queue]; n != want {
				t.Errorf("mode %q: %d cursors on %s, want one on each of its %d partitions", mode, n, queue, want)
			}
		}
		if statements["large"] > statements["small"]+2 || statements["large"] > 30 {
			t.Errorf("mode %q: a new group's first pop ran %d writer statements on 3000 partitions, %d on 10",
				mode, statements["large"], statements["small"])
		}
	}
}

// TestSetSeededCursorsLieWhereTheRuleSeedsThem: seeding in one statement
// puts every cursor exactly where seek.Seed puts it, partition by
// partition, whatever retention left of the partition.
func TestSetSeededCursorsLieWhereTheRuleSeedsThem(t *testing.T) {
	ctx := context.Background()
	c := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := openTestStore(t, c)
	pushPartitions(t, s, "q", "p", 6, 5)
	c.Advance(time.Minute)
	pushPartitions(t, s, "q", "p", 4, 3) // p0..p3 get a second segment, a minute later
	// Retention took part of p1 and all of p2 and p4.
	for _, cut := range []struct {
		name string
		upTo int64
	}{{"p0000001", 5}, {"p0000002", 8}, {"p0000004", 5}} {
		var id int64
		if err := s.r.QueryRowContext(ctx, `SELECT id FROM partitions WHERE name = ?`, cut.name).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EvictPrefix(ctx, id, cut.upTo, c.Now(), EvictLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := queryPartitions(ctx, s.r, `SELECT `+partitionColumns+` FROM partitions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if parts[2].LogStart <= parts[2].LastOffset || parts[1].LogStart == 0 {
		t.Fatalf("retention did not cut as the test needs: %+v %+v", parts[1], parts[2])
	}
	between, future := c.Now().Add(-30*time.Second), c.Now().Add(time.Hour)
	for mode, start := range map[string]seek.Start{"all": {}, "new": {End: true},
		between.Format(time.RFC3339Nano): {Time: &between}, future.Format(time.RFC3339Nano): {Time: &future}} {
		group := "g-" + mode
		req := combtype.PopRequest{Queue: "q", Group: group, Batch: 1, SubscriptionMode: mode}
		if start.Time != nil {
			req.SubscriptionMode, req.SubscriptionFrom = "", mode
		}
		if _, err := s.Pop(ctx, "", req); err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			st := seekStateOf(p)
			if start.Time != nil {
				l, err := landing(ctx, s.r, p, micros(*start.Time))
				if err != nil {
					t.Fatal(err)
				}
				st.Landing = l.seg()
			}
			want := seek.Seed(start, &st)
			var got, leased int64
			if err := s.r.QueryRowContext(ctx, `SELECT committed, lease_from IS NOT NULL FROM cursors WHERE partition_id = ? AND group_name = ?`,
				p.ID, group).Scan(&got, &leased); err != nil {
				t.Fatalf("mode %s, %s: %v", mode, p.Name, err)
			}
			if got != want && leased == 0 {
				t.Errorf("mode %s, %s (log_start %d, last %d): cursor at %d, the rule seeds %d", mode, p.Name, p.LogStart, p.LastOffset, got, want)
			}
		}
	}
}

// TestSetSeedingKeepsACursorLeftFromBefore: a cursor a group kept when its
// subscription went is not moved by the group subscribing again.
func TestSetSeedingKeepsACursorLeftFromBefore(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	pushPartitions(t, s, "q", "p", 3, 4)
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Partition: "p0000001", Batch: 2, AutoAck: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		_, err := w.ExecContext(w.ctx, `DELETE FROM subscriptions WHERE group_name = 'g'`)
		return err
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Partition: "p0000001", Batch: 10, SubscriptionMode: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 {
		t.Fatalf("the group's next pop of p0000001 got %d messages, want the 2 it had not consumed", len(res.Messages))
	}
}
