package store

import (
	"context"
	"errors"
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
