package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/comb-broker/comb/store"
)

// BenchmarkClaimManyGroups is what a wave of woken long-polls costs the
// writer: one message is pushed, then many consumer groups, each on its
// first contact with the queue, pop it at once under a lease, so their
// claims (subscription, cursor seeding, lease) are fused into few commits.
// The writer does these claims one after another, so its time per claim
// (writer-µs/claim) bounds how fast thousands of parked pops wake.
func BenchmarkClaimManyGroups(b *testing.B) {
	ctx := context.Background()
	// synchronous=NORMAL: the figure is what a claim costs, not what the
	// disk's flush costs.
	st, err := store.Open(ctx, store.Options{Path: filepath.Join(b.TempDir(), "comb.db"), Synchronous: "NORMAL"})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Push(ctx, "", []store.PushItem{{Queue: "parked", Payload: payload100}}); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	stats := st.Stats()
	micros0, cpu0 := stats.CommitMicros.Load(), processCPU()
	b.SetParallelism(128)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			group := fmt.Sprintf("g-%d", next.Add(1))
			res, err := st.Pop(ctx, store.PopRequest{Queue: "parked", Group: group, Batch: 1})
			if err != nil || len(res.Messages) != 1 {
				b.Errorf("pop %s: %d messages, %v", group, len(res.Messages), err)
				return
			}
		}
	})
	// Wall time on a loaded machine says little; the writer's time in its
	// commits and the process's CPU per claim hold up better.
	b.ReportMetric(float64(stats.CommitMicros.Load()-micros0)/float64(b.N), "writer-µs/claim")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/claim")
}
