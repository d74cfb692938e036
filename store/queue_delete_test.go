package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

func TestDeleteQueueInBatches(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	fillQueue(t, st, "keep", 2, 3, 2)
	before := rowCounts(t, st)
	fillQueue(t, st, "big", 5, 4, 30) // 150 segments, 600 keys
	// Cursors, a live lease, a subscription, a dead letter, a tombstone, a
	// trace and a snapshot on the doomed queue.
	res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "big", Group: "g", Batch: 3})
	if err != nil || len(res.Messages) != 3 {
		t.Fatalf("pop: %+v, %v", res, err)
	}
	m := res.Messages[0]
	if _, err := st.Ack(ctx, "", "g", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, Status: combtype.AckDLQ}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordTrace(ctx, "", combtype.TraceInput{PartitionID: m.PartitionID, TxnID: res.Messages[1].TxnID,
		Names: []string{"n"}, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteMessage(ctx, "", m.PartitionID, res.Messages[2].TxnID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s", Group: "g", Queue: "big"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "big", Batch: 3, AutoAck: true}); err != nil {
		t.Fatalf("pop: %v", err)
	}
	for table, n := range rowCounts(t, st) {
		if n == 0 {
			t.Fatalf("no %s row before the delete: the test would prove nothing", table)
		}
	}
	commits := st.Stats().Commits.Load()
	// Batches that do not divide anything evenly.
	existed, err := st.DeleteQueueBatched(ctx, "", "big", 7, 11)
	if err != nil || !existed {
		t.Fatalf("delete = %v, %v", existed, err)
	}
	after := rowCounts(t, st)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("rows after delete = %v, want what was there before the queue: %v", after, before)
	}
	// 600 keys at 11 per op cannot fit in fewer than 55 commits.
	if n := st.Stats().Commits.Load() - commits; n < 600/11 {
		t.Errorf("delete took %d commits; the batches were not bounded", n)
	}
	if existed, err := st.DeleteQueue(ctx, "", "big"); err != nil || existed {
		t.Errorf("second delete = %v, %v", existed, err)
	}
	if _, err := st.Queue(ctx, "", "big"); err != combtype.ErrQueueNotFound {
		t.Errorf("queue after delete: %v", err)
	}
}

func TestDeleteQueueIsTenantScoped(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	for _, tenant := range []string{"t1", "t2"} {
		if _, err := st.Push(ctx, tenant, []combtype.PushItem{{Queue: "q", TxnID: "x", Payload: []byte("1")}}); err != nil {
			t.Fatal(err)
		}
	}
	if existed, err := st.DeleteQueue(ctx, "t1", "q"); err != nil || !existed {
		t.Fatalf("delete = %v, %v", existed, err)
	}
	if _, err := st.Queue(ctx, "t2", "q"); err != nil {
		t.Fatalf("t2's queue: %v", err)
	}
	if existed, err := st.DeleteQueue(ctx, "t3", "q"); err != nil || existed {
		t.Fatalf("delete by another tenant = %v, %v", existed, err)
	}
}

// A crash between detaching a queue and emptying it leaves a detached
// queue: invisible, its name free, and emptied by the next DeleteQueue.
func TestDeleteQueueResumesAfterCrash(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	fillQueue(t, st, "a", 3, 2, 4)
	if existed, err := st.DetachQueueOnly(ctx, "", "a"); err != nil || !existed {
		t.Fatalf("detach = %v, %v", existed, err)
	}
	// The name is free at once: a push creates a new, empty queue.
	if res, err := st.Push(ctx, "", []combtype.PushItem{{Queue: "a", TxnID: "0-0-0", Payload: []byte("2")}}); err != nil ||
		res[0].Status != combtype.StatusQueued {
		t.Fatalf("push after detach = %+v, %v", res, err)
	}
	stats, err := st.ListQueueStats(ctx, "", combtype.QueueFilter{})
	if err != nil || len(stats) != 1 || stats[0].Counts.Total != 1 || stats[0].PartitionCount != 1 {
		t.Fatalf("queues after detach = %+v, %v", stats, err)
	}
	if c := rowCounts(t, st); c["segments"] != 13 {
		t.Fatalf("segments = %d, want 12 detached + 1", c["segments"])
	}
	if _, err := st.DeleteQueue(ctx, "", "unrelated"); err != nil {
		t.Fatal(err)
	}
	if c := rowCounts(t, st); c["segments"] != 1 || c["queues"] != 1 || c["partitions"] != 1 || c["txids"] != 1 {
		t.Fatalf("rows after the leftover was purged = %v", c)
	}
	res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "a", Batch: 10})
	if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Payload) != "2" {
		t.Fatalf("pop = %+v, %v", res, err)
	}
}

// BenchmarkDeleteQueue deletes a queue of 100 partitions x 1000 segments x
// 10 messages of ~220 bytes (100k segments of ~2 KB, 1M dedup keys) in one
// writer op and in bounded batches of several sizes, while another
// goroutine pushes one message at a time to another queue, and reports how
// long the delete took and the pusher's latency.
//
//	go test ./store -run XXX -bench DeleteQueue -benchtime 1x
func BenchmarkDeleteQueue(b *testing.B) {
	for _, c := range []struct {
		name       string
		segs, keys int
	}{
		{"one-op", 1 << 30, 1 << 30},
		{"batch=2000+20000", 2000, 20000},
		{"batch=250+2500", 250, 2500},
		{"default", store.DefaultDeleteSegmentBatch, store.DefaultDeleteKeyBatch},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				st, err := store.Open(context.Background(), store.Options{Path: filepath.Join(b.TempDir(), "comb.db")})
				if err != nil {
					b.Fatal(err)
				}
				fillQueuePadded(b, st, "big", 100, 10, 1000, 100)
				ctx, stop := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				var lat []time.Duration
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ctx.Err() == nil; i++ {
						t0 := time.Now()
						if _, err := st.Push(context.Background(), "", []combtype.PushItem{{Queue: "live", Payload: []byte("1")}}); err != nil {
							b.Error(err)
							return
						}
						lat = append(lat, time.Since(t0))
					}
				}()
				time.Sleep(50 * time.Millisecond) // a baseline of undisturbed pushes
				b.StartTimer()
				t0 := time.Now()
				if _, err := st.DeleteQueueBatched(context.Background(), "", "big", c.segs, c.keys); err != nil {
					b.Fatal(err)
				}
				took := time.Since(t0)
				b.StopTimer()
				stop()
				wg.Wait()
				slices.Sort(lat)
				b.ReportMetric(float64(took.Milliseconds()), "delete-ms")
				b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-push-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-push-ms")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-push-ms")
				st.Close()
			}
		})
	}
}

// queueKeys lists the dedup keys of queue's partitions, in one fixed order.
func queueKeys(t *testing.T, st *store.Store, queue string) []string {
	t.Helper()
	rows, err := st.ReadDB().Query(`SELECT t.partition_id, t.txn_key, t.offset FROM txids t
		JOIN partitions p ON p.id = t.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.name = ? ORDER BY t.partition_id, t.offset`, queue)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var part, key, off int64
		if err := rows.Scan(&part, &key, &off); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(part, ":", key, ":", off))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A purge finds a segment's dedup keys by the transactionIds it holds (or,
// for a segment that does not decode, by offset): every key of the deleted
// queue goes, including keys interleaved in the index with another
// queue's, and no key of the other queue does.
func TestDeleteQueueRemovesEveryDedupKey(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	push := func(queue string, parts, perPart, round int) {
		var items []combtype.PushItem
		for p := range parts {
			for i := range perPart {
				// Time-ordered ids (whose keys of both queues interleave)
				// and ids that are not UUIDs (whose keys are hashed).
				txn := uuid.Must(uuid.NewV7()).String()
				if round%2 == 1 {
					txn = fmt.Sprintf("%s-%d-%d-%d", queue, round, p, i)
				}
				items = append(items, combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%d", p), TxnID: txn, Payload: []byte("1")})
			}
		}
		if _, err := st.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	for r := range 40 {
		push("big", 3, 5, r)  // 120 segments, 600 keys
		push("keep", 2, 3, r) // 80 segments, 240 keys
	}
	var bigParts []int64
	rows, err := st.ReadDB().Query(`SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE q.name = 'big'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		bigParts = append(bigParts, id)
	}
	rows.Close()
	keep, big := queueKeys(t, st, "keep"), queueKeys(t, st, "big")
	if len(keep) != 240 || len(big) != 600 || len(bigParts) != 3 {
		t.Fatalf("before the delete: %d keys of keep, %d keys and %d partitions of big", len(keep), len(big), len(bigParts))
	}
	// A segment of big in the middle of a partition that does not decode:
	// its keys can only be found by offset.
	db, err := sql.Open("sqlite", "file:"+st.Path()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if res, err := db.Exec(`UPDATE segments SET checksum = checksum + 1 WHERE partition_id = ? AND base_offset = 50`,
		bigParts[1]); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("corrupted %d segments, want 1", n)
	}
	if existed, err := st.DeleteQueueBatched(ctx, "", "big", 7, 11); err != nil || !existed {
		t.Fatalf("delete = %v, %v", existed, err)
	}
	var left int
	if err := st.ReadDB().QueryRow(`SELECT COUNT(*) FROM txids WHERE partition_id IN (?, ?, ?)`,
		bigParts[0], bigParts[1], bigParts[2]).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d dedup keys of the deleted queue's partitions left", left)
	}
	if got := queueKeys(t, st, "keep"); !slices.Equal(got, keep) {
		t.Errorf("keys of the other queue changed: %d of %d left", len(got), len(keep))
	}
	if c := rowCounts(t, st); c["txids"] != len(keep) {
		t.Errorf("txids rows = %d, want the other queue's %d", c["txids"], len(keep))
	}
}

// BenchmarkDeleteWideQueue deletes a queue of many partitions, one message
// and one group's cursor in each, and reports the delete's cost per
// partition, which stays flat as the partitions grow: a step of the
// purge read every partition of the queue left and dropped their cursors,
// so a million partitions took hours.
//
//	go test ./store -run XXX -bench DeleteWideQueue -benchtime 1x
func BenchmarkDeleteWideQueue(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				ctx := context.Background()
				st, err := store.Open(ctx, store.Options{Path: filepath.Join(b.TempDir(), "comb.db")})
				if err != nil {
					b.Fatal(err)
				}
				for lo := 0; lo < n; lo += 1000 {
					items := make([]combtype.PushItem, 0, 1000)
					for i := lo; i < min(n, lo+1000); i++ {
						items = append(items, combtype.PushItem{Queue: "wide", Partition: fmt.Sprintf("p%06d", i), Payload: []byte("1")})
					}
					if _, err := st.Push(ctx, "", items); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := st.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "wide", Target: combtype.SeekTarget{ToEnd: true}, List: 1}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				if _, err := st.DeleteQueue(ctx, "", "wide"); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(time.Since(t0).Microseconds())/float64(n), "µs/partition")
				b.StopTimer()
				st.Close()
			}
		})
	}
}
