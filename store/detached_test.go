package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// openTestStoreAt is openTestStore on a manual clock at t0, with the
// file's path, for Check.
func openTestStoreAt(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(context.Background(), Options{Path: path, Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func countRows(t *testing.T, s *Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.rdb.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// step runs f as one write op and returns whether it reported done: one
// step of a purge made in bounded ops.
func step(t *testing.T, s *Store, f func(w *wtx) (bool, error)) bool {
	t.Helper()
	var done bool
	if err := s.submit(context.Background(), &writeOp{apply: func(w *wtx) error {
		var err error
		done, err = f(w)
		return err
	}}); err != nil {
		t.Fatal(err)
	}
	return done
}

func checkClean(t *testing.T, path, when string) {
	t.Helper()
	rep, err := Check(context.Background(), path)
	if err != nil || len(rep.Findings) > 0 {
		t.Fatalf("check %s: %+v, %v", when, rep, err)
	}
}

// A deleted snapshot is gone for every client in one op, and its cursors,
// one a partition, are deleted a bounded batch per op: all in one op held
// the writer for seconds at a million partitions.
func TestASnapshotIsDeletedInBoundedOps(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	pushWide(t, s, "q", "w", 50)
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 100, Partitions: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s1", Group: "g", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	var pid int64
	if err := s.rdb.QueryRow(`SELECT MIN(id) FROM partitions`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.SnapshotFloor(ctx, pid); err != nil || !ok {
		t.Fatalf("floor before the delete = %v, %v", ok, err)
	}

	if err := s.detachSnapshot(ctx, "", "s1"); err != nil {
		t.Fatal(err)
	}
	// Gone for every read, its name free, its cursors all still there.
	if _, err := s.Snapshot(ctx, "", "s1"); !errors.Is(err, combtype.ErrSnapshotNotFound) {
		t.Fatalf("snapshot after its delete = %v", err)
	}
	if l, err := s.Snapshots(ctx, "", "", ""); err != nil || len(l) != 0 {
		t.Fatalf("snapshots after the delete = %+v, %v", l, err)
	}
	if _, ok, err := s.SnapshotFloor(ctx, pid); err != nil || ok {
		t.Fatalf("floor after the delete = %v, %v", ok, err)
	}
	if err := s.DeleteSnapshot(ctx, "", "s1"); !errors.Is(err, combtype.ErrSnapshotNotFound) {
		t.Fatalf("second delete = %v", err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM snapshot_cursors`); n != 50 {
		t.Fatalf("%d snapshot cursors once detached, want 50 (the detach is one small op)", n)
	}
	if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s1", Group: "g", Queue: "q"}); err != nil {
		t.Fatalf("a new s1 beside the deleted one: %v", err)
	}
	checkClean(t, path, "after the detach")

	left := 50
	for ops := 1; ; ops++ {
		done := step(t, s, func(w *wtx) (bool, error) { return w.purgeSnapshotStep(7) })
		if done {
			if ops != 9 {
				t.Fatalf("purged in %d ops, want 9 of 7 rows: 6 cursors and the snapshot's row taken, the last with the row and no other snapshot", ops)
			}
			break
		}
		left = max(left-6, 0)
		if n := countRows(t, s, `SELECT COUNT(*) FROM snapshot_cursors`); n != 50+left {
			t.Fatalf("after op %d: %d cursors, want the new s1's 50 and %d", ops, n, left)
		}
		checkClean(t, path, fmt.Sprintf("after purge op %d", ops))
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM snapshots`); n != 1 {
		t.Fatalf("%d snapshot rows, want the new s1", n)
	}
	if sn, err := s.Snapshot(ctx, "", "s1"); err != nil || len(sn.Cursors) != 50 {
		t.Fatalf("the new s1 = %+v, %v", sn, err)
	}
}

// Expiry and the replacement of an expired snapshot by a new one of its
// name delete it as DeleteSnapshot does, and what a seek under way is
// applying waits for the seek.
func TestAnExpiredSnapshotIsDetachedThenPurged(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s := openTestStore(t, clk)
	pushWide(t, s, "q", "w", 20)
	for _, name := range []string{"a", "b", "c"} {
		if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: name, Queue: "q", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Hour)
	var heldID int64
	if err := s.rdb.QueryRow(`SELECT id FROM snapshots WHERE name = 'c'`).Scan(&heldID); err != nil {
		t.Fatal(err)
	}
	held := &pendingSeek{ID: 1, Group: "x", Snapshot: heldID}
	s.seeks.set(held, true)
	// a is replaced by a new a; b and c expire, c held by the seek.
	if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "a", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ExpireSnapshots(ctx); err != nil || n != 1 {
		t.Fatalf("expired %d, %v; want b", n, err)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM snapshot_cursors WHERE snapshot_id = ?`, heldID); n != 20 {
		t.Fatalf("the held snapshot has %d cursors, want its 20 while the seek applies it", n)
	}
	s.seeks.set(held, false)
	if n, err := s.ExpireSnapshots(ctx); err != nil || n != 1 {
		t.Fatalf("expired %d, %v; want c, once its seek ended", n, err)
	}
	if n, err := s.ExpireSnapshots(ctx); err != nil || n != 0 {
		t.Fatalf("expired %d, %v; want none: a deleted snapshot is not counted again", n, err)
	}
	if got := countRows(t, s, `SELECT COUNT(*) FROM snapshot_cursors`); got != 20 {
		t.Fatalf("%d snapshot cursors left, want the new a's 20", got)
	}
	if l, err := s.Snapshots(ctx, "", "", ""); err != nil || len(l) != 1 || l[0].Name != "a" {
		t.Fatalf("snapshots = %+v, %v", l, err)
	}
}

// A queue's detach leaves its cursors, tombstones and snapshots' cursors
// for the purge, which drops them with each partition: every read answers
// the same with them left as once they are gone.
func TestWhatADetachedQueueLeavesIsSeenByNoRead(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	for _, q := range []string{"q", "r"} {
		pushWide(t, s, q, "a", 10)
		pushWide(t, s, q, "b", 10)
	}
	popped, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g1", Batch: 100, Partitions: 100})
	if err != nil || len(popped.Messages) != 20 {
		t.Fatalf("pop = %+v, %v", popped, err)
	}
	acks := make([]combtype.AckItem, 0, len(popped.Messages))
	for _, m := range popped.Messages {
		acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: popped.LeaseID})
	}
	if _, err := s.Ack(ctx, "", "g1", acks); err != nil {
		t.Fatal(err)
	}
	leased, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g2", Batch: 3, Partitions: 3})
	if err != nil || len(leased.Messages) == 0 {
		t.Fatalf("pop = %+v, %v", leased, err)
	}
	for _, g := range []string{"g1", "g2"} {
		if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "r", Group: g, Batch: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "sq", Group: "g1", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteMessage(ctx, "", popped.Messages[0].PartitionID, popped.Messages[0].TxnID); err != nil {
		t.Fatal(err)
	}

	reads := func() map[string]any {
		out := map[string]any{}
		add := func(name string, v any, err error) {
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out[name] = v
		}
		groups, err := s.Groups(ctx, "")
		add("groups", groups, err)
		for _, g := range []string{"g1", "g2"} {
			group, err := s.Group(ctx, "", g)
			add("group "+g, group, err)
		}
		lagging, err := s.LaggingPartitions(ctx, "", 0)
		add("lagging", lagging, err)
		leases, err := s.LeaseCounts(ctx, "", combtype.QueueFilter{})
		add("leases", leases, err)
		snaps, err := s.Snapshots(ctx, "", "", "")
		add("snapshots", snaps, err)
		stats, err := s.ListQueueStats(ctx, "", combtype.QueueFilter{})
		add("queues", stats, err)
		ext, err := s.ExtendLease(ctx, "", leased.LeaseID, time.Minute)
		add("extend", ext, err)
		return out
	}
	const left = `SELECT (SELECT COUNT(*) FROM cursors) + (SELECT COUNT(*) FROM tombstones)
		+ (SELECT COUNT(*) FROM snapshot_cursors) + (SELECT COUNT(*) FROM snapshots)`
	const ofR = `SELECT COUNT(*) FROM cursors WHERE partition_id IN
		(SELECT id FROM partitions WHERE queue_id = (SELECT id FROM queues WHERE name = 'r'))`
	before, onR := countRows(t, s, left), countRows(t, s, ofR)
	if onR == 0 || before < onR+20+1+3 { // q: 20 snapshot cursors, a snapshot, g2's 3 leases
		t.Fatalf("%d rows, %d cursors on r: the test made too few", before, onR)
	}
	if _, err := s.DetachQueueOnly(ctx, "", "q"); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, left); n != before {
		t.Fatalf("%d rows after the detach, want the %d there were, left for the purge", n, before)
	}
	checkClean(t, path, "after the detach")
	detached := reads()
	if err := s.ResumeDeletes(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, left); n != onR {
		t.Fatalf("%d rows left after the purge, want r's %d cursors", n, onR)
	}
	if purged := reads(); !reflect.DeepEqual(detached, purged) {
		t.Fatalf("reads with the detached queue's rows left:\n%+v\nonce purged:\n%+v", detached, purged)
	}
	if ext := detached["extend"].(combtype.LeaseExtension); ext.Err != combtype.ErrLeaseNotFound {
		t.Fatalf("extend a lease of the deleted queue = %+v", ext)
	}
	checkClean(t, path, "after the purge")
}
