package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// A group that first appears through an ack (a transaction's or a
// stream cycle's, which create its cursor) is a subscription like any
// other, counted under Options.MaxGroups: acks naming new groups made
// cursors without end past the bound.
func TestAcksThatMakeGroupsCountUnderTheGroupBound(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), Clock: clock.NewManual(t0), MaxGroups: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	uuid, _, _ := pushOne(t, s, "q", "a")
	ack := func(groups ...string) error {
		var ops []combtype.TxOp
		for _, g := range groups {
			ops = append(ops, combtype.TxOp{Type: "ack", Ack: combtype.AckItem{TxnID: "a", PartitionID: uuid, Group: g}})
		}
		_, err := s.Transaction(ctx, "", ops)
		return err
	}
	if err := ack("g1", "g2"); err != nil {
		t.Fatal(err)
	}
	if err := ack("g3", "g4"); !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("a transaction making groups 3 and 4 past a bound of 3 = %v, want ErrGroupLimit", err)
	}
	if n := countRows(t, s, `SELECT COUNT(DISTINCT group_name) FROM cursors`); n != 2 {
		t.Fatalf("%d groups hold cursors after the refusal, want 2", n)
	}
	// Groups already there go on; one more fits.
	if err := ack("g1", "g2", "g3"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g5", Batch: 1}); !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("a pop making a fourth group = %v, want ErrGroupLimit", err)
	}
}
