package store_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// orderPayload is the ~200-byte JSON order the side-by-side benchmark in
// bench/ sends, so the store-level and HTTP-level rates compare directly.
func orderPayload(i int) []byte {
	return fmt.Appendf(nil,
		`{"orderId":"ord-%08d","customerId":"cus-%06d","items":[{"sku":"SKU-%05d","qty":%d,"price":%d.99},{"sku":"SKU-%05d","qty":1,"price":4.50}],"currency":"EUR","total":%d.49,"status":"placed","ts":1764547200%03d}`,
		i, i%99991, i%50000, 1+i%5, 10+i%90, (i*7)%50000, 15+i%90, i%1000)
}

// BenchmarkShapes measures, below HTTP, the shapes of bench/'s table: push
// batch 1 / 10 / 100 from 50 producers over 10 partitions, pop+ack of 100
// by 8 consumers of one group over 8 partitions, and a fan-out to 10 groups.
func BenchmarkShapes(b *testing.B) {
	for _, batch := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("push=%d", batch), func(b *testing.B) { benchShapePush(b, batch) })
	}
	b.Run("popack=100/consumers=8", func(b *testing.B) { benchShapePopAck(b, 8, 1) })
	b.Run("fanout=100/groups=10", func(b *testing.B) { benchShapePopAck(b, 1, 10) })
}

func benchShapePush(b *testing.B, batch int) {
	st := combtest.MustOpenStore(b, combtest.Options{})
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(max(1, 50/runtimeProcs()))
	b.ResetTimer()
	cpu := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		items := make([]combtype.PushItem, batch)
		for pb.Next() {
			for i := range items {
				n := int(seq.Add(1))
				items[i] = combtype.PushItem{Queue: "orders", Partition: "p" + strconv.Itoa(n%10),
					Payload: orderPayload(n), TxnID: uuid.Must(uuid.NewV7()).String()}
			}
			if _, err := st.Push(ctx, "", items); err != nil {
				b.Error(err)
				return
			}
		}
	})
	msgs := float64(b.N * batch)
	reportCPU(b, processCPU()-cpu, msgs)
	b.ReportMetric(msgs/b.Elapsed().Seconds(), "msg/s")
	b.ReportMetric(float64(st.Stats().CommitOps.Load())/float64(max(1, st.Stats().Commits.Load())), "ops/commit")
	b.StopTimer()
	reportBytesPerMessage(b, st, msgs)
}

// benchShapePopAck stores messages over 8 partitions, then perGroup
// consumers in each of groups groups pop 100 and ack them until every group
// has taken everything; b.N counts batches of 100 deliveries.
func benchShapePopAck(b *testing.B, perGroup, groups int) {
	st := combtest.MustOpenStore(b, combtest.Options{})
	ctx := context.Background()
	const batch, parts = 100, 8
	stored := max(1, b.N*batch/groups)
	items := make([]combtype.PushItem, 0, 1000)
	for i := range stored {
		items = append(items, combtype.PushItem{Queue: "orders", Partition: "p" + strconv.Itoa(i%parts),
			Payload: orderPayload(i), TxnID: uuid.Must(uuid.NewV7()).String()})
		if len(items) == cap(items) || i == stored-1 {
			if _, err := st.Push(ctx, "", items); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
		}
	}
	b.ResetTimer()
	cpu := processCPU()
	stats := st.Stats()
	commits0, ops0, micros0 := stats.Commits.Load(), stats.CommitOps.Load(), stats.CommitMicros.Load()
	var wg sync.WaitGroup
	for g := range groups {
		group := "g" + strconv.Itoa(g)
		var taken atomic.Int64
		for range perGroup {
			wg.Go(func() {
				for taken.Load() < int64(stored) {
					res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "orders", Group: group, Batch: batch})
					if err != nil {
						b.Error(err)
						return
					}
					if len(res.Messages) == 0 {
						continue // another consumer holds what is left
					}
					acks := make([]combtype.AckItem, len(res.Messages))
					for i, m := range res.Messages {
						acks[i] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}
					}
					if _, err := st.Ack(ctx, "", group, acks); err != nil {
						b.Error(err)
						return
					}
					taken.Add(int64(len(acks)))
				}
			})
		}
	}
	wg.Wait()
	reportCPU(b, processCPU()-cpu, float64(stored*groups))
	b.ReportMetric(float64(stored*groups)/b.Elapsed().Seconds(), "msg/s")
	// Of the pops and acks only: every caller waits for a whole commit.
	commits := float64(max(1, stats.Commits.Load()-commits0))
	b.ReportMetric(float64(stats.CommitOps.Load()-ops0)/commits, "ops/commit")
	b.ReportMetric(float64(stats.CommitMicros.Load()-micros0)/commits, "µs/commit")
}

// reportCPU reports messages per CPU second of the whole process, the rate
// to compare between runs on a loaded machine.
func reportCPU(b *testing.B, cpu time.Duration, msgs float64) {
	if cpu > 0 {
		b.ReportMetric(msgs/cpu.Seconds(), "msg/cpu-s")
	}
}
