package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// idleModes are subscriptions under which a new group finds nothing due
// in queues written before it: new messages only, and from a time past
// every message.
var idleModes = []struct{ name, mode, from string }{
	{"new", "new", ""},
	{"after the data", "", "2026-12-01T12:30:00Z"},
}

// TestAnIdleGroupsPopReadsOnlyPartitionsThatCouldBeDue: a group subscribed
// to new messages, or from a time past the data, has nothing due on a
// queue nobody wrote since. Its pops (the first, in the writer, and the
// ones after, on a reader) read the partitions that could have something
// for it, found through indexes, not every partition of the queue: the
// same few at 10 and at 12,000 partitions, and its pop costs the same.
func TestAnIdleGroupsPopReadsOnlyPartitionsThatCouldBeDue(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := openTestStore(t, clk)
	pushPartitions(t, s, "small", "p", 10, 1)
	pushPartitions(t, s, "large", "p", 12000, 1)
	clk.Advance(time.Hour)
	for _, m := range idleModes {
		took := map[string]time.Duration{}
		for _, queue := range []string{"small", "large"} {
			req := combtype.PopRequest{Queue: queue, Group: "g-" + m.name, Batch: 1,
				SubscriptionMode: m.mode, SubscriptionFrom: m.from}
			var times []time.Duration
			for i := range 15 { // the first subscribes, in the writer; the rest look on a reader
				start := time.Now()
				res, err := s.Pop(ctx, "", req)
				if i > 0 {
					times = append(times, time.Since(start))
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Messages) != 0 {
					t.Fatalf("%s, %s: pop %d got %d messages, want none", m.name, queue, i, len(res.Messages))
				}
			}
			slices.Sort(times)
			took[queue] = times[len(times)/2]
			q, err := getQueue(ctx, s.r, "", queue)
			if err != nil {
				t.Fatal(err)
			}
			ids, few, err := dueSuspects(ctx, s.r, q.ID, req.Group)
			if err != nil {
				t.Fatal(err)
			}
			if !few || len(ids) != 0 {
				t.Errorf("%s, %s: partitions that could be due %v (listed: %v), want none", m.name, queue, ids, few)
			}
		}
		// A walk of 12,000 partitions takes tens of milliseconds; a look
		// at the few that could be due, well under one.
		if took["large"] > 3*took["small"]+2*time.Millisecond {
			t.Errorf("%s: a pop with nothing due took %v at 12,000 partitions, %v at 10", m.name, took["large"], took["small"])
		}
	}
}

// TestAnIdleGroupFindsWhatIsWrittenLater: the partitions written after a
// group subscribed, and those it has cursors on, are the ones its scan
// looks at, and their messages are found there, in turn.
func TestAnIdleGroupFindsWhatIsWrittenLater(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := openTestStore(t, clk)
	pushPartitions(t, s, "q", "p", 300, 1)
	clk.Advance(time.Hour)
	for _, m := range idleModes {
		group := "g-" + m.name
		req := combtype.PopRequest{Queue: "q", Group: group, Batch: 10, SubscriptionMode: m.mode, SubscriptionFrom: m.from}
		if res, err := s.Pop(ctx, "", req); err != nil || len(res.Messages) != 0 {
			t.Fatalf("%s: first pop: %v, %v", m.name, res, err)
		}
	}
	clk.Advance(time.Minute)
	var items []combtype.PushItem
	for _, p := range []string{"p0000007", "p0000150", "p0000299", "fresh"} {
		items = append(items, combtype.PushItem{Queue: "q", Partition: p, Payload: []byte(`"later"`)})
	}
	if _, err := s.Push(ctx, "", items); err != nil {
		t.Fatal(err)
	}
	for _, m := range idleModes {
		group := "g-" + m.name
		req := combtype.PopRequest{Queue: "q", Group: group, Batch: 10, SubscriptionMode: m.mode, SubscriptionFrom: m.from, AutoAck: true}
		var got []string
		for range 5 {
			res, err := s.Pop(ctx, "", req)
			if err != nil {
				t.Fatal(err)
			}
			for _, msg := range res.Messages {
				got = append(got, fmt.Sprintf("%s:%s", msg.Partition, msg.Payload))
			}
		}
		slices.Sort(got)
		want := []string{`fresh:"later"`, `p0000007:"later"`, `p0000150:"later"`, `p0000299:"later"`}
		if !slices.Equal(got, want) {
			t.Errorf("%s: pops after the push got %v, want %v", m.name, got, want)
		}
		q, err := getQueue(ctx, s.r, "", "q")
		if err != nil {
			t.Fatal(err)
		}
		if ids, few, err := dueSuspects(ctx, s.r, q.ID, group); err != nil || !few || len(ids) != 4 {
			t.Errorf("%s: partitions that could be due %v (listed: %v, %v), want the 4 written", m.name, ids, few, err)
		}
	}
	// A group from the oldest has everything due: its scan walks.
	q, err := getQueue(ctx, s.r, "", "q")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g-all", Batch: 1}); err != nil {
		t.Fatal(err)
	}
	if _, few, err := dueSuspects(ctx, s.r, q.ID, "g-all"); err != nil || few {
		t.Errorf("a group from the oldest: listed %v, %v; want the walk", few, err)
	}
}
