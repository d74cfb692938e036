package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

var payload100 = []byte(`{"i":12345,"pad":"` + strings.Repeat("x", 80) + `"}`)

// BenchmarkRawCommit is the baseline: one durable SQLite commit per message
// (WAL, synchronous=FULL), which is what a broker without group commit pays.
func BenchmarkRawCommit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raw.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE m (id INTEGER PRIMARY KEY, body BLOB)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO m (body) VALUES (?)`, payload100); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}

// BenchmarkPush pushes through the store's group commit with 50 concurrent
// producers at batch sizes 1, 10 and 100; compare msg/s with BenchmarkRawCommit.
func BenchmarkPush(b *testing.B) {
	for _, batch := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("batch=%d/producers=50", batch), func(b *testing.B) {
			st := combtest.MustOpenStore(b, combtest.Options{})
			ctx := context.Background()
			b.SetParallelism(max(1, 50/max(1, runtimeProcs())))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				items := make([]combtype.PushItem, batch)
				for pb.Next() {
					for i := range items {
						// SDKs send UUIDv7 ids: time-ordered, so keys append.
						items[i] = combtype.PushItem{Queue: "bench", Partition: "p", Payload: payload100,
							TxnID: uuid.Must(uuid.NewV7()).String()}
					}
					if _, err := st.Push(ctx, "", items); err != nil {
						b.Error(err)
						return
					}
				}
			})
			msgs := float64(b.N * batch)
			b.ReportMetric(msgs/b.Elapsed().Seconds(), "msg/s")
			b.ReportMetric(float64(st.Stats().CommitOps.Load())/float64(max(1, st.Stats().Commits.Load())), "ops/commit")
			b.StopTimer()
			reportBytesPerMessage(b, st, msgs)
		})
	}
}

// BenchmarkPopAck drains a prefilled queue with pops of 100 and batch acks.
func BenchmarkPopAck(b *testing.B) {
	st := combtest.MustOpenStore(b, combtest.Options{})
	ctx := context.Background()
	const batch = 100
	fill := func(n int) {
		items := make([]combtype.PushItem, 0, 1000)
		for i := 0; i < n; i++ {
			items = append(items, combtype.PushItem{Queue: "bench", Partition: "p", Payload: payload100})
			if len(items) == cap(items) || i == n-1 {
				if _, err := st.Push(ctx, "", items); err != nil {
					b.Fatal(err)
				}
				items = items[:0]
			}
		}
	}
	fill(b.N*batch + batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "bench", Batch: batch})
		if err != nil || len(res.Messages) != batch {
			b.Fatalf("pop %d of %d: %d messages, %v", i, b.N, len(res.Messages), err)
		}
		acks := make([]combtype.AckItem, len(res.Messages))
		for i, m := range res.Messages {
			acks[i] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}
		}
		if _, err := st.Ack(ctx, "", "", acks); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msg/s")
}

// reportBytesPerMessage reports the pages in use (WAL included, as the
// reader's snapshot sees them) divided by the messages stored.
func reportBytesPerMessage(b *testing.B, st *store.Store, msgs float64) {
	var pages, pageSize, free int64
	db := st.ReadDB()
	if err := db.QueryRow(`SELECT page_count, page_size, freelist_count FROM pragma_page_count(), pragma_page_size(), pragma_freelist_count()`).Scan(&pages, &pageSize, &free); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((pages-free)*pageSize)/msgs, "B/msg")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkPopManyPartitions pops one message at a time from a queue whose
// messages are spread over 1000 partitions.
func BenchmarkPopManyPartitions(b *testing.B) {
	st := combtest.MustOpenStore(b, combtest.Options{})
	ctx := context.Background()
	const parts = 1000
	items := make([]combtype.PushItem, 0, parts)
	for round := 0; round < max(1, b.N/parts+1); round++ {
		items = items[:0]
		for p := range parts {
			items = append(items, combtype.PushItem{Queue: "wide", Partition: fmt.Sprint("p", p), Payload: payload100})
		}
		if _, err := st.Push(ctx, "", items); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "wide", Batch: 1, AutoAck: true})
		if err != nil || len(res.Messages) != 1 {
			b.Fatalf("pop %d: %d messages, %v", i, len(res.Messages), err)
		}
	}
}
