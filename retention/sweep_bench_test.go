package retention_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
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
// messages/s, the commits while it ran (each holds the writer: p50, p99,
// longest), and the latency of the pushes answered during it.
//
//	go test ./retention -run '^$' -bench SweepBacklog -benchtime 1x
func BenchmarkSweepBacklog(b *testing.B) {
	const parts, perPart, perPush = 16, 25000, 1000
	ctx := context.Background()
	clk := clock.NewManual(t0)
	var holding atomic.Bool
	var mu sync.Mutex
	var commits []time.Duration
	st, err := store.Open(ctx, store.Options{Path: filepath.Join(b.TempDir(), "comb.db"), Clock: clk,
		Logger: slog.New(slog.DiscardHandler), OnCommit: func(_ int, d time.Duration) {
			if holding.Load() {
				mu.Lock()
				commits = append(commits, d)
				mu.Unlock()
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
		svc := retention.New(st, retention.Config{Interval: -1, LeaseInterval: -1, Clock: clk,
			Logger: slog.New(slog.DiscardHandler)})
		var wg sync.WaitGroup
		var stop atomic.Bool
		var lat []time.Duration
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
				lat = append(lat, time.Since(t))
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
		mu.Lock()
		slices.Sort(commits)
		slices.Sort(lat)
		pct := func(ds []time.Duration, p float64) float64 {
			return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000
		}
		b.ReportMetric(pct(commits, 0.5), "commit-p50-ms")
		b.ReportMetric(pct(commits, 0.99), "commit-p99-ms")
		b.ReportMetric(pct(commits, 1), "commit-max-ms")
		b.ReportMetric(pct(lat, 0.99), "push-p99-ms")
		b.ReportMetric(pct(lat, 1), "push-max-ms")
		b.ReportMetric(float64(len(lat))/took.Seconds(), "pushes/s")
		commits = commits[:0]
		mu.Unlock()
	}
}

// BenchmarkSweepGroups measures a sweep of 16 partitions' expired
// segments (64k messages) on a queue with 0 or 10,000 consumer groups,
// each subscribed by a pop and then sought past half of the log: under
// retentionSeconds (groups do not matter) and completedRetentionSeconds
// (every group must have consumed what goes: the half they passed goes,
// the rest stays).
//
//	go test ./retention -run '^$' -bench SweepGroups -benchtime 1x
func BenchmarkSweepGroups(b *testing.B) {
	const parts, segs, per = 16, 40, 100
	for _, groups := range []int{0, 10000} {
		for _, policy := range []string{"retention", "completed"} {
			b.Run(fmt.Sprintf("groups=%d/%s", groups, policy), func(b *testing.B) {
				ctx := context.Background()
				clk := clock.NewManual(t0)
				st, err := store.Open(ctx, store.Options{Path: filepath.Join(b.TempDir(), "comb.db"), Clock: clk,
					Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				items := make([]combtype.PushItem, per)
				var half time.Time
				for s := range segs {
					if s == segs/2 {
						half = clk.Now()
					}
					for p := range parts {
						for i := range items {
							items[i] = combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%02d", p), Payload: []byte(`{"n":1}`)}
						}
						if _, err := st.Push(ctx, "", items); err != nil {
							b.Fatal(err)
						}
					}
					clk.Advance(time.Second)
				}
				for g := range groups {
					name := fmt.Sprintf("g%05d", g)
					if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: name, Batch: 1, AutoAck: true}); err != nil {
						b.Fatal(err)
					}
					if _, err := st.Seek(ctx, "", combtype.SeekRequest{Queue: "q", Group: name, Target: combtype.SeekTarget{Time: &half}}); err != nil {
						b.Fatal(err)
					}
				}
				o := combtype.DefaultQueueOptions()
				o.RetentionEnabled = true
				if policy == "retention" {
					o.RetentionSeconds = 60
				} else {
					o.CompletedRetentionSeconds = 60
				}
				if _, _, err := st.Configure(ctx, "", combtype.ConfigureRequest{Queue: "q", Options: o}); err != nil {
					b.Fatal(err)
				}
				clk.Advance(time.Hour)
				want := int64(parts * segs * per)
				switch {
				case policy == "completed" && groups == 0:
					want = 0 // a partition nobody consumes has nothing completed
				case policy == "completed":
					want /= 2
				}
				for range b.N {
					svc := retention.New(st, retention.Config{Interval: -1, LeaseInterval: -1, Clock: clk,
						Logger: slog.New(slog.DiscardHandler)})
					start := time.Now()
					res, err := svc.Sweep(ctx, clk.Now())
					took := time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					if res.Frames != want {
						b.Fatalf("sweep removed %d messages, want %d", res.Frames, want)
					}
					b.ReportMetric(float64(took.Milliseconds()), "sweep-ms")
					b.ReportMetric(float64(res.Frames)/took.Seconds(), "msgs/s")
					b.ReportMetric(float64(res.Frames), "removed")
				}
			})
		}
	}
}
