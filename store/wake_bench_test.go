package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store"
)

// BenchmarkWakeManyGroups is what one push costs the pops it wakes: 1,000
// groups, each with a pop parked on the queue, claim the one new message
// at once, as the broker makes them after a wake (PopWoken). "alone" is
// each claim applied one by one in the commit (waves off), "wave" the
// claims of the queue fused (claimWaves); run with -count to alternate
// them. "subscribed" groups have met the queue before; on "first" contact
// each claim also subscribes its group; "parked" groups were subscribed by
// a pop that found nothing and parked, and have no cursor row yet, as in
// scripts/parked. The time per op is one whole wake
// of all groups; cpu-µs/claim is the process's CPU per woken claim,
// writer-µs/claim the writer's time in its commits, stmts/claim the
// statements it ran.
func BenchmarkWakeManyGroups(b *testing.B) {
	const groups = 1000
	for _, contact := range []string{"subscribed", "first", "parked"} {
		for _, mode := range []string{"alone", "wave"} {
			b.Run(contact+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				st, err := store.Open(ctx, store.Options{Path: filepath.Join(b.TempDir(), "comb.db"), Synchronous: "NORMAL"})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				st.SetClaimWaves(mode == "wave")
				if _, err := st.Push(ctx, "", []combtype.PushItem{{Queue: "parked", Payload: payload100}}); err != nil {
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
				if contact == "subscribed" {
					// Subscribed at the end: nothing due until the next push.
					for _, g := range names(0) {
						if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "parked", Group: g, SubscriptionMode: "new"}); err != nil {
							b.Fatal(err)
						}
					}
				}
				var cpu, claims, writer, statements int64
				round := 0
				b.ResetTimer()
				for b.Loop() {
					round++
					b.StopTimer()
					gs := names(round)
					if contact == "parked" {
						for _, g := range gs {
							if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "parked", Group: g, SubscriptionMode: "new"}); err != nil {
								b.Fatal(err)
							}
						}
					}
					if _, err := st.Push(ctx, "", []combtype.PushItem{{Queue: "parked", Payload: payload100}}); err != nil {
						b.Fatal(err)
					}
					results := make([]*combtype.PopResult, groups)
					var start, ready sync.WaitGroup
					start.Add(1)
					var wg sync.WaitGroup
					for i, g := range gs {
						wg.Add(1)
						ready.Add(1)
						go func() {
							defer wg.Done()
							ready.Done()
							start.Wait()
							res, err := st.PopWoken(ctx, "", combtype.PopRequest{Queue: "parked", Group: g, Batch: 1})
							if err != nil {
								b.Error(err)
								return
							}
							results[i] = res
						}()
					}
					ready.Wait()
					cpu0, writer0, statements0 := processCPU(), st.Stats().CommitMicros.Load(), st.WriterStatements()
					b.StartTimer()
					start.Done()
					wg.Wait()
					b.StopTimer()
					cpu += int64(processCPU() - cpu0)
					writer += st.Stats().CommitMicros.Load() - writer0
					statements += st.WriterStatements() - statements0
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
						// Done, so the next push is due for every group again.
						for _, a := range acks {
							if _, err := st.Ack(ctx, "", a.Group, []combtype.AckItem{a}); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(cpu)/1e3/float64(claims), "cpu-µs/claim")
				b.ReportMetric(float64(writer)/float64(claims), "writer-µs/claim")
				b.ReportMetric(float64(statements)/float64(claims), "stmts/claim")
			})
		}
	}
}
