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
	for b.Loop() {
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "elsewhere", Payload: []byte(`1`)}}); err != nil {
			b.Fatal(err)
		}
		res, err := s.Pop(ctx, "", pop)
		if err != nil || len(res.Messages) != 0 {
			b.Fatal(res, err)
		}
	}
	// Queues read one by one: those the one statement a page
	// (mayHaveFor) could not rule out.
	b.ReportMetric(float64(s.stats.QueueLooks.Load()-before)/float64(b.N), "looks/op")
}
