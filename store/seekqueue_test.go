package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// replayedQueue opens a store whose seeks of a queue move 70 partitions
// per op, with two messages in each of 300 partitions of queue q: a-i at
// offset 0, then, a minute later (at the time it returns), b-i at offset
// 1. Group g has consumed both, and snapshot s1 holds g where it stood
// between them (committed 0 everywhere).
// closeAfterAChunk closes s once an op of a chunked write (a seek, a
// group delete, a snapshot capture) has committed, as a stop between two
// of them would.
func closeAfterAChunk(t *testing.T, s *Store) {
	t.Helper()
	s.seekChunkDone = func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}

func replayedQueue(t *testing.T, path string) (*Store, *clock.Manual, time.Time) {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	s, err := Open(context.Background(), Options{Path: path, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.seekChunk = 70
	seekQueue(t, s, "a", 300)
	if got := drain(t, s, "g"); len(got) != 300 {
		t.Fatalf("g consumed %d of the first 300", len(got))
	}
	if _, err := s.CreateSnapshot(context.Background(), "", combtype.CreateSnapshotRequest{Name: "s1", Group: "g", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	mark := clk.Now()
	seekQueue(t, s, "b", 300)
	if got := drain(t, s, "g"); len(got) != 300 {
		t.Fatalf("g consumed %d of the second 300", len(got))
	}
	return s, clk, mark
}

// A seek of a large queue to a snapshot, a time or an offset is made in
// several writer ops, as a seek to the end is, with the meaning of one op
// at its start: while it runs the group is handed nothing, and afterwards
// it gets, once each, what the target gives back (b-0 ... b-299) and what
// was pushed meanwhile, on partitions moved already and on partitions not
// moved yet. The snapshot it applies can be neither deleted nor expired
// until it ends. The result lists as many partitions as asked and counts
// them all. (Before, such a seek was one op, holding every other write and
// every partition's placement in memory for its whole length.)
func TestASeekOfALargeQueueToAnyTargetIsMadeInChunks(t *testing.T) {
	ctx := context.Background()
	for _, target := range []string{"snapshot", "time", "offset"} {
		t.Run(target, func(t *testing.T) {
			s, clk, mark := replayedQueue(t, filepath.Join(t.TempDir(), "comb.db"))
			var tg combtype.SeekTarget
			switch target {
			case "snapshot":
				tg.Snapshot = "s1"
			case "time":
				tg.Time = &mark
			case "offset":
				zero := int64(0)
				tg.Offset = &zero
			}
			want := make([]string, 300)
			for i := range want {
				want[i] = fmt.Sprintf("b-%d", i)
			}
			ops := 1
			s.seekChunkDone = func() {
				ops++
				if ops > 3 {
					return
				}
				res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 100, Partitions: 100})
				if err != nil || (res != nil && len(res.Messages) > 0) {
					t.Errorf("pop during the seek (after op %d): %+v, %v", ops, res, err)
				}
				var items []combtype.PushItem
				for _, p := range []int{0, 69, 70 * ops, 299} {
					id := fmt.Sprintf("during-%d-%d", ops, p)
					items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%03d", p), TxnID: id, Payload: []byte(`{}`)})
					want = append(want, id)
				}
				if _, err := s.Push(ctx, "", items); err != nil {
					t.Errorf("push during the seek: %v", err)
				}
				if target == "snapshot" && ops == 2 {
					if err := s.DeleteSnapshot(ctx, "", "s1"); !errors.Is(err, combtype.ErrSnapshotConflict) {
						t.Errorf("delete of the snapshot a seek is applying: %v, want ErrSnapshotConflict", err)
					}
					clk.Advance(8 * 24 * time.Hour)
					if n, err := s.ExpireSnapshots(ctx); n != 0 || err != nil {
						t.Errorf("an expiry sweep during the seek deleted %d snapshots (%v), want the one applied kept", n, err)
					}
				}
			}
			res, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Target: tg, List: 100})
			if err != nil {
				t.Fatal(err)
			}
			if ops != 5 {
				t.Fatalf("the seek took %d ops, want 5 of at most 70 partitions", ops)
			}
			if len(res.Partitions) != 100 || res.Totals.Partitions != 300 || res.Totals.Redeliver != 300 ||
				res.Totals.Moving != 300 || res.Totals.Skip != 0 {
				t.Fatalf("result: %d listed, totals %+v; want 100 listed of 300, each moved from 1 to 0", len(res.Partitions), res.Totals)
			}
			for i, ps := range res.Partitions {
				if ps.Partition != fmt.Sprintf("p%03d", i) || ps.From != 1 || ps.To != 0 {
					t.Fatalf("partition %d: %+v, want p%03d from 1 to 0", i, ps, i)
				}
			}
			slices.Sort(want)
			if got := drain(t, s, "g"); !slices.Equal(got, want) {
				t.Fatalf("after the seek, g got %d messages, want %d: %v", len(got), len(want), got)
			}
			if s.seeks.n.Load() != 0 {
				t.Fatal("the seek is still marked as moving")
			}
			if target == "snapshot" {
				if n, err := s.ExpireSnapshots(ctx); n != 1 || err != nil {
					t.Fatalf("the sweep after the seek deleted %d snapshots (%v), want the expired one", n, err)
				}
			}
		})
	}
}

// An offset outside one partition's range fails a seek of a large queue
// before anything moves, as one op would.
func TestAnOffsetOutOfRangeMovesNothingOfALargeQueue(t *testing.T) {
	ctx := context.Background()
	s, _, _ := replayedQueue(t, filepath.Join(t.TempDir(), "comb.db"))
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p299", TxnID: "c", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	two := int64(2)
	_, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Target: combtype.SeekTarget{Offset: &two}})
	if !errors.Is(err, combtype.ErrInvalid) {
		t.Fatalf("seek to offset 2, beyond 299 partitions' last: %v, want ErrInvalid", err)
	}
	var moved int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cursors WHERE group_name = 'g' AND committed != 1`).Scan(&moved); err != nil || moved != 0 {
		t.Fatalf("%d cursors moved by the refused seek (%v)", moved, err)
	}
}

// A seek to a snapshot cut short by the store closing is finished, to the
// snapshot, when the store opens again.
func TestASeekToASnapshotCutShortIsFinishedAtOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, _, _ := replayedQueue(t, path)
	closeAfterAChunk(t, s)
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Target: combtype.SeekTarget{Snapshot: "s1"}}); err == nil {
		t.Fatal("a seek whose store closed in the middle answered success")
	}
	s = reopenWithNoSeekLeft(t, path)
	if got := drain(t, s, "g"); len(got) != 300 || got[0] != "b-0" {
		t.Fatalf("after the seek was finished at open, g got %d messages (%v...), want b-0 ... b-299", len(got), got[:min(3, len(got))])
	}
}
