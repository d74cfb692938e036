package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// BenchmarkAck100 is one consumer of bench/'s pop+ack row below HTTP: a
// group pops 100 messages of one of 8 partitions and acks all of them in
// one call naming the lease, as Queen's clients do. It reports the CPU of
// each half per message (the whole process, the writer and its sync
// included): ack-µs/msg is the ack of 100, pop-µs/msg the pop.
func BenchmarkAck100(b *testing.B) {
	st := combtest.MustOpenStore(b, combtest.Options{})
	ctx := context.Background()
	const batch, parts = 100, 8
	items := make([]combtype.PushItem, 0, 1000)
	for i := range (b.N + 1) * batch {
		items = append(items, combtype.PushItem{Queue: "bench", Partition: "p" + strconv.Itoa(i%parts),
			Payload: orderPayload(i), TxnID: "t" + strconv.Itoa(i)})
		if len(items) == cap(items) {
			if _, err := st.Push(ctx, "", items); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
		}
	}
	if len(items) > 0 {
		if _, err := st.Push(ctx, "", items); err != nil {
			b.Fatal(err)
		}
	}
	acks := make([]combtype.AckItem, batch)
	var popCPU, ackCPU time.Duration
	var msgs int
	b.ResetTimer()
	for range b.N {
		c0 := processCPU()
		res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "bench", Group: "g", Batch: batch})
		if err != nil || len(res.Messages) == 0 {
			b.Fatalf("pop: %d messages, %v", len(res.Messages), err)
		}
		c1 := processCPU()
		acks = acks[:len(res.Messages)]
		for i, m := range res.Messages {
			acks[i] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: combtype.AckCompleted}
		}
		out, err := st.Ack(ctx, "", "g", acks)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range out {
			if !r.Success {
				b.Fatalf("ack of %s: %v", r.TxnID, r.Err)
			}
		}
		c2 := processCPU()
		popCPU, ackCPU, msgs = popCPU+c1-c0, ackCPU+c2-c1, msgs+len(res.Messages)
	}
	b.ReportMetric(float64(popCPU.Microseconds())/float64(msgs), "pop-µs/msg")
	b.ReportMetric(float64(ackCPU.Microseconds())/float64(msgs), "ack-µs/msg")
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msg/s")
}
