package retention_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/retention"
	"github.com/comb-broker/comb/store"
)

// backlogPayload is a ~1 KB message like the backlog script's: half
// English-like text (lz4 compresses it), half base64 of random bytes.
func backlogPayload(rng *rand.Rand, id int) []byte {
	const words = "order shipped invoice customer warehouse pallet route driver scanned delivered returned priority express standard parcel depot "
	if id%2 == 0 {
		var sb strings.Builder
		fmt.Fprintf(&sb, `{"id":%d,"kind":"event","text":"`, id)
		for sb.Len() < 1000 {
			w := rng.IntN(len(words) - 12)
			sb.WriteString(words[w : w+12])
		}
		sb.WriteString(`"}`)
		return []byte(sb.String())
	}
	raw := make([]byte, 720)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	return []byte(fmt.Sprintf(`{"id":%d,"kind":"blob","data":"%s"}`, id, base64.StdEncoding.EncodeToString(raw)))
}

// BenchmarkSweepBacklog measures a sweep of an expired backlog of ~1 KB
// messages over 16 partitions (synchronous FULL, the default) while a
// producer pushes batches of 10 to another queue: the sweep's rate in
// messages/s, the longest commit while it ran (how long the writer was
// held), and the slowest push answered during it.
//
//	go test ./retention -run '^$' -bench SweepBacklog -benchtime 1x
func BenchmarkSweepBacklog(b *testing.B) {
	const parts, perPart, perPush = 16, 25000, 1000
	ctx := context.Background()
	clk := clock.NewManual(t0)
	var holding atomic.Bool
	var longest, sumCommit, nCommit atomic.Int64
	st, err := store.Open(ctx, store.Options{Path: filepath.Join(b.TempDir(), "comb.db"), Clock: clk,
		Logger: slog.New(slog.DiscardHandler), OnCommit: func(_ int, d time.Duration) {
			if holding.Load() {
				sumCommit.Add(int64(d))
				nCommit.Add(1)
			}
			if holding.Load() && int64(d) > longest.Load() {
				longest.Store(int64(d))
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	o := combtype.DefaultQueueOptions()
	o.RetentionEnabled, o.RetentionSeconds = true, 60
	if _, _, err := st.Configure(ctx, "", combtype.ConfigureRequest{Queue: "old", Options: o}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	items := make([]combtype.PushItem, perPush)
	id := 0
	for range perPart / perPush {
		for p := range parts {
			for i := range items {
				items[i] = combtype.PushItem{Queue: "old", Partition: fmt.Sprintf("p%02d", p), Payload: backlogPayload(rng, id)}
				id++
			}
			if _, err := st.Push(ctx, "", items); err != nil {
				b.Fatal(err)
			}
		}
	}
	clk.Advance(time.Hour)
	total := int64(parts * perPart)
	for range b.N {
		cfg := retention.Config{Interval: -1, LeaseInterval: -1, Clock: clk,
			Logger: slog.New(slog.DiscardHandler)}
		if os.Getenv("XBIG") != "" {
			cfg.Limits = store.EvictLimits{Segments: 256, Bytes: 1 << 30, Frames: 16384}
		}
		if os.Getenv("XNOYIELD") != "" {
			cfg.YieldRatio = -1
		}
		svc := retention.New(st, cfg)
		if p := os.Getenv("XPROF"); p != "" {
			f, _ := os.Create(p)
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		var wg sync.WaitGroup
		var stop atomic.Bool
		var slowest time.Duration
		pushed := 0
		wg.Go(func() {
			live := make([]combtype.PushItem, 10)
			for !stop.Load() {
				for i := range live {
					live[i] = combtype.PushItem{Queue: "live", Payload: []byte(`{"live":true}`)}
				}
				t := time.Now()
				if _, err := st.Push(ctx, "", live); err != nil {
					b.Error(err)
					return
				}
				slowest = max(slowest, time.Since(t))
				pushed++
			}
		})
		holding.Store(true)
		start := time.Now()
		res, err := svc.Sweep(ctx, clk.Now())
		took := time.Since(start)
		holding.Store(false)
		stop.Store(true)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		if res.Frames != total {
			b.Fatalf("sweep removed %d messages, want %d", res.Frames, total)
		}
		b.ReportMetric(float64(res.Frames)/took.Seconds(), "msgs/s")
		b.ReportMetric(float64(time.Duration(longest.Load()).Milliseconds()), "longest-commit-ms")
		b.ReportMetric(float64(slowest.Milliseconds()), "slowest-push-ms")
		b.ReportMetric(float64(pushed)/took.Seconds(), "pushes/s")
	}
}
