package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// deadLetterAll pushes one message per payload into queue and dead-letters
// them all through a pop and an ack, as a consumer does.
func deadLetterAll(t *testing.T, s *Store, queue string, payloads ...string) {
	t.Helper()
	ctx := context.Background()
	lossConfigure(t, s, queue, func(o *combtype.QueueOptions) { o.RetryLimit = 0 })
	lossPush(t, s, queue, "", payloads...)
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: queue, Batch: len(payloads)})
	if err != nil || len(res.Messages) != len(payloads) {
		t.Fatalf("pop of %s = %d messages, %v", queue, len(res.Messages), err)
	}
	acks := make([]combtype.AckItem, len(res.Messages))
	for i, m := range res.Messages {
		acks[i] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: combtype.AckDLQ}
	}
	if _, err := s.Ack(ctx, "", "", acks); err != nil {
		t.Fatal(err)
	}
}

// dlqSeen is what the reads of tenant ""'s dead letters count: the page
// of one queue (or all, for ""), the metrics' count; for one queue, its
// statistics' and the queue listing's counts must agree.
func dlqSeen(t *testing.T, s *Store, queue string) (listed int64, counted int64) {
	t.Helper()
	ctx := context.Background()
	_, listed, err := s.ListDLQ(ctx, "", combtype.DLQFilter{Queue: queue, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if queue != "" {
		names = []string{queue}
	}
	if counted, err = s.CountDLQ(ctx, "", names, t0.Add(-1e15), t0.Add(1e15)); err != nil {
		t.Fatal(err)
	}
	if queue != "" {
		st, err := s.QueueStats(ctx, "", queue)
		if err != nil && !errors.Is(err, combtype.ErrQueueNotFound) {
			t.Fatal(err)
		}
		if err == nil && st.Counts.DeadLetter != listed {
			t.Fatalf("%s's statistics count %d dead letters, its DLQ lists %d", queue, st.Counts.DeadLetter, listed)
		}
		sums, err := s.queueSummaries(ctx, "", combtype.QueueFilter{}, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, qs := range sums {
			if qs.Queue.Name == queue && qs.Counts.DeadLetter != listed {
				t.Fatalf("the queue listing counts %d dead letters of %s, its DLQ lists %d", qs.Counts.DeadLetter, queue, listed)
			}
		}
	}
	return listed, counted
}

// A queue delete leaves its dead letters to the purge, hidden: deleting a
// million of them in the delete's first write held every push for 2.8 s.
// A queue recreated under the name sees only its own, before, during and
// after the purge, which deletes a bounded batch a write.
func TestADeletedQueuesDeadLettersAreHiddenThenPurgedInBoundedWrites(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	deadLetterAll(t, s, "q", "a", "b", "c", "d", "e", "f", "g")
	deadLetterAll(t, s, "other", "x", "y")

	if _, err := s.detachQueue(ctx, "", "q"); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM dlq`); n != 9 {
		t.Fatalf("%d dead letters once detached, want all 9 (the detach deletes none)", n)
	}
	if l, c := dlqSeen(t, s, "q"); l != 0 || c != 0 {
		t.Fatalf("the deleted queue's dead letters seen: listed %d, counted %d", l, c)
	}
	if l, c := dlqSeen(t, s, ""); l != 2 || c != 2 {
		t.Fatalf("all dead letters: listed %d, counted %d, want other's 2", l, c)
	}
	// Neither a redrive nor a purge of the name reaches them.
	deadLetterAll(t, s, "q", "new")
	if l, c := dlqSeen(t, s, "q"); l != 1 || c != 1 {
		t.Fatalf("the recreated queue's dead letters: listed %d, counted %d, want 1", l, c)
	}
	if res, err := s.PurgeDLQ(ctx, "", combtype.PurgeRequest{Queue: "q", Limit: 100}); err != nil || res.Deleted != 1 || res.Remaining != 0 {
		t.Fatalf("purge of the recreated queue's dead letters = %+v, %v", res, err)
	}
	deadLetterAll(t, s, "q", "newer")
	checkClean(t, path, "after the detach")

	left := 7
	for ops := 1; ; ops++ {
		done := step(t, s, func(w *wtx) (bool, error) { return w.purgeDeadLetterStep(3, 1<<20) })
		if done {
			if ops != 4 {
				t.Fatalf("purged in %d writes, want 3 of at most 3 rows and one that finds none", ops)
			}
			break
		}
		left = max(left-3, 0)
		if n := countRows(t, s, `SELECT COUNT(*) FROM dlq`); n != 2+1+left {
			t.Fatalf("after write %d: %d dead letters, want other's 2, the new q's 1 and %d", ops, n, left)
		}
		if l, _ := dlqSeen(t, s, "q"); l != 1 {
			t.Fatalf("after write %d the recreated queue lists %d dead letters, want 1", ops, l)
		}
		checkClean(t, path, fmt.Sprintf("after purge write %d", ops))
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM dlq_detached`); n != 0 {
		t.Fatalf("%d dlq_detached rows after the purge", n)
	}
	page, _, err := s.ListDLQ(ctx, "", combtype.DLQFilter{Queue: "q"})
	if err != nil || len(page) != 1 || string(page[0].Payload) != "newer" {
		t.Fatalf("the recreated queue's dead letters after the purge = %+v, %v", page, err)
	}
}

// A dead letter of a queue recreated under a deleted one's name is never
// taken for one of the deleted queue's, even when the rows of the highest
// ids are gone before it is written (SQLite alone would reuse their ids,
// hide the new row and let the purge delete it).
func TestADeadLetterAfterADeleteIsNotTakenForTheDeletedQueues(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStoreAt(t)
	deadLetterAll(t, s, "q", "a", "b")
	deadLetterAll(t, s, "other", "x", "y")
	if _, err := s.detachQueue(ctx, "", "q"); err != nil {
		t.Fatal(err)
	}
	if res, err := s.PurgeDLQ(ctx, "", combtype.PurgeRequest{Queue: "other"}); err != nil || res.Deleted != 2 {
		t.Fatalf("purge of other = %+v, %v", res, err)
	}
	deadLetterAll(t, s, "q", "new")
	if l, c := dlqSeen(t, s, "q"); l != 1 || c != 1 {
		t.Fatalf("the recreated queue's dead letter before the purge: listed %d, counted %d", l, c)
	}
	if err := s.ResumeDeletes(ctx); err != nil {
		t.Fatal(err)
	}
	if l, c := dlqSeen(t, s, "q"); l != 1 || c != 1 {
		t.Fatalf("the recreated queue's dead letter after the purge: listed %d, counted %d", l, c)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM dlq`); n != 1 {
		t.Fatalf("%d dead letters after the purge, want the new one", n)
	}
}

// A DLQ purge deletes a bounded batch of rows a write, by count and by
// payload bytes, oldest failure first: one write of a purge's whole limit
// held every push for 0.9 s at 100,000 rows.
func TestADLQPurgeDeletesInBoundedWrites(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	deadLetterAll(t, s, "q", "a1", "b1", "c1", "d1", "e1", "f1", "g1")
	deadLetterAll(t, s, "other", "x")
	for _, c := range []struct {
		limit, batch, batchBytes int
		wantOps                  int64
		wantDeleted, wantLeft    int64
	}{
		{limit: 3, batch: 2, batchBytes: 1 << 20, wantOps: 2, wantDeleted: 3, wantLeft: 4},
		{limit: 3, batch: 10, batchBytes: 3, wantOps: 3, wantDeleted: 3, wantLeft: 1},
		{limit: 10, batch: 10, batchBytes: 1 << 20, wantOps: 1, wantDeleted: 1, wantLeft: 0},
	} {
		before := s.Stats().CommitOps.Load()
		res, err := s.purgeDLQ(ctx, "", combtype.PurgeRequest{Queue: "q", Limit: c.limit}, c.batch, c.batchBytes)
		if err != nil || res.Deleted != c.wantDeleted || res.Remaining != c.wantLeft {
			t.Fatalf("%+v: purge = %+v, %v", c, res, err)
		}
		if ops := s.Stats().CommitOps.Load() - before; ops != c.wantOps {
			t.Fatalf("%+v: purged in %d writes, want %d", c, ops, c.wantOps)
		}
		checkClean(t, path, fmt.Sprintf("after the purge %+v", c))
	}
	if l, _ := dlqSeen(t, s, ""); l != 1 {
		t.Fatalf("%d dead letters left, want other's one", l)
	}
}

// registerWithState registers a query named name on source and upserts
// values into its shard partition, key k<i> for value i.
func registerWithState(t *testing.T, s *Store, name, source, partition string, values ...string) string {
	t.Helper()
	ctx := context.Background()
	reg, err := s.RegisterStreamQuery(ctx, "", combtype.StreamRegisterRequest{Name: name, SourceQueue: source, ConfigHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	ops := make([]combtype.StateOp, len(values))
	for i, v := range values {
		ops[i] = combtype.StateOp{Type: combtype.StateUpsert, Key: fmt.Sprintf("k%d", i), Value: []byte(v)}
	}
	if res, err := s.Cycle(ctx, "", combtype.CycleRequest{QueryID: reg.Query.ID, PartitionID: partition, StateOps: ops}); err != nil || res.Err != nil {
		t.Fatalf("cycle of %s = %+v, %v", name, res, err)
	}
	return reg.Query.ID
}

// A queue delete takes the streams reading the queue with it: gone for
// every client in its first write, their state, which can be millions of
// rows, deleted a bounded batch a write after it.
func TestADeletedSourceQueuesStreamsArePurgedInBoundedWrites(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	lossPush(t, s, "src", "", "m")
	lossPush(t, s, "kept", "", "m")
	const p1, p2 = "0b7e5c1e-0000-4000-8000-000000000001", "0b7e5c1e-0000-4000-8000-000000000002"
	gone := registerWithState(t, s, "on-src", "src", p1, "1", "2", "3", "4")
	registerWithState(t, s, "on-src", "src", p2, "5", "6", "7")
	big := registerWithState(t, s, "on-src-big", "src", p1, `"0123456789"`, `"0123456789"`)
	kept := registerWithState(t, s, "on-kept", "kept", p1, "8")

	if _, err := s.detachQueue(ctx, "", "src"); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_state`); n != 10 {
		t.Fatalf("%d state rows once detached, want all 10 (the detach deletes none)", n)
	}
	if rows, err := s.StreamState(ctx, "", gone, p1, combtype.StateFilter{}); err != nil || len(rows) != 0 {
		t.Fatalf("state of a deleted source's query = %v, %v", rows, err)
	}
	if res, err := s.Cycle(ctx, "", combtype.CycleRequest{QueryID: gone, PartitionID: p1}); err != nil || !errors.Is(res.Err, combtype.ErrQueryNotFound) {
		t.Fatalf("cycle of a deleted source's query = %+v, %v", res, err)
	}
	again, err := s.RegisterStreamQuery(ctx, "", combtype.StreamRegisterRequest{Name: "on-src", SourceQueue: "src", ConfigHash: "h2"})
	if err != nil || !again.Fresh || again.Query.ID == gone {
		t.Fatalf("registering the name again = %+v, %v", again, err)
	}
	checkClean(t, path, "after the detach")

	// Batches of 3 rows (one key taken, and 2 of its rows) or 12 bytes
	// (one row at least): the first query's 7 rows of a byte in 4 writes,
	// the last with its key; the second's 2 values of 12 bytes in 2, the
	// last with its key; then one that finds none.
	for ops := 1; ; ops++ {
		done := step(t, s, func(w *wtx) (bool, error) { return w.purgeStreamStep(3, 12) })
		if done {
			if ops != 7 {
				t.Fatalf("purged in %d writes, want 7", ops)
			}
			break
		}
		checkClean(t, path, fmt.Sprintf("after purge write %d", ops))
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_state WHERE query_id IN (?, ?)`, gone, big); n != 0 {
		t.Fatalf("%d state rows of the deleted queries left", n)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_queries`); n != 2 {
		t.Fatalf("%d stream queries, want on-kept and the new on-src", n)
	}
	if rows, err := s.StreamState(ctx, "", kept, p1, combtype.StateFilter{}); err != nil || len(rows) != 1 {
		t.Fatalf("a query on another queue lost its state: %v, %v", rows, err)
	}
}

// A queue delete's purge deletes what names a partition besides its
// segments (its groups' cursors, its messages' traces and their names,
// its tombstones) within the same budget of rows a write: each in one
// statement, 10,000 groups on 100 partitions held every push 5 s, and a
// message's traces went with it whatever their number.
func TestAPurgeDeletesAPartitionsRowsWithinItsBudget(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	pushWide(t, s, "q", "m", 3)
	var partitions []string
	for g := range 5 {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g%d", g), Batch: 10, Partitions: 10, AutoAck: true})
		if err != nil || len(res.Messages) != 3 {
			t.Fatalf("pop of g%d = %d messages, %v", g, len(res.Messages), err)
		}
		if g == 0 {
			for _, m := range res.Messages {
				partitions = append(partitions, m.PartitionID)
				for i := range 2 {
					if _, err := s.RecordTrace(ctx, "", combtype.TraceInput{PartitionID: m.PartitionID, TxnID: m.TxnID,
						Names: []string{fmt.Sprintf("n%d", i)}, Data: []byte(`{}`)}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	rows := func() int {
		return countRows(t, s, `SELECT (SELECT COUNT(*) FROM cursors) + (SELECT COUNT(*) FROM traces) + (SELECT COUNT(*) FROM tombstones)`)
	}
	if n := rows(); n != 3*5+3*2 {
		t.Fatalf("%d cursors, traces and tombstones, want 15 cursors and 6 traces", n)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM trace_names`); n != 6 {
		t.Fatalf("%d trace names, want 6", n)
	}
	if _, err := s.detachQueue(ctx, "", "q"); err != nil {
		t.Fatal(err)
	}
	// A budget of 4 rows a step, spent on cursors and traces (a message's
	// own included, however many it has) before its dedup key.
	for ops := 1; ; ops++ {
		before := rows()
		done := step(t, s, func(w *wtx) (bool, error) { return w.purgeStep(10, 4) })
		if done {
			break
		}
		if gone := before - rows(); gone > 4 {
			t.Fatalf("write %d deleted %d cursors, traces and tombstones, past its budget of 4", ops, gone)
		}
		checkClean(t, path, fmt.Sprintf("after purge write %d", ops))
		if ops > 50 {
			t.Fatal("the purge does not end")
		}
	}
	if n := rows() + countRows(t, s, `SELECT COUNT(*) FROM trace_names`) + countRows(t, s, `SELECT COUNT(*) FROM partitions`); n != 0 {
		t.Fatalf("%d rows of the deleted queue left", n)
	}
}

// A reset deletes a query's state after its own write, a bounded batch a
// write, and the query goes on under its id with none of the old state:
// deleted in the registration's write, a million rows held every push
// 3.6 s.
func TestAResetDeletesTheOldStateInBoundedWrites(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	lossPush(t, s, "src", "", "m")
	const p1, p2 = "0b7e5c1e-0000-4000-8000-000000000001", "0b7e5c1e-0000-4000-8000-000000000002"
	id := registerWithState(t, s, "agg", "src", p1, "1", "2", "3", "4")
	registerWithState(t, s, "agg", "src", p2, "5", "6", "7")
	other := registerWithState(t, s, "other", "src", p1, "8")

	before := s.Stats().CommitOps.Load()
	reg, err := s.registerStreamQuery(ctx, "", combtype.StreamRegisterRequest{Name: "agg", SourceQueue: "src", ConfigHash: "h2", Reset: true}, 3, 1<<20)
	if err != nil || !reg.Reset || reg.Query.ID != id {
		t.Fatalf("reset = %+v, %v", reg, err)
	}
	// The registration, four writes of 3 rows (the key and 2 of its 7
	// rows, the last with the key itself), one that finds none.
	if ops := s.Stats().CommitOps.Load() - before; ops != 6 {
		t.Fatalf("reset in %d writes, want 6", ops)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM stream_state`) + countRows(t, s, `SELECT COUNT(*) FROM stream_state_detached`); n != 1 {
		t.Fatalf("%d state rows and detached keys left, want other's one row", n)
	}
	for _, p := range []string{p1, p2} {
		if rows, err := s.StreamState(ctx, "", id, p, combtype.StateFilter{}); err != nil || len(rows) != 0 {
			t.Fatalf("state of %s after the reset = %v, %v", p, rows, err)
		}
	}
	res, err := s.Cycle(ctx, "", combtype.CycleRequest{QueryID: id, PartitionID: p1,
		StateOps: []combtype.StateOp{{Type: combtype.StateUpsert, Key: "k0", Value: []byte("9")}}})
	if err != nil || res.Err != nil || res.Skipped != "" {
		t.Fatalf("cycle after the reset = %+v, %v", res, err)
	}
	if rows, err := s.StreamState(ctx, "", id, p1, combtype.StateFilter{}); err != nil || len(rows) != 1 || string(rows[0].Value) != "9" {
		t.Fatalf("state after the reset and a cycle = %+v, %v", rows, err)
	}
	if rows, err := s.StreamState(ctx, "", other, p1, combtype.StateFilter{}); err != nil || len(rows) != 1 {
		t.Fatalf("another query's state = %+v, %v", rows, err)
	}
	checkClean(t, path, "after the reset")
}

// Retention deletes the traces of the messages it evicts a bounded batch
// an op, and evicts their segment in the op that finds none left: all in
// one op, 300,000 traces of one message held the writer 1.1 s in an op
// meant to take 10 ms.
func TestRetentionDeletesAMessagesManyTracesInBoundedOps(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(ctx, Options{Path: path, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lossConfigure(t, s, "q", func(o *combtype.QueueOptions) { o.RetentionEnabled, o.RetentionSeconds = true, 60 })
	lossPush(t, s, "q", "", "m")
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 1, AutoAck: true})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("pop = %+v, %v", res, err)
	}
	m := res.Messages[0]
	if _, err := s.RecordTrace(ctx, "", combtype.TraceInput{PartitionID: m.PartitionID, TxnID: m.TxnID, Names: []string{"n"}, Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// 9,000 more, as a client recording them one by one would leave them.
	writeSQL(t, s, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9000)
		INSERT INTO traces (uuid, partition_uuid, txn_id, group_name, event_type, data, created_at)
		SELECT printf('t-%d', i), ?, ?, 'g', 'info', '{}', 1 FROM n`, m.PartitionID, m.TxnID)
	var qid, pid int64
	if err := s.rdb.QueryRow(`SELECT queue_id, id FROM partitions WHERE uuid = ?`, m.PartitionID).Scan(&qid, &pid); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	var got []EvictResult
	for range 10 {
		r, err := s.EvictAged(ctx, qid, pid, clk.Now(), EvictLimits{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
		if !r.More {
			break
		}
		if r.Segments == 0 && countRows(t, s, `SELECT COUNT(*) FROM segments WHERE partition_id = ?`, pid) != 1 {
			t.Fatal("the segment went before its traces")
		}
	}
	want := []EvictResult{{Traces: evictChunkTraces, More: true}, {Traces: evictChunkTraces, More: true},
		{Segments: 1, Frames: 1, Traces: 9001 - 2*evictChunkTraces}}
	if len(got) != len(want) {
		t.Fatalf("ops = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Segments != want[i].Segments || got[i].Frames != want[i].Frames || got[i].Traces != want[i].Traces || got[i].More != want[i].More {
			t.Fatalf("op %d = %+v, want %+v", i+1, got[i], want[i])
		}
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM traces`) + countRows(t, s, `SELECT COUNT(*) FROM trace_names`); n != 0 {
		t.Fatalf("%d traces and names left", n)
	}
	checkClean(t, path, "after retention")
}

// With no delete to finish, ResumeDeletes (run as the broker opens)
// writes nothing: each purge's empty step was a write, and a write just
// after the start takes the lock from under a sqlite3 shell beside the
// server, which has no busy timeout.
func TestResumeDeletesWritesNothingWhenNothingIsLeft(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStoreAt(t)
	deadLetterAll(t, s, "q", "a")
	before := s.Stats().CommitOps.Load()
	if err := s.ResumeDeletes(ctx); err != nil {
		t.Fatal(err)
	}
	if ops := s.Stats().CommitOps.Load() - before; ops != 0 {
		t.Fatalf("ResumeDeletes with nothing to finish made %d writes", ops)
	}
	// And with something left, it finishes it.
	if _, err := s.detachQueue(ctx, "", "q"); err != nil {
		t.Fatal(err)
	}
	if err := s.ResumeDeletes(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, `SELECT (SELECT COUNT(*) FROM dlq) + (SELECT COUNT(*) FROM dlq_detached) + (SELECT COUNT(*) FROM queues)`); n != 0 {
		t.Fatalf("%d rows of the deleted queue left", n)
	}
}
