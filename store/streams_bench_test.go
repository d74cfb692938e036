package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// BenchmarkStreamTumblingSum consumes the same prefilled messages twice,
// interleaved so both see the same machine load: a plain consumer group
// pops 100 and acks the 100 (the baseline), and a streaming query's group
// runs a one-minute tumbling sum's step on the same 100 (pop, whole-shard
// state read, fold, one cycle committing the state ops, the closed
// windows' emits and the ack). It reports both rates and their ratio;
// cycles/s is the cycle's msg/s over 100.
func BenchmarkStreamTumblingSum(b *testing.B) {
	const batch = 100
	clk := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	st := combtest.MustOpenStore(b, combtest.Options{Clock: clk})
	ctx := context.Background()
	n := b.N*batch + batch
	items := make([]combtype.PushItem, 0, 1000)
	for i := range n {
		items = append(items, combtype.PushItem{Queue: "readings", Partition: "dev-1", Payload: []byte(fmt.Sprintf(`{"v":%d}`, i%100))})
		if len(items) == cap(items) || i == n-1 {
			if _, err := st.Push(ctx, "", items); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
			clk.Advance(10 * time.Second) // six pushes per window
		}
	}
	reg, err := st.RegisterStreamQuery(ctx, "", combtype.StreamRegisterRequest{Name: "per-minute", SourceQueue: "readings",
		SinkQueue: "per-minute.out", ConfigHash: "h"})
	if err != nil {
		b.Fatal(err)
	}
	qid := reg.Query.ID

	popAck := func() {
		res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "readings", Group: "plain", Batch: batch})
		if err != nil || len(res.Messages) != batch {
			b.Fatalf("pop: %d messages, %v", len(res.Messages), err)
		}
		acks := make([]combtype.AckItem, len(res.Messages))
		for j, m := range res.Messages {
			acks[j] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}
		}
		if _, err := st.Ack(ctx, "", "plain", acks); err != nil {
			b.Fatal(err)
		}
	}

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
	step := func() {
		res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "readings", Group: "streams.per-minute", Batch: batch})
		if err != nil || len(res.Messages) != batch {
			b.Fatalf("pop: %d messages, %v", len(res.Messages), err)
		}
		pid := res.Messages[0].PartitionID
		rows, err := st.StreamState(ctx, "", qid, pid, combtype.StateFilter{})
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
		// The stream's clock is the newest message's: a window closes once
		// a later one has data.
		last := res.Messages[batch-1]
		now := last.CreatedAt.UnixMilli()
		req := combtype.CycleRequest{QueryID: qid, PartitionID: pid, Group: "streams.per-minute", ReleaseLease: true,
			Ack: &combtype.CycleAck{TxnID: last.TxnID, LeaseID: last.LeaseID, Count: batch}}
		for key, w := range windows {
			value, _ := json.Marshal(w)
			if w.WindowEnd <= now {
				req.StateOps = append(req.StateOps, combtype.StateOp{Type: combtype.StateDelete, Key: key})
				req.Push = append(req.Push, combtype.PushItem{Queue: "per-minute.out", Partition: "dev-1", Payload: value})
			} else {
				req.StateOps = append(req.StateOps, combtype.StateOp{Type: combtype.StateUpsert, Key: key, Value: value})
			}
		}
		out, err := st.Cycle(ctx, "", req)
		if err != nil || out.Err != nil {
			b.Fatalf("cycle: %v %v", err, out.Err)
		}
		emitted += len(req.Push)
	}

	var plain, streamed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		popAck()
		t1 := time.Now()
		step()
		plain, streamed = plain+t1.Sub(t0), streamed+time.Since(t1)
	}
	msgs := float64(b.N * batch)
	b.ReportMetric(msgs/plain.Seconds(), "popack-msg/s")
	b.ReportMetric(msgs/streamed.Seconds(), "cycle-msg/s")
	b.ReportMetric(float64(b.N)/streamed.Seconds(), "cycles/s")
	b.ReportMetric(plain.Seconds()/streamed.Seconds(), "cycle/popack")
	if n > 6000 && emitted == 0 {
		b.Fatal("no window closed")
	}
}
