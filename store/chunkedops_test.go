package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// groupDeleteScene is queue q of 300 partitions (before-0 ... before-299)
// where group g consumed 150 and group h 100, and a one-partition queue
// r that g consumed; chunk is the partitions one op of a seek or a group
// delete takes (0: the default, larger than q).
func groupDeleteScene(t *testing.T, chunk int) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.seekChunk = chunk
	seekQueue(t, s, "before", 300)
	if _, err := s.Push(context.Background(), "", []combtype.PushItem{{Queue: "r", TxnID: "r-0", Payload: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	for group, n := range map[string]int{"g": 150, "h": 100} {
		res, err := s.Pop(context.Background(), "", combtype.PopRequest{Queue: "q", Group: group, Batch: n, Partitions: n, AutoAck: true})
		if err != nil || len(res.Messages) != n {
			t.Fatalf("pop of %s = %+v, %v", group, res, err)
		}
	}
	if res, err := s.Pop(context.Background(), "", combtype.PopRequest{Queue: "r", Group: "g", Batch: 1, AutoAck: true}); err != nil ||
		len(res.Messages) != 1 {
		t.Fatalf("pop of r = %+v, %v", res, err)
	}
	return s, path
}

// onlyBefore keeps the transactionIds pushed before the delete.
func onlyBefore(txns []string) []string {
	return slices.DeleteFunc(slices.Clone(txns), func(s string) bool { return !strings.HasPrefix(s, "before-") })
}

// A group delete on a queue larger than one op's share removes the
// group's positions in several ops, with the meaning of one: while it
// runs the group is handed nothing from the queue, then it starts afresh
// exactly as after a delete in one op, other groups untouched.
func TestAGroupDeleteOfALargeQueueIsMadeInChunks(t *testing.T) {
	ctx := context.Background()
	for _, meta := range []bool{false, true} {
		t.Run(fmt.Sprintf("deleteMetadata=%v", meta), func(t *testing.T) {
			one, _ := groupDeleteScene(t, 0)
			nOne, err := one.DeleteGroup(ctx, "", "g", "q", meta)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := groupDeleteScene(t, 70)
			ops := 1
			s.seekChunkDone = func() {
				if ops++; ops == 5 {
					return // the last op: done
				}
				res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, Partitions: 10})
				if err != nil || (res != nil && len(res.Messages) > 0) {
					t.Errorf("pop during the delete (after op %d): %d messages, %v", ops, len(res.Messages), err)
				}
			}
			n, err := s.DeleteGroup(ctx, "", "g", "q", meta)
			if err != nil {
				t.Fatal(err)
			}
			s.seekChunkDone = nil
			if ops != 5 {
				t.Fatalf("the delete took %d ops, want 5 of at most 70 partitions", ops)
			}
			if n != nOne || n < 150 {
				t.Fatalf("removed %d positions in chunks, %d in one op", n, nOne)
			}
			var rows int
			if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM settings WHERE key LIKE 'group-delete/%'`).Scan(&rows); err != nil || rows != 0 {
				t.Fatalf("%d group deletes left in settings, %v", rows, err)
			}
			for _, g := range []string{"g", "h"} {
				if got, want := drain(t, s, g), drain(t, one, g); !slices.Equal(got, want) {
					t.Fatalf("%s after the delete in chunks got %d, after one op %d: %v", g, len(got), len(want), got)
				}
			}
			if res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "r", Group: "g", Batch: 1}); err != nil || len(res.Messages) != 0 {
				t.Fatalf("g on r, which the delete did not name, = %+v, %v", res, err)
			}
		})
	}
}

// A delete of the group on every queue takes the large ones in chunks
// and the rest in one op, and counts each position once.
func TestAGroupDeleteOfEveryQueueCountsALargeQueueOnce(t *testing.T) {
	ctx := context.Background()
	one, _ := groupDeleteScene(t, 0)
	nOne, err := one.DeleteGroup(ctx, "", "g", "", false)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := groupDeleteScene(t, 70)
	n, err := s.DeleteGroup(ctx, "", "g", "", false)
	if err != nil || n != nOne {
		t.Fatalf("removed %d, %v; in one op %d", n, err, nOne)
	}
	for _, db := range []*Store{s, one} {
		res, err := db.Pop(ctx, "", combtype.PopRequest{Queue: "r", Group: "g", Batch: 1})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("g on r after the delete = %+v, %v", res, err)
		}
	}
	if got, want := drain(t, s, "g"), drain(t, one, "g"); !slices.Equal(onlyBefore(got), onlyBefore(want)) || len(got) != 300 {
		t.Fatalf("g after the delete in chunks got %d, after one op %d", len(got), len(want))
	}
}

// A group delete whose store closed between two ops is finished when the
// store opens again, before it serves anything.
func TestAGroupDeleteCutShortIsFinishedAtOpen(t *testing.T) {
	ctx := context.Background()
	s, path := groupDeleteScene(t, 70)
	closeAfterAChunk(t, s)
	if _, err := s.DeleteGroup(ctx, "", "g", "q", true); err == nil {
		t.Fatal("a group delete whose store closed in the middle answered success")
	}
	var left int
	check, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	if err := check.rdb.QueryRow(`SELECT (SELECT COUNT(*) FROM settings WHERE key LIKE 'group-delete/%')
		+ (SELECT COUNT(*) FROM cursors WHERE group_name = 'g' AND partition_id IN
			(SELECT id FROM partitions WHERE queue_id = (SELECT id FROM queues WHERE name = 'q')))
		+ (SELECT COUNT(*) FROM subscriptions WHERE group_name = 'g'
			AND queue_id = (SELECT id FROM queues WHERE name = 'q'))`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("after the open: %d records, cursors or subscriptions of g on q left, %v", left, err)
	}
	if got := drain(t, check, "g"); len(got) != 300 {
		t.Fatalf("g after the delete got %d, want all 300 again", len(got))
	}
}

// capturedOf reads snapshot name's cursors by partition name.
func capturedOf(t *testing.T, s *Store, name string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	pg := combtype.Page{Limit: 1000}
	for {
		sn, info, err := s.SnapshotCursorPage(context.Background(), "", name, pg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range sn.Cursors {
			out[c.Partition] = c.Committed
		}
		if !info.More {
			return out
		}
		pg.After = info.Next
	}
}

// A snapshot of a queue larger than one op's share is captured in several
// ops, invisible and its name taken until the last, and holds what one op
// would have captured.
func TestASnapshotOfALargeQueueIsTakenInChunks(t *testing.T) {
	ctx := context.Background()
	one, _ := groupDeleteScene(t, 0)
	if _, err := one.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s", Group: "g", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	s, _ := groupDeleteScene(t, 70)
	ops := 1
	s.seekChunkDone = func() {
		if ops++; ops == 5 {
			return
		}
		if _, err := s.Snapshot(ctx, "", "s"); !errors.Is(err, combtype.ErrSnapshotNotFound) {
			t.Errorf("the snapshot after op %d = %v, want not found until it is taken", ops, err)
		}
		if l, err := s.Snapshots(ctx, "", "", ""); err != nil || len(l) != 0 {
			t.Errorf("snapshots after op %d = %+v, %v", ops, l, err)
		}
		if n, err := s.ExpireSnapshots(ctx); err != nil || n != 0 {
			t.Errorf("expired %d, %v during the capture", n, err)
		}
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: fmt.Sprintf("new-%d", ops), Payload: []byte("1")}}); err != nil {
			t.Error(err)
		}
	}
	sn, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s", Group: "g", Queue: "q"})
	s.seekChunkDone = nil
	if err != nil {
		t.Fatal(err)
	}
	if ops != 5 {
		t.Fatalf("the capture took %d ops, want 5 of at most 70 partitions", ops)
	}
	if sn.Name != "s" || len(sn.Cursors) != 300 {
		t.Fatalf("created %q with %d cursors on its first page", sn.Name, len(sn.Cursors))
	}
	if got, want := capturedOf(t, s, "s"), capturedOf(t, one, "s"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("captured in chunks:\n%v\nin one op:\n%v", got, want)
	}
	if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s", Group: "g", Queue: "q"}); !errors.Is(err, combtype.ErrSnapshotExists) {
		t.Fatalf("a second s = %v", err)
	}
}

// A snapshot whose store closed in the middle of its capture is dropped
// at the next open: its request did not succeed, and its name is free.
func TestASnapshotCutShortIsDroppedAtOpen(t *testing.T) {
	ctx := context.Background()
	s, path := groupDeleteScene(t, 70)
	closeAfterAChunk(t, s)
	if _, err := s.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s", Group: "g", Queue: "q"}); err == nil {
		t.Fatal("a snapshot whose store closed in the middle answered success")
	}
	again, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := again.ResumeDeletes(ctx); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := again.rdb.QueryRow(`SELECT (SELECT COUNT(*) FROM snapshots) + (SELECT COUNT(*) FROM snapshot_cursors)`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d snapshot rows left, %v", rows, err)
	}
	if _, err := again.CreateSnapshot(ctx, "", combtype.CreateSnapshotRequest{Name: "s", Group: "g", Queue: "q"}); err != nil {
		t.Fatalf("s after the open: %v", err)
	}
}

// A group's first pop of a large queue subscribes it in an op of its own
// and looks on a reader: its claim walked every partition inside the
// writer, seconds at a million partitions after a seek had left the group
// nothing due. The subscription means what it did.
func TestAFirstPopOfALargeQueueLooksOnAReader(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"", "new"} {
		t.Run("mode="+mode, func(t *testing.T) {
			s, _ := groupDeleteScene(t, 70)
			if mode == "" {
				// Cursors on every partition, no subscription.
				if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "x", Queue: "q", Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
					t.Fatal(err)
				}
			}
			before := s.stats.WriterWalks.Load()
			res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "x", Batch: 10, Partitions: 10, SubscriptionMode: mode})
			if err != nil || len(res.Messages) != 0 {
				t.Fatalf("first pop = %+v, %v; want nothing", res, err)
			}
			seekQueue(t, s, "after", 2)
			res, err = s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "x", Batch: 10, Partitions: 10, AutoAck: true})
			if err != nil || len(res.Messages) != 2 {
				t.Fatalf("pop after a push = %+v, %v; want the 2 pushed", res, err)
			}
			if n := s.stats.WriterWalks.Load() - before; n != 0 {
				t.Fatalf("%d walks of the queue inside the writer", n)
			}
		})
	}
}

// A delete of a group that holds nothing on a large queue writes nothing:
// as one op, it read every partition of the queue inside the writer to
// find no cursor.
func TestAGroupDeleteOfNothingOnALargeQueueWritesNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := groupDeleteScene(t, 70)
	before := s.stats.Commits.Load()
	if n, err := s.DeleteGroup(ctx, "", "nobody", "q", true); err != nil || n != 0 {
		t.Fatalf("delete = %d, %v", n, err)
	}
	if c := s.stats.Commits.Load() - before; c != 0 {
		t.Fatalf("%d commits for a group with nothing to delete", c)
	}
	if n, err := s.DeleteGroup(ctx, "", "h", "", false); err != nil || n != 300 {
		t.Fatalf("delete of h everywhere = %d, %v; want its 300 positions on q", n, err)
	}
}

// A group delete of every queue takes a group that holds more rows on
// small queues than a seek moves in one op in ops of about that many,
// whole queues each: in one op, a group on 5,000 queues of 100 partitions
// held every other write 5 s.
func TestAGroupDeleteOfManySmallQueuesIsMadeInOpsOfAChunk(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStoreAt(t)
	s.seekChunk = 70
	for i := range 6 {
		q := fmt.Sprintf("q%d", i)
		pushWide(t, s, q, q, 20)
		for _, g := range []string{"g", "h"} {
			if res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: q, Group: g, Batch: 20, Partitions: 20, AutoAck: true}); err != nil || len(res.Messages) != 20 {
				t.Fatalf("pop of %s by %s = %d messages, %v", q, g, len(res.Messages), err)
			}
		}
	}
	before := s.Stats().CommitOps.Load()
	n, err := s.DeleteGroup(ctx, "", "g", "", true)
	if err != nil || n != 120 {
		t.Fatalf("delete = %d, %v; want 120 positions", n, err)
	}
	// 21 a queue (its rows and one): three queues an op, then the op that
	// ends every delete of all queues.
	if ops := s.Stats().CommitOps.Load() - before; ops != 3 {
		t.Fatalf("deleted in %d ops, want 3", ops)
	}
	if c := countRows(t, s, `SELECT COUNT(*) FROM cursors WHERE group_name = 'g'`) +
		countRows(t, s, `SELECT COUNT(*) FROM subscriptions WHERE group_name = 'g'`); c != 0 {
		t.Fatalf("%d cursors and subscriptions of g left", c)
	}
	if c := countRows(t, s, `SELECT COUNT(*) FROM cursors WHERE group_name = 'h'`); c != 120 {
		t.Fatalf("h holds %d cursors, want its 120", c)
	}
	checkClean(t, path, "after the delete")
	// Starts afresh: everything again.
	if res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q3", Group: "g", Batch: 20, Partitions: 20}); err != nil || len(res.Messages) != 20 {
		t.Fatalf("pop of g after its delete = %d messages, %v", len(res.Messages), err)
	}
}
