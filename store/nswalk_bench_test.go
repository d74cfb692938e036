package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// BenchmarkNamespaceWalk is a pop of a namespace of 2,000 queues, none
// with anything due for its group: the look at every queue a namespace
// pop makes when it begins, with a commit elsewhere before each (so no
// idle mark holds).
func BenchmarkNamespaceWalk(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "c.db"), Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 2000
	for i := range n {
		if _, _, err := s.Configure(ctx, "", combtype.ConfigureRequest{Queue: fmt.Sprintf("q%04d", i), Namespace: "ns"}); err != nil {
			b.Fatal(err)
		}
	}
	pop := combtype.PopRequest{Namespace: "ns", Group: "g", Batch: 1}
	if _, err := s.Pop(ctx, "", pop); err != nil {
		b.Fatal(err)
	}
	before := s.stats.QueueLooks.Load()
	lookAfterCommits(b, s, pop)
	// Queues read one by one: those the one statement a page
	// (mayHaveFor) could not rule out.
	b.ReportMetric(float64(s.stats.QueueLooks.Load()-before)/float64(b.N), "looks/op")
}

// BenchmarkNamespaceWalkWide is BenchmarkNamespaceWalk over queues made
// by pushes (a message each, which the group, subscribed to new ones,
// does not want), at 2,000 and 20,000 queues: a look must grow with the
// queues, not faster.
func BenchmarkNamespaceWalkWide(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("queues=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "c.db"), Synchronous: "NORMAL"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for start := 0; start < n; start += 1000 {
				var items []combtype.PushItem
				for i := start; i < min(start+1000, n); i++ {
					items = append(items, combtype.PushItem{Queue: fmt.Sprintf("ns.t.q%05d", i), Payload: []byte(`1`)})
				}
				if _, err := s.Push(ctx, "", items); err != nil {
					b.Fatal(err)
				}
			}
			pop := combtype.PopRequest{Namespace: "ns", Group: "g", Batch: 1, SubscriptionMode: "new"}
			if _, err := s.Pop(ctx, "", pop); err != nil {
				b.Fatal(err)
			}
			lookAfterCommits(b, s, pop)
		})
	}
}

// lookAfterCommits pops with pop, finding nothing, after a commit
// elsewhere each time (so no idle mark holds), for b's loop.
func lookAfterCommits(b *testing.B, s *Store, pop combtype.PopRequest) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "elsewhere", Payload: []byte(`1`)}}); err != nil {
			b.Fatal(err)
		}
		res, err := s.Pop(ctx, "", pop)
		if err != nil || len(res.Messages) != 0 {
			b.Fatal(res, err)
		}
	}
}
