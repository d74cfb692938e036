package store_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

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
				rig := store.NewWakeRig(b, st, contact, groups, payload100)
				var cpu, claims, writer, statements int64
				b.ResetTimer()
				for b.Loop() {
					b.StopTimer()
					gs := rig.Next(b)
					var start, ready sync.WaitGroup
					start.Add(1)
					ready.Add(len(gs))
					results, wg := rig.PopAll(b, gs, func() { ready.Done(); start.Wait() })
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
					rig.Check(b, gs, results)
					b.StartTimer()
				}
				b.ReportMetric(float64(cpu)/1e3/float64(claims), "cpu-µs/claim")
				b.ReportMetric(float64(writer)/float64(claims), "writer-µs/claim")
				b.ReportMetric(float64(statements)/float64(claims), "stmts/claim")
			})
		}
	}
}
