package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// seekQueue pushes one message, txn-<i>, into each of n partitions of
// queue q (p000, p001, ...).
func seekQueue(t *testing.T, s *Store, txn string, n int) {
	t.Helper()
	pushWide(t, s, "q", txn, n)
}

// pushWide pushes one message, txn-<i>, into each of n partitions of
// queue (p000, p001, ...).
func pushWide(t *testing.T, s *Store, queue, txn string, n int) {
	t.Helper()
	items := make([]combtype.PushItem, n)
	for i := range items {
		items[i] = combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%03d", i), TxnID: fmt.Sprintf("%s-%d", txn, i),
			Payload: []byte(`{}`)}
	}
	if _, err := s.Push(context.Background(), "", items); err != nil {
		t.Fatalf("push: %v", err)
	}
}

// drain pops everything due for group, acked as it comes, and returns
// the transaction ids delivered.
func drain(t *testing.T, s *Store, group string) []string {
	t.Helper()
	var got []string
	for {
		res, err := s.Pop(context.Background(), "", combtype.PopRequest{Queue: "q", Group: group, Batch: 1000,
			Partitions: 1000, AutoAck: true})
		if err != nil {
			t.Fatal(err)
		}
		if res == nil || len(res.Messages) == 0 {
			slices.Sort(got)
			return got
		}
		for _, m := range res.Messages {
			got = append(got, m.TxnID)
		}
	}
}

// A seek to the end of a queue larger than one op's share moves the
// group's cursors in several writer ops, with the meaning of one op at
// the seek's start: while it runs, the group is handed nothing (nothing
// published before the seek, on a partition not moved yet), a lease it
// held is dropped, and the messages pushed meanwhile, on partitions moved
// already and on partitions not moved yet, are each delivered once after
// it; everything published before it is skipped.
func TestASeekToTheEndInChunksKeepsItsMeaning(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, nil)
	s.seekChunk = 70 // above maxWavePartitions: a queue of 300 takes five ops
	seekQueue(t, s, "before", 300)
	held, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 3, Partitions: 3})
	if err != nil || held == nil || len(held.Messages) != 3 {
		t.Fatalf("pop before the seek: %+v %v", held, err)
	}
	seekQueue(t, s, "before2", 300)

	var during []string
	ops := 1
	s.seekChunkDone = func() {
		ops++
		if ops > 3 {
			return
		}
		// Between two ops: the group is handed nothing, and what is
		// pushed now, where the seek has been and where it has not, is
		// for after it.
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 100, Partitions: 100})
		if err != nil || (res != nil && len(res.Messages) > 0) {
			t.Errorf("pop during the seek (after op %d): %d messages, %v", ops, len(res.Messages), err)
		}
		var items []combtype.PushItem
		for _, p := range []int{0, 69, 70 * ops, 299} {
			id := fmt.Sprintf("during-%d-%d", ops, p)
			items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%03d", p), TxnID: id, Payload: []byte(`{}`)})
			during = append(during, id)
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Errorf("push during the seek: %v", err)
		}
	}
	commits := s.stats.Commits.Load()
	res, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Target: combtype.SeekTarget{ToEnd: true}})
	if err != nil {
		t.Fatal(err)
	}
	if ops != 5 || s.stats.Commits.Load()-commits < 5 {
		t.Fatalf("the seek took %d ops in %d commits, want 5 ops of at most 70 partitions", ops,
			s.stats.Commits.Load()-commits)
	}
	if len(res.Partitions) != 300 {
		t.Fatalf("the seek answered %d partitions, want 300", len(res.Partitions))
	}
	for i, ps := range res.Partitions {
		if ps.Partition != fmt.Sprintf("p%03d", i) || ps.To != 1 {
			t.Fatalf("partition %d: %+v, want p%03d moved to offset 1, its end at the start", i, ps, i)
		}
	}
	ack, err := s.Ack(ctx, "", "g", []combtype.AckItem{{TxnID: held.Messages[0].TxnID, PartitionID: held.Messages[0].PartitionID,
		LeaseID: held.LeaseID, Group: "g", Status: combtype.AckCompleted}})
	if err != nil || len(ack) != 1 || ack[0].Err == nil {
		t.Errorf("an ack under the lease the seek dropped: %+v %v, want refused", ack, err)
	}
	slices.Sort(during)
	if got := drain(t, s, "g"); !slices.Equal(got, during) {
		t.Fatalf("after the seek, g got %v\nwant what was pushed during it, once each: %v", got, during)
	}
	if s.seeks.n.Load() != 0 {
		t.Fatal("the seek is still marked as moving")
	}
}

// A seek to the end cut short by the store closing is finished when the
// store opens again, before it serves a pop: the group is handed nothing
// published before the seek.
func TestASeekToTheEndCutShortIsFinishedAtOpen(t *testing.T) {
	ctx := context.Background()
	s, path := openSeekQueueOf300(t)
	closeAfterAChunk(t, s)
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Target: combtype.SeekTarget{ToEnd: true}}); err == nil {
		t.Fatal("a seek whose store closed in the middle answered success")
	}

	s = reopenWithNoSeekLeft(t, path)
	var moved int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cursors WHERE group_name = 'g' AND committed = 0`).Scan(&moved); err != nil || moved != 300 {
		t.Fatalf("cursors at the end: %d of 300, %v", moved, err)
	}
	seekQueue(t, s, "after", 2)
	if got := drain(t, s, "g"); fmt.Sprint(got) != "[after-0 after-1]" {
		t.Fatalf("after the reopened seek, g got %v, want only what came after it", got)
	}
}

// leaveUnfinishedSeek makes the first op of a chunked seek of g to the end
// of q and stops there, as a seek whose next op failed to commit does:
// its progress is in settings and its group is no longer held back.
func leaveUnfinishedSeek(t *testing.T, s *Store) {
	t.Helper()
	var p *pendingSeek
	err := s.submit(context.Background(), &writeOp{isolated: true, apply: func(w *wtx) error {
		var err error
		if _, p, err = beginSeek(w.ctx, w, "", &combtype.SeekRequest{Queue: "q", Group: "g", Target: combtype.SeekTarget{ToEnd: true}},
			w.s.segSeq, micros(w.now)); err != nil {
			return err
		}
		_, err = w.seekChunk(p, -1, true)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.seeks.set(p, false)
}

// A seek or a delete of the group made after a seek to the end failed in
// the middle supersedes it: the next open does not finish the old seek
// over what came after it.
func TestALaterSeekOrDeleteSupersedesAnUnfinishedSeek(t *testing.T) {
	ctx := context.Background()
	for _, later := range []string{"seek", "delete"} {
		t.Run(later, func(t *testing.T) {
			s, path := openSeekQueueOf300(t)
			leaveUnfinishedSeek(t, s)
			var err error
			switch later {
			case "seek":
				from := time.Unix(0, 0)
				_, err = s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Target: combtype.SeekTarget{Time: &from}})
			case "delete":
				_, err = s.DeleteGroup(ctx, "", "g", "q", false)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s = reopenWithNoSeekLeft(t, path)
			var cursors int
			if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cursors WHERE group_name = 'g'`).Scan(&cursors); err != nil {
				t.Fatal(err)
			}
			switch later {
			case "seek":
				if got := drain(t, s, "g"); len(got) != 300 {
					t.Fatalf("after a seek to the start, g got %d messages, want all 300", len(got))
				}
			case "delete":
				if cursors != 0 {
					t.Fatalf("the deleted group has %d cursors after open", cursors)
				}
			}
		})
	}
}

// reopenWithNoSeekLeft opens the store at path again (closed at the
// test's end) and checks that the open left no seek to the end in
// progress.
func reopenWithNoSeekLeft(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var left int
	if err := s.r.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM settings WHERE key LIKE 'seek-to-end/%'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("seeks left in progress after open: %d %v", left, err)
	}
	return s
}

// openSeekQueueOf300 opens a store in a new file whose seeks to the end
// move 70 partitions per op, with one message in each of 300 partitions
// of queue q (before-0 ... before-299).
func openSeekQueueOf300(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(context.Background(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	s.seekChunk = 70
	seekQueue(t, s, "before", 300)
	return s, path
}
