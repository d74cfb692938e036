package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// TestLeasesExpiredBetweenReadsTheExpiredRange: the queues found holding
// a lease that expired in (after, upTo] are those a scan of every leased
// cursor finds, for windows on and around each expiry, windows that hold
// none, and windows whose end is before their start (a clock stepped
// back): and they are found through the expiry index, not by a scan.
func TestLeasesExpiredBetweenReadsTheExpiredRange(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var expiries []time.Time
	for i := range 6 {
		queue := fmt.Sprintf("q%d", i%3)
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: queue, Partition: fmt.Sprintf("p%d", i), Payload: []byte(`1`)}}); err != nil {
			t.Fatal(err)
		}
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: queue, Partition: fmt.Sprintf("p%d", i), Group: "g"})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("pop %d: %v %v", i, res, err)
		}
		q := mustQueue(t, s, queue)
		expiries = append(expiries, clk.Now().Add(q.LeaseDuration()))
		if i == 4 {
			// An acknowledged batch holds no lease: nothing to wake for.
			m := res.Messages[0]
			if _, err := s.Ack(ctx, "", "g", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: res.LeaseID}}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Duration(i+1) * 17 * time.Second)
	}
	scan := func(after, upTo time.Time) []string {
		t.Helper()
		return dumpRows(t, s, fmt.Sprintf(`SELECT DISTINCT q.tenant, q.name FROM cursors c NOT INDEXED
			JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
			WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > %d AND c.lease_expires_at <= %d
			ORDER BY q.tenant, q.name`, micros(after), micros(upTo)))
	}
	points := []time.Time{t0, t0.Add(time.Hour)}
	for _, e := range expiries {
		points = append(points, e.Add(-time.Microsecond), e, e.Add(time.Microsecond))
	}
	found := 0
	for _, after := range points {
		for _, upTo := range points {
			refs, err := s.LeasesExpiredBetween(ctx, after, upTo)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range refs {
				got = append(got, fmt.Sprint(r.Tenant, r.Queue))
			}
			want := scan(after, upTo)
			if !slices.Equal(got, want) {
				t.Errorf("(%v, %v]: found %q, a scan finds %q", after.Sub(t0), upTo.Sub(t0), got, want)
			}
			found += len(got)
		}
	}
	if found == 0 {
		t.Fatal("no window held an expired lease")
	}
	// Every queue's lease expired within the hour, q1's only lease left
	// being the one of p1 (p4's was acknowledged).
	if refs, err := s.LeasesExpiredBetween(ctx, t0, t0.Add(time.Hour)); err != nil || len(refs) != 3 {
		t.Errorf("within the hour: %v %v, want q0, q1, q2", refs, err)
	}
	plan := strings.Join(queryPlan(t, s, leasesExpiredSQL, micros(t0), micros(t0.Add(time.Hour))), "\n")
	if !strings.Contains(plan, "cursors_lease_expiry (lease_expires_at>? AND lease_expires_at<?)") {
		t.Errorf("the expired range is not read through the index:\n%s", plan)
	}
}
