package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// TestSubscribeSeesAPartitionCreatedEarlierInTheCommit: a group
// subscribing in the same commit as a partition is created, before or
// after it, has a position on it, from its start.
func TestSubscribeSeesAPartitionCreatedEarlierInTheCommit(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "a", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	err = s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		q, err := w.queue("", "q", false)
		if err != nil {
			return err
		}
		if err := w.subscribe(q, "first", seek.Subscription{Mode: seek.ModeAll}); err != nil {
			return err
		}
		if _, err := w.partition(q, "b", true); err != nil {
			return err
		}
		return w.subscribe(q, "second", seek.Subscription{Mode: seek.ModeAll})
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{"first", "second"} {
		var n, committed int
		if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*), SUM(`+committedExpr+`) FROM `+groupPositionsIn(`(SELECT id FROM queues)`, "?1"),
			group).Scan(&n, &committed); err != nil {
			t.Fatal(err)
		}
		if n != 2 || committed != -2 {
			t.Errorf("group %s has %d positions summing %d, want 2 at -1", group, n, committed)
		}
	}
}
