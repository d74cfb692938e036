package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
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
// new group subscribes it inside the single writer, which every other
// write waits for. It seeded a cursor on every partition of the queue
// (seconds at a million partitions); now it writes the subscription and
// the cursors of what it claims: neither the statements nor the cursor
// rows grow with the partitions.
func TestANewGroupsFirstPopHoldsTheWriterForFewStatements(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	pushPartitions(t, s, "small", "p", 10, 1)
	pushPartitions(t, s, "large", "p", 3000, 1)
	for _, mode := range []string{"all", "new", "", "2026-12-01T11:00:00Z"} {
		statements := map[string]int64{}
		for _, queue := range []string{"small", "large"} {
			req := combtype.PopRequest{Queue: queue, Group: "g-" + mode, Batch: 1, SubscriptionMode: mode}
			if len(mode) > 3 {
				req.SubscriptionMode, req.SubscriptionFrom = "", mode
			}
			before := s.wstatements.Load()
			res, err := s.Pop(ctx, "", req)
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
			if n != len(res.Messages) {
				t.Errorf("mode %q: the first pop wrote %d cursors on %s, want one per partition it claimed (%d)",
					mode, n, queue, len(res.Messages))
			}
		}
		if statements["large"] > statements["small"]+2 || statements["large"] > 30 {
			t.Errorf("mode %q: a new group's first pop ran %d writer statements on 3000 partitions, %d on 10",
				mode, statements["large"], statements["small"])
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
