package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// TestSubscribeSeesAPartitionCreatedEarlierInTheCommit: the partition list
// subscribe reads once per commit is forgotten when a partition of the
// queue is created, so a group subscribing later in the same commit gets a
// cursor on it.
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
		if _, err := w.subscribe(q, "first", seek.Subscription{Mode: seek.ModeAll}); err != nil {
			return err
		}
		if _, err := w.partition(q, "b", true); err != nil {
			return err
		}
		_, err = w.subscribe(q, "second", seek.Subscription{Mode: seek.ModeAll})
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	for group, want := range map[string]int{"first": 1, "second": 2} {
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cursors WHERE group_name = ?`, group).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("group %s has %d cursors, want %d", group, n, want)
		}
	}
}
