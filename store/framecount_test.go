package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
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

// A segment row whose base_offset another program edited (bit rot, a hand
// edit) leaves the partition's segments not following each other: no
// checksum fails, and pops skipped the offsets in between with nothing
// said (comb check alone reported it). Every read of a run of segments
// now logs the break, once.
func TestSegmentsThatDoNotFollowEachOtherAreLoggedOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	var logs bytes.Buffer
	s, err := Open(ctx, Options{Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		items := []combtype.PushItem{{Queue: "q", Partition: "p", TxnID: fmt.Sprint("m", 2*i), Payload: []byte(`1`)},
			{Queue: "q", Partition: "p", TxnID: fmt.Sprint("m", 2*i+1), Payload: []byte(`2`)}}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Segments at 0, 2 and 4 of two messages each: the middle one now
	// claims 3-4, a hole at 2 and an overlap at 4.
	if _, err := db.ExecContext(ctx, `UPDATE segments SET base_offset = 3 WHERE base_offset = 2`); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"a", "b"} {
		for range 4 {
			if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: g, Batch: 2, AutoAck: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Both groups read across the hole before 3; the overlap at 4 is met
	// by no read of two segments (the claim from 4 starts in the last).
	if n := strings.Count(logs.String(), "segments do not follow each other"); n != 1 {
		t.Errorf("%d log lines of the break, want one:\n%s", n, logs.String())
	}
}
