package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// A segment whose frame_count another program edited to more than its
// bytes can hold is damage: the message listing leaves it out and sets it
// aside, as a pop does, without first walking that many offsets. Before,
// the listing walked and kept every offset the count named: 2^63 held it
// until the server ran out of memory; 2^24 here allocated 700 MB for
// one page.
func TestAFrameCountEditedPastItsBytesIsDamageNotAWalk(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{"edited", "intact"} {
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: p, TxnID: p, Payload: []byte(`"` + p + `"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE segments SET frame_count = 1 << 24
		WHERE partition_id = (SELECT id FROM partitions WHERE name = 'edited')`); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msgs, _, err := s.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 100})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("list messages: %v", err)
	}
	if len(msgs) != 1 || msgs[0].TxnID != "intact" {
		t.Errorf("listed %+v, want only the message of the intact segment", msgs)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("the listing allocated %d MB, want what a page of two segments takes", alloc>>20)
	}
	if n := s.Stats().Quarantined.Load(); n != 1 {
		t.Errorf("%d segments set aside, want the edited one", n)
	}
}
