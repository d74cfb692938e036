package store_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"modernc.org/sqlite"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// BenchmarkPushOneCPU is bench/'s push batch 1 below HTTP (50 producers,
// one message each per call, 10 partitions), with each of this round's
// savings on the writer's path turned off and on, in the same run:
//
//   - old: the free space measured (statfs) before every commit, and the
//     dedup rows written through a JSON array;
//   - disk: the free space measured once per 100 ms;
//   - values: that, and a few dedup rows written as bound values;
//   - rows: that, and the partitions' rows advanced in one statement;
//   - fsync: that, committed with fsync(2), as before fdatasync(2);
//   - new: all of them.
//
// Compare msg/cpu-s (the whole process: the producers' own work included).
func BenchmarkPushOneCPU(b *testing.B) {
	for _, v := range []struct {
		name          string
		everyCommit   bool
		dedupJSONRows bool
		rowsEach      bool
		fsync         bool
	}{
		{"old", true, true, true, true},
		{"disk", false, true, true, true},
		{"values", false, false, true, true},
		{"fsync", false, false, false, true},
		{"new", false, false, false, false},
	} {
		b.Run(v.name, func(b *testing.B) {
			st := combtest.MustOpenStore(b, combtest.Options{})
			if v.everyCommit {
				st.MeasureDiskEveryCommit()
			}
			st.SetDedupJSON(v.dedupJSONRows)
			st.SetPartitionRowsEach(v.rowsEach)
			if v.fsync {
				// Process-wide: the store just opened turned fdatasync on.
				if _, err := sqlite.Fdatasync(false); err != nil {
					b.Fatal(err)
				}
				defer sqlite.Fdatasync(true) //nolint:errcheck // restores what Open set
			}
			benchPushOne(b, st)
		})
	}
}

func benchPushOne(b *testing.B, st *store.Store) {
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(max(1, 50/runtimeProcs()))
	b.ResetTimer()
	cpu := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := int(seq.Add(1))
			items := []combtype.PushItem{{Queue: "orders", Partition: "p" + strconv.Itoa(n%10),
				Payload: orderPayload(n), TxnID: uuid.Must(uuid.NewV7()).String()}}
			if _, err := st.Push(ctx, "", items); err != nil {
				b.Error(err)
				return
			}
		}
	})
	msgs := float64(b.N)
	reportCPU(b, processCPU()-cpu, msgs)
	b.ReportMetric(msgs/b.Elapsed().Seconds(), "msg/s")
	commits := float64(max(1, st.Stats().Commits.Load()))
	b.ReportMetric(float64(st.Stats().CommitOps.Load())/commits, "ops/commit")
	b.ReportMetric(float64(st.WriterStatements())/commits, "stmts/commit")
}
