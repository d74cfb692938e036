package store

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
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
			rig := NewWakeRig(b, s, contact, groups, []byte(`{"n":1}`))
			var writer, claims int64
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				gs := rig.Next(b)
				release := holdWriter(b, s)
				results, wg := rig.PopAll(b, gs, func() {})
				waitPending(b, s, groups)
				writer0 := claimCommits.Load()
				b.StartTimer()
				release()
				wg.Wait()
				b.StopTimer()
				writer += claimCommits.Load() - writer0
				claims += groups
				rig.Check(b, gs, results)
				b.StartTimer()
			}
			b.ReportMetric(float64(writer)/float64(claims), "writer-µs/claim")
		})
	}
}
