package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// BenchmarkGroupDeleteWide is the delete of a group with a cursor row on
// every partition of a wide queue (a seek to the end writes them), which
// holds the writer while it runs: push-wait is how long one push sent
// just after the delete began waited for its answer.
func BenchmarkGroupDeleteWide(b *testing.B) {
	for _, parts := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			ctx := context.Background()
			br, err := broker.Open(ctx, broker.Options{Path: filepath.Join(b.TempDir(), "comb.db"), Synchronous: "NORMAL", RetentionInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer br.Close()
			items := make([]combtype.PushItem, 0, 10_000)
			for i := 0; i < parts; i += 10_000 {
				items = items[:0]
				for j := i; j < min(i+10_000, parts); j++ {
					items = append(items, combtype.PushItem{Queue: "wide", Partition: fmt.Sprintf("p%07d", j), Payload: []byte(`{"n":1}`)})
				}
				if _, err := br.Push(ctx, items); err != nil {
					b.Fatal(err)
				}
			}
			var wait time.Duration
			for b.Loop() {
				b.StopTimer()
				if _, err := br.GroupSeek(ctx, combtype.SeekRequest{Group: "g", Queue: "wide", Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				pushed := make(chan time.Duration, 1)
				go func() {
					time.Sleep(time.Millisecond)
					t0 := time.Now()
					br.Push(ctx, []combtype.PushItem{{Queue: "other", Payload: []byte(`{"n":1}`)}})
					pushed <- time.Since(t0)
				}()
				n, err := br.GroupDelete(ctx, combtype.GroupDeleteRequest{Group: "g", Queue: "wide"})
				if err != nil || n != int64(parts) {
					b.Fatalf("deleted %d, %v; want %d", n, err, parts)
				}
				wait += <-pushed
			}
			b.ReportMetric(float64(wait.Milliseconds())/float64(b.N), "push-wait-ms")
		})
	}
}
