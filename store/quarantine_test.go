package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// TestQuarantinedSegmentsAreSeenOnlyByTheirTenant: two tenants each meet a
// damaged segment of a queue of the same name; each lists and may restore
// only its own.
func TestQuarantinedSegmentsAreSeenOnlyByTheirTenant(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	for _, tenant := range []string{"", "acme"} {
		for _, p := range []string{"a", "b"} {
			if _, err := s.Push(ctx, tenant, []combtype.PushItem{{Queue: "q", Partition: "p", Payload: []byte(p)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeSQL(t, s, `UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 0`)
	for _, tenant := range []string{"", "acme"} {
		res, err := s.Pop(ctx, tenant, combtype.PopRequest{Queue: "q", Group: "g-" + tenant, Batch: 10, AutoAck: true})
		if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Payload) != "b" {
			t.Fatalf("tenant %q: pop past the damage = %+v, %v", tenant, res, err)
		}
	}
	ids := map[string]int64{}
	for _, tenant := range []string{"", "acme"} {
		segs, total, err := s.ListQuarantine(ctx, tenant, combtype.QuarantineFilter{})
		if err != nil || total != 1 || len(segs) != 1 || segs[0].Tenant != tenant ||
			len(segs[0].PassedBy) != 1 || segs[0].PassedBy[0] != "g-"+tenant {
			t.Fatalf("tenant %q: quarantine = %+v (total %d), %v", tenant, segs, total, err)
		}
		ids[tenant] = segs[0].ID
	}
	if _, err := s.RestoreQuarantined(ctx, "", ids["acme"]); !errors.Is(err, combtype.ErrQuarantineNotFound) {
		t.Fatalf("restore of another tenant's segment: %v", err)
	}
	if _, total, _ := s.ListQuarantine(ctx, "acme", combtype.QuarantineFilter{}); total != 1 {
		t.Fatalf("a refused restore removed the row: total %d", total)
	}
}

// TestARestoreWithNoGroupPastTheSegmentIsRefused: when every group that
// moved past a segment is gone, nobody is owed its messages; the restore is
// refused and the row stays.
func TestARestoreWithNoGroupPastTheSegmentIsRefused(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(t0))
	lossPush(t, s, "q", "p", "a")
	lossPush(t, s, "q", "p", "b")
	writeSQL(t, s, `UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 0`)
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true}); err != nil {
		t.Fatal(err)
	}
	writeSQL(t, s, `UPDATE quarantined_segments SET checksum = checksum - 1`) // repaired
	writeSQL(t, s, `DELETE FROM cursors`)
	if _, err := s.RestoreQuarantined(ctx, "", 1); !errors.Is(err, combtype.ErrNoGroupPast) {
		t.Fatalf("restore with no group past = %v, want ErrNoGroupPast", err)
	}
	var rows, dead int
	if err := s.rdb.QueryRow(`SELECT (SELECT COUNT(*) FROM quarantined_segments), (SELECT COUNT(*) FROM dlq)`).Scan(&rows, &dead); err != nil ||
		rows != 1 || dead != 0 {
		t.Fatalf("after a refused restore: %d quarantined, %d dead letters, %v", rows, dead, err)
	}
}

// A restore writes whole groups a bounded batch a write, and one cut
// short by a stop is finished by the same restore sent again: every group
// that passed the segment gets each of its frames in the DLQ once.
func TestARestoreOfManyGroupsWritesThemInStepsAndResumesAfterAStop(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(ctx, Options{Path: path, Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p", Payload: []byte("a")},
		{Queue: "q", Partition: "p", Payload: []byte("b")}, {Queue: "q", Partition: "p", Payload: []byte("c")}}); err != nil {
		t.Fatal(err)
	}
	lossPush(t, s, "q", "p", "d")
	writeSQL(t, s, `UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 0`)
	groups := []string{"g0", "g1", "g2", "g3", "g4"}
	for _, g := range groups {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: g, Batch: 10, AutoAck: true})
		if err != nil || !slices.Equal(payloads(res), []string{"d"}) {
			t.Fatalf("%s: pop past the damage = %v, %v", g, res, err)
		}
	}
	writeSQL(t, s, `UPDATE quarantined_segments SET checksum = checksum - 1`) // repaired
	deadLetters := func(s *Store) map[string]int {
		t.Helper()
		out := map[string]int{}
		rows, err := s.rdb.Query(`SELECT group_name, offset FROM dlq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var g string
			var off int64
			if err := rows.Scan(&g, &off); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%s@%d", g, off)]++
		}
		return out
	}

	// Two groups (six rows) a write: a stop after the first.
	closeAfterAChunk(t, s)
	if _, err := s.restoreQuarantined(ctx, "", 1, 6, 1<<20); err == nil {
		t.Fatal("a restore cut short by a stop answered success")
	}
	s, err = Open(ctx, Options{Path: path, Clock: clock.NewManual(t0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if got := deadLetters(s); len(got) != 6 || got["g0@0"] != 1 || got["g1@2"] != 1 {
		t.Fatalf("after the first write: %v; want g0 and g1, offsets 0-2", got)
	}
	if segs, total, err := s.ListQuarantine(ctx, "", combtype.QuarantineFilter{}); err != nil || total != 1 || len(segs[0].PassedBy) != 5 {
		t.Fatalf("after the stop: %+v, %d, %v; want the segment still listed", segs, total, err)
	}
	var writes int
	s.seekChunkDone = func() { writes++ }
	res, err := s.restoreQuarantined(ctx, "", 1, 6, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Groups, []string{"g2", "g3", "g4"}) || res.DeadLettered != 9 || res.Frames != 3 || writes != 1 {
		t.Fatalf("the restore sent again: %+v in %d writes and the last; want g2-g4, 9 dead letters, in two writes", res, writes)
	}
	got := deadLetters(s)
	for _, g := range groups {
		for off := range 3 {
			if n := got[fmt.Sprintf("%s@%d", g, off)]; n != 1 {
				t.Errorf("%s at %d dead-lettered %d times, want once", g, off, n)
			}
		}
	}
	if len(got) != 15 {
		t.Errorf("dead letters %v, want 15", got)
	}
	if _, total, err := s.ListQuarantine(ctx, "", combtype.QuarantineFilter{}); err != nil || total != 0 {
		t.Fatalf("after the restore: %d listed, %v; want none", total, err)
	}
	// Nothing is left to restore.
	if _, err := s.RestoreQuarantined(ctx, "", 1); !errors.Is(err, combtype.ErrQuarantineNotFound) {
		t.Fatalf("a third restore: %v, want ErrQuarantineNotFound", err)
	}
}
