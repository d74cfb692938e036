package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// BenchmarkWakeHeld is BenchmarkWakeManyGroups/*/wave with its commits
// fixed: the writer is held while the 1,000 claims of a wake queue up, so
// every wake commits the same batches (64, 256, then the rest: waveRamp)
// whatever the scheduler does. The writer's work is then the same from
// run to run, and an instruction count of it (valgrind --tool=callgrind
// --toggle-collect on runBatch) or a count of the pages it writes is a
// figure free of the machine's noise.
func BenchmarkWakeHeld(b *testing.B) {
	const groups = 1000
	for _, contact := range []string{"subscribed", "first", "parked"} {
		b.Run(contact, func(b *testing.B) {
			ctx := context.Background()
			// The writer's time in the commits of claims: the op that holds
			// it commits alone, and no claim does.
			var claimCommits atomic.Int64
			s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "comb.db"), Synchronous: "NORMAL",
				OnCommit: func(ops int, d time.Duration) {
					if ops > 1 {
						claimCommits.Add(d.Microseconds())
					}
				}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			payload := []byte(`{"n":1}`)
			if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "parked", Payload: payload}}); err != nil {
				b.Fatal(err)
			}
			names := func(round int) []string {
				out := make([]string, groups)
				for i := range out {
					out[i] = fmt.Sprintf("g-%d", i)
					if contact != "subscribed" {
						out[i] = fmt.Sprintf("g-%d-%d", round, i)
					}
				}
				return out
			}
			park := func(gs []string) {
				for _, g := range gs {
					if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "parked", Group: g, SubscriptionMode: "new"}); err != nil {
						b.Fatal(err)
					}
				}
			}
			if contact == "subscribed" {
				park(names(0))
			}
			var writer, claims int64
			round := 0
			b.ResetTimer()
			for b.Loop() {
				round++
				b.StopTimer()
				gs := names(round)
				if contact == "parked" {
					park(gs)
				}
				if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "parked", Payload: payload}}); err != nil {
					b.Fatal(err)
				}
				results := make([]*combtype.PopResult, groups)
				release := holdWriter(b, s)
				var wg sync.WaitGroup
				for i, g := range gs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						res, err := s.PopWoken(ctx, "", combtype.PopRequest{Queue: "parked", Group: g, Batch: 1})
						if err != nil {
							b.Error(err)
							return
						}
						results[i] = res
					}()
				}
				waitPending(b, s, groups)
				writer0 := claimCommits.Load()
				b.StartTimer()
				release()
				wg.Wait()
				b.StopTimer()
				writer += claimCommits.Load() - writer0
				claims += groups
				var acks []combtype.AckItem
				for i, res := range results {
					if res == nil || len(res.Messages) != 1 {
						b.Fatalf("%s: %v, want one message", gs[i], res)
					}
					m := res.Messages[0]
					acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Group: gs[i]})
				}
				if contact == "subscribed" {
					for _, a := range acks {
						if _, err := s.Ack(ctx, "", a.Group, []combtype.AckItem{a}); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(writer)/float64(claims), "writer-µs/claim")
		})
	}
}
