package store

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

var t0 = time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC)

func lossConfigure(t *testing.T, s *Store, queue string, edit func(o *combtype.QueueOptions)) {
	t.Helper()
	o := combtype.DefaultQueueOptions()
	if edit != nil {
		edit(&o)
	}
	if _, _, err := s.Configure(context.Background(), "", combtype.ConfigureRequest{Queue: queue, Options: o}); err != nil {
		t.Fatalf("configure: %v", err)
	}
}

func lossPush(t *testing.T, s *Store, queue, partition string, payloads ...string) {
	t.Helper()
	items := make([]combtype.PushItem, len(payloads))
	for i, p := range payloads {
		items[i] = combtype.PushItem{Queue: queue, Partition: partition, Payload: []byte(p)}
	}
	if _, err := s.Push(context.Background(), "", items); err != nil {
		t.Fatalf("push: %v", err)
	}
}

func payloads(res *combtype.PopResult) []string {
	var out []string
	for _, m := range res.Messages {
		out = append(out, string(m.Payload))
	}
	return out
}

func writeSQL(t *testing.T, s *Store, q string, args ...any) {
	t.Helper()
	if err := s.submit(context.Background(), &writeOp{apply: func(w *wtx) error {
		_, err := w.tx.ExecContext(w.ctx, q, args...)
		return err
	}}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestHugeDurationOptionsSaturateInsteadOfWrapping(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s := openTestStore(t, clk)
	lossConfigure(t, s, "q", func(o *combtype.QueueOptions) {
		o.RetentionEnabled, o.RetentionSeconds, o.CompletedRetentionSeconds = true, 1e13, 1e13
		o.MaxWaitTimeSeconds, o.LeaseTime = 1e13, 1e10
	})
	lossPush(t, s, "q", "", "a", "b")
	q, err := s.Queue(ctx, "", "q")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if parts, err := s.AgedPartitions(ctx, q, clk.Now()); err != nil || len(parts) != 0 {
		t.Fatalf("aged partitions with ten-million-year retention = %v, %v", parts, err)
	}
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 1})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("pop = %+v, %v", res, err)
	}
	// A lease of 1e10 seconds is live, not born expired: the partition
	// gives nothing more until it is acked.
	if again, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 1}); err != nil || len(again.Messages) != 0 {
		t.Fatalf("second pop under a long lease = %v, %v", payloads(again), err)
	}
}

func TestAnAutoAckClaimDeliversWhenTheClientLeavesAtTheCommit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var armed atomic.Bool
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "comb.db"),
		OnCommit: func(int, time.Duration) {
			if armed.Load() {
				cancel() // the client goes away the moment the claim commits
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lossPush(t, s, "q", "", "a", "b", "c")
	armed.Store(true)
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true})
	if err != nil || len(res.Messages) != 3 {
		t.Fatalf("autoAck pop whose client left at the commit = %+v, %v; the cursor moved, so these are lost", res, err)
	}
}

func TestADamagedSegmentIsPutAsideAndThePartitionMovesOn(t *testing.T) {
	ctx := context.Background()
	for _, autoAck := range []bool{false, true} {
		s := openTestStore(t, clock.NewManual(t0))
		lossPush(t, s, "q", "p1", "a")
		lossPush(t, s, "q", "p1", "b")
		lossPush(t, s, "q", "p1", "c")
		lossPush(t, s, "q", "p2", "x")
		writeSQL(t, s, `UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 1
			AND partition_id = (SELECT id FROM partitions WHERE name = 'p1')`)
		var got []string
		for range 4 {
			res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, Partitions: 2, AutoAck: autoAck})
			if err != nil {
				t.Fatalf("autoAck=%v: pop beside a damaged segment: %v", autoAck, err)
			}
			got = append(got, payloads(res)...)
			if !autoAck && len(res.Messages) > 0 {
				items := make([]combtype.AckItem, 0, len(res.Messages))
				for _, m := range res.Messages {
					items = append(items, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Group: "g"})
				}
				if _, err := s.Ack(ctx, "", "g", items); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(got) != 3 || !contains(got, "a") || !contains(got, "c") || !contains(got, "x") {
			t.Fatalf("autoAck=%v: delivered %v, want a, c and x", autoAck, got)
		}
		var n int
		var reason string
		if err := s.rdb.QueryRow(`SELECT COUNT(*), MAX(reason) FROM quarantined_segments WHERE partition_name = 'p1'
			AND base_offset = 1 AND length(data) > 0`).Scan(&n, &reason); err != nil || n != 1 {
			t.Fatalf("autoAck=%v: quarantine rows = %d (%q), %v", autoAck, n, reason, err)
		}
		if q := s.Stats().Quarantined.Load(); q != 1 {
			t.Fatalf("autoAck=%v: quarantined counter = %d", autoAck, q)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestFramesRetentionRemovedBeforeAGroupConsumedThemAreReported(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	lossPush(t, s, "q", "", "a")
	lossPush(t, s, "q", "", "b")
	lossPush(t, s, "q", "", "c")
	// The group registers with its cursor before the first message.
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 1, AutoAck: true}); err != nil {
		t.Fatal(err)
	}
	q, _ := s.Queue(ctx, "", "q")
	parts, _ := s.Partitions(ctx, q.ID)
	if _, err := s.EvictPrefix(ctx, parts[0].ID, 2, t0, EvictLimits{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true})
	if err != nil || len(res.Messages) != 1 || res.FramesEvicted != 1 || s.Stats().FramesEvicted.Load() != 1 {
		t.Fatalf("pop after eviction = %v evicted %d (counter %d), %v", payloads(res), res.FramesEvicted,
			s.Stats().FramesEvicted.Load(), err)
	}
}

func TestARolledBackRedriveWritesNoneOfItsPushes(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	lossConfigure(t, s, "q", func(o *combtype.QueueOptions) { o.RetryLimit = 0 })
	lossPush(t, s, "q", "", "a")
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 1})
	if err != nil || len(res.Messages) != 1 {
		t.Fatal(res, err)
	}
	m := res.Messages[0]
	if _, err := s.Ack(ctx, "", "", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: combtype.AckDLQ}}); err != nil {
		t.Fatal(err)
	}
	// The step after the staged push fails.
	writeSQL(t, s, `CREATE TRIGGER fail_dlq_delete BEFORE DELETE ON dlq BEGIN SELECT RAISE(ABORT, 'disk says no'); END`)
	if _, err := s.RedriveDLQ(ctx, "", combtype.RedriveRequest{Queue: "q"}); err == nil {
		t.Fatal("redrive succeeded though deleting its rows failed")
	}
	var segs int
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM segments`).Scan(&segs); err != nil || segs != 1 {
		t.Fatalf("segments after a rolled-back redrive = %d, %v; want the original one only", segs, err)
	}
}

func TestNewPartitionsStartFromTheirFirstMessageWhenTheClockStepsBack(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s := openTestStore(t, clk)
	lossPush(t, s, "q", "a", "old")
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true, SubscriptionMode: "new"}); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(-time.Hour)) // NTP pulls a fast clock back
	lossPush(t, s, "q", "b", "first")
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true})
	if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Payload) != "first" {
		t.Fatalf("pop of a partition created after the registration = %v, %v", payloads(res), err)
	}
}

func TestAnAckNeverMovesTheCursorPastItsBatch(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	lossConfigure(t, s, "q", func(o *combtype.QueueOptions) { o.RetryLimit = 0 })
	lossPush(t, s, "q", "", "a", "b", "c", "d")
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 2})
	if err != nil || len(res.Messages) != 2 {
		t.Fatal(res, err)
	}
	// The transactionIds of c and d, which this batch did not receive.
	var far []string
	var partID int64
	if err := s.rdb.QueryRow(`SELECT id FROM partitions`).Scan(&partID); err != nil {
		t.Fatal(err)
	}
	if err := txnIDsAt(ctx, s.rdb, partID, []int64{2, 3}, nil, func(_ int64, txn string) { far = append(far, txn) }); err != nil || len(far) != 2 {
		t.Fatal(far, err)
	}
	pid := res.Messages[0].PartitionID
	for _, it := range []combtype.AckItem{
		{TxnID: far[1], PartitionID: pid, LeaseID: res.LeaseID},
		{TxnID: far[0], PartitionID: pid, Status: combtype.AckDLQ},
		{TxnID: far[1], PartitionID: pid, Status: combtype.AckFailed, LeaseID: res.LeaseID},
	} {
		out, err := s.Ack(ctx, "", "", []combtype.AckItem{it})
		if err != nil || out[0].Success || out[0].Err != combtype.ErrInvalidLease {
			t.Fatalf("ack %+v past the batch = %+v, %v", it, out, err)
		}
	}
	// A transaction ack without a leaseId is bounded by the batch too, and
	// completes what lies inside it.
	if _, err := s.Transaction(ctx, "", []combtype.TxOp{{Type: "ack", Ack: combtype.AckItem{TxnID: far[0], PartitionID: pid}}}); err == nil {
		t.Fatal("a transaction acked past the batch")
	}
	if _, err := s.Transaction(ctx, "", []combtype.TxOp{{Type: "ack", Ack: combtype.AckItem{TxnID: res.Messages[1].TxnID, PartitionID: pid}}}); err != nil {
		t.Fatalf("a transaction completing the batch: %v", err)
	}
	rest, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 10})
	if err != nil || len(rest.Messages) != 2 || string(rest.Messages[0].Payload) != "c" {
		t.Fatalf("after the batch: %v, %v", payloads(rest), err)
	}
}

func TestAHugePushIsStoredInBoundedSegments(t *testing.T) {
	s := openTestStore(t, clock.NewManual(t0))
	items := make([]combtype.PushItem, 5000)
	for i := range items {
		items[i] = combtype.PushItem{Queue: "q", Payload: []byte(`"x"`)}
	}
	big := make([]byte, MaxSegmentBytes*3/2)
	items = append(items, combtype.PushItem{Queue: "q", Payload: big}, combtype.PushItem{Queue: "q", Payload: big})
	if _, err := s.Push(context.Background(), "", items); err != nil {
		t.Fatal(err)
	}
	var segs, maxFrames, frames int
	var maxRaw int64
	if err := s.rdb.QueryRow(`SELECT COUNT(*), MAX(frame_count), SUM(frame_count), MAX(raw_size) FROM segments`).
		Scan(&segs, &maxFrames, &frames, &maxRaw); err != nil {
		t.Fatal(err)
	}
	if frames != 5002 || maxFrames > MaxSegmentFrames || maxRaw > 2*MaxSegmentBytes || segs < 6 {
		t.Fatalf("%d segments, %d frames, largest %d frames / %d bytes", segs, frames, maxFrames, maxRaw)
	}
	res, err := s.Pop(context.Background(), "", combtype.PopRequest{Queue: "q", Batch: combtype.MaxPopBatch})
	if err != nil || len(res.Messages) != 5002 {
		t.Fatalf("pop = %d messages, %v", len(res.Messages), err)
	}
}

func TestAPopIsBoundedByBytesAndDeliversAtLeastOneMessage(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	mid := make([]byte, combtype.MaxPopBytes*3/8)
	huge := make([]byte, combtype.MaxPopBytes+1)
	lossPush(t, s, "q", "", string(huge), string(mid), string(mid), string(mid))
	var sizes []int
	for range 3 {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 10, AutoAck: true})
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(res.Messages))
	}
	if sizes[0] != 1 || sizes[1] != 2 || sizes[2] != 1 {
		t.Fatalf("messages per pop = %v, want [1 2 1]", sizes)
	}
}

func TestADeadLetterPageIsBoundedByBytes(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	lossConfigure(t, s, "q", func(o *combtype.QueueOptions) { o.RetryLimit = 0 })
	big := string(make([]byte, MaxListBytes*3/8))
	lossPush(t, s, "q", "", big, big, big)
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 3})
	if err != nil || len(res.Messages) != 2 {
		t.Fatalf("pop = %d, %v", len(res.Messages), err)
	}
	for _, m := range res.Messages {
		if _, err := s.Ack(ctx, "", "", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: combtype.AckDLQ}}); err != nil {
			t.Fatal(err)
		}
	}
	res, _ = s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 3})
	m := res.Messages[0]
	if _, err := s.Ack(ctx, "", "", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: combtype.AckDLQ}}); err != nil {
		t.Fatal(err)
	}
	page, total, err := s.ListDLQ(ctx, "", combtype.DLQFilter{Queue: "q", Limit: 100})
	if err != nil || total != 3 || len(page) != 2 {
		t.Fatalf("page of %d of %d, %v; want 2 of 3", len(page), total, err)
	}
}

func TestAPartitionNoKeyOpensDoesNotHoldBackTheOthers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	key := make([]byte, 32)
	s, err := Open(ctx, Options{Path: path, EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	lossConfigure(t, s, "q", func(o *combtype.QueueOptions) { o.EncryptionEnabled = true })
	lossPush(t, s, "q", "sealed", "secret")
	lossConfigure(t, s, "q", nil)
	lossPush(t, s, "q", "clear", "plain")
	s.Close()

	s, err = Open(ctx, Options{Path: path}) // the key was forgotten
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, Partitions: 2})
	if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Payload) != "plain" {
		t.Fatalf("pop beside a partition no key opens = %+v, %v", res, err)
	}
	// The sealed partition waits, unclaimed, for the key.
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, Partition: "sealed"}); !errors.Is(err, combtype.ErrNoEncryptionKey) {
		t.Fatalf("pop of the sealed partition = %v", err)
	}
	var leased int
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM cursors c JOIN partitions p ON p.id = c.partition_id WHERE c.lease_id IS NOT NULL AND p.name = 'sealed'`).Scan(&leased); err != nil || leased != 0 {
		t.Fatalf("%d leases on the sealed partition, %v", leased, err)
	}
}
