package retention_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// BenchmarkPushLatency measures the latency of single pushes (10 messages
// of ~100 bytes) on one queue, with the database idle and while a sweep
// deletes an expired backlog of 4000 segments (400k messages) of another
// queue. Only pushes made while the sweep is still running are counted.
// Both runs prefill the same backlog, so the file is the same size.
//
//	go test ./retention -run '^$' -bench PushLatency -benchtime 2000x
func BenchmarkPushLatency(b *testing.B) {
	for _, mode := range []string{"idle", "sweeping"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			clk := clock.NewManual(t0)
			br := combtest.MustOpenBroker(b, combtest.Options{Clock: clk, Broker: func(o *broker.Options) {
				o.RetentionInterval = -1
				o.Logger = slog.New(slog.DiscardHandler)
			}})
			o := combtype.DefaultQueueOptions()
			o.RetentionEnabled, o.RetentionSeconds = true, 60
			if _, _, err := br.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "old", Options: o}); err != nil {
				b.Fatal(err)
			}
			payload := []byte(`{"order":12345,"customer":"c-0001","items":[1,2,3],"note":"retention latency benchmark"}`)
			const segments, perSegment = 4000, 100
			backlog := make([]combtype.PushItem, perSegment)
			for i := range backlog {
				backlog[i] = combtype.PushItem{Queue: "old", Payload: payload}
			}
			for range segments {
				for i := range backlog {
					backlog[i].TxnID = ""
				}
				if _, err := br.Push(ctx, backlog); err != nil {
					b.Fatal(err)
				}
			}
			clk.Advance(time.Hour) // the whole backlog is past retention

			var sweeping atomic.Bool
			done := make(chan error, 1)
			if mode == "sweeping" {
				sweeping.Store(true)
				go func() {
					st, err := br.RetentionSweep(ctx)
					sweeping.Store(false)
					if err == nil && st.Segments != segments {
						err = fmt.Errorf("sweep deleted %d segments, want %d", st.Segments, segments)
					}
					done <- err
				}()
			} else {
				done <- nil
			}
			items := make([]combtype.PushItem, 10)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				for i := range items {
					items[i] = combtype.PushItem{Queue: "live", Payload: payload}
				}
				start := time.Now()
				if _, err := br.Push(ctx, items); err != nil {
					b.Fatal(err)
				}
				if d := time.Since(start); mode == "idle" || sweeping.Load() {
					lat = append(lat, d)
				}
			}
			b.StopTimer()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			if len(lat) == 0 {
				b.Fatal("the sweep ended before the first push: raise the backlog")
			}
			slices.Sort(lat)
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(pct(0.50), "p50-µs")
			b.ReportMetric(pct(0.99), "p99-µs")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
			b.ReportMetric(float64(len(lat)), "measured")
		})
	}
}
