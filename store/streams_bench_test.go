package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// BenchmarkStreamTumblingSum drains the same prefilled source two ways in
// one run: "pop+ack" is the baseline (pop 100 with a group, ack the 100),
// "cycle" is a streaming query's step on those messages (pop 100 with the
// query's group, read the shard, fold a one-minute tumbling sum, commit
// state, closed windows' emits and the ack as one cycle). Compare their
// msg/s; cycles/s is msg/s / 100.
func BenchmarkStreamTumblingSum(b *testing.B) {
	const batch = 100
	setup := func(b *testing.B) (*store.Store, *clock.Manual) {
		clk := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
		st := combtest.MustOpenStore(b, combtest.Options{Clock: clk})
		ctx := context.Background()
		n := b.N*batch + batch
		items := make([]store.PushItem, 0, 1000)
		for i := range n {
			items = append(items, store.PushItem{Queue: "readings", Partition: "dev-1", Payload: []byte(fmt.Sprintf(`{"v":%d}`, i%100))})
			if len(items) == cap(items) || i == n-1 {
				if _, err := st.Push(ctx, "", items); err != nil {
					b.Fatal(err)
				}
				items = items[:0]
				clk.Advance(10 * time.Second) // six pushes per window
			}
		}
		return st, clk
	}

	b.Run("pop+ack", func(b *testing.B) {
		st, _ := setup(b)
		ctx := context.Background()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			res, err := st.Pop(ctx, store.PopRequest{Queue: "readings", Group: "plain", Batch: batch})
			if err != nil || len(res.Messages) != batch {
				b.Fatalf("pop %d: %d messages, %v", i, len(res.Messages), err)
			}
			acks := make([]store.AckItem, len(res.Messages))
			for j, m := range res.Messages {
				acks[j] = store.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}
			}
			if _, err := st.Ack(ctx, "", "plain", acks); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msg/s")
	})

	b.Run("cycle", func(b *testing.B) {
		st, _ := setup(b)
		ctx := context.Background()
		reg, err := st.RegisterStreamQuery(ctx, store.StreamRegisterRequest{Name: "per-minute", SourceQueue: "readings",
			SinkQueue: "per-minute.out", ConfigHash: "h"})
		if err != nil {
			b.Fatal(err)
		}
		qid := reg.Query.ID
		type window struct {
			Acc struct {
				Count int64 `json:"count"`
				Sum   int64 `json:"sum"`
			} `json:"acc"`
			WindowStart int64 `json:"windowStart"`
			WindowEnd   int64 `json:"windowEnd"`
		}
		const size = int64(60_000)
		emitted := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			res, err := st.Pop(ctx, store.PopRequest{Queue: "readings", Group: "streams.per-minute", Batch: batch})
			if err != nil || len(res.Messages) != batch {
				b.Fatalf("pop %d: %d messages, %v", i, len(res.Messages), err)
			}
			pid := res.Messages[0].PartitionID
			rows, err := st.StreamState(ctx, "", qid, pid, store.StateFilter{})
			if err != nil {
				b.Fatal(err)
			}
			windows := map[string]*window{}
			for _, r := range rows {
				var w window
				if err := json.Unmarshal(r.Value, &w); err != nil {
					b.Fatal(err)
				}
				windows[r.Key] = &w
			}
			for _, m := range res.Messages {
				start := m.CreatedAt.UnixMilli() / size * size
				key := "tumb:60\x1f" + time.UnixMilli(start).UTC().Format("2006-01-02T15:04:05.000Z") + "\x1fdev-1"
				w := windows[key]
				if w == nil {
					w = &window{WindowStart: start, WindowEnd: start + size}
					windows[key] = w
				}
				var d struct{ V int64 }
				if err := json.Unmarshal(m.Payload, &d); err != nil {
					b.Fatal(err)
				}
				w.Acc.Count++
				w.Acc.Sum += d.V
			}
			// The stream's clock is the newest message's: a window closes
			// once a later one has data.
			now := res.Messages[batch-1].CreatedAt.UnixMilli()
			req := store.CycleRequest{QueryID: qid, PartitionID: pid, Group: "streams.per-minute", ReleaseLease: true}
			for key, w := range windows {
				value, _ := json.Marshal(w)
				if w.WindowEnd <= now {
					req.StateOps = append(req.StateOps, store.StateOp{Type: store.StateDelete, Key: key})
					req.Push = append(req.Push, store.PushItem{Queue: "per-minute.out", Partition: "dev-1", Payload: value})
				} else {
					req.StateOps = append(req.StateOps, store.StateOp{Type: store.StateUpsert, Key: key, Value: value})
				}
			}
			last := res.Messages[batch-1]
			req.Ack = &store.CycleAck{TxnID: last.TxnID, LeaseID: last.LeaseID, Count: batch}
			out, err := st.Cycle(ctx, req)
			if err != nil || out.Error != "" {
				b.Fatalf("cycle %d: %v %s", i, err, out.Error)
			}
			emitted += len(req.Push)
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msg/s")
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
		if b.N*batch > 6000 && emitted == 0 {
			b.Fatal("no window closed")
		}
	})
}
