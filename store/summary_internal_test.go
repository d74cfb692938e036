package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// backgroundSumWait is how long a test waits for a sum the refresher
// makes. The refresher rests four times as long as its last round took,
// and under the race detector a round over a few thousand partitions
// takes seconds (a test that waits for three such sums took 19 s in the
// race run, against waits of 20 s and 30 s). The wait only tells a sum
// that never comes from a slow one.
const backgroundSumWait = 2 * time.Minute

// A store opened over a tenant larger than the live limit sums its Summary
// in the background at once, so the first read after a restart is
// answered from it instead of waiting for a sum; small tenants are not
// summed ahead.
func TestOpenSumsLargeTenantsAhead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	opts := Options{Path: path, LiveSummaryPartitions: 2}
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"big", "small"} {
		n := 3
		if tenant == "small" {
			n = 1
		}
		var items []combtype.PushItem
		for i := range n {
			items = append(items, combtype.PushItem{Queue: fmt.Sprintf("q%d", i), TxnID: "t", Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, tenant, items); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadline := time.Now().Add(backgroundSumWait)
	for {
		s.tot.mu.Lock()
		big, small := s.tot.tenants["big"], s.tot.tenants["small"]
		s.tot.mu.Unlock()
		if small != nil {
			t.Fatal("a tenant under the live limit was summed ahead")
		}
		if big != nil {
			if big.sum.Counts.Total != 3 || !big.sum.Summarized {
				t.Fatalf("summed ahead: %+v", big.sum.Overview)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the large tenant was not summed ahead")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sum, err := s.Summary(ctx, "big")
	if err != nil || !sum.Summarized || len(sum.Queues) != 3 {
		t.Fatalf("Summary after the restart: %+v, %v", sum, err)
	}
}

// A tenant that grows past the live limit while the store is open is
// summed ahead by the refresher once it stops growing, as at open, so the
// first status or
// overview read does not make that sum; once only: a tenant forgotten
// for want of reads is not summed ahead again because it keeps growing.
func TestGrowingPastTheLimitSumsAhead(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), LiveSummaryPartitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	push := func(tenant string, from, to int) {
		t.Helper()
		var items []combtype.PushItem
		for i := from; i < to; i++ {
			items = append(items, combtype.PushItem{Queue: fmt.Sprintf("q%d", i), TxnID: "t", Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, tenant, items); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(tenant string) *combtype.Summary {
		s.tot.mu.Lock()
		defer s.tot.mu.Unlock()
		if e := s.tot.tenants[tenant]; e != nil {
			return e.sum
		}
		return nil
	}
	push("big", 0, 2)
	push("small", 0, 1)
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	if kept("big") != nil || kept("small") != nil {
		t.Fatal("a tenant at the live limit was summed ahead")
	}
	push("big", 2, 3) // past the limit now
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	// Summed once it has stopped growing for a round.
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	// The refresher's own round may have taken the tenant first: wait for
	// its sum then.
	for deadline := time.Now().Add(backgroundSumWait); kept("big") == nil && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if sum := kept("big"); sum == nil || sum.Counts.Total != 3 || !sum.Summarized {
		t.Fatalf("the tenant grown past the limit was not summed ahead: %+v", sum)
	}
	if kept("small") != nil {
		t.Fatal("a small tenant was summed ahead")
	}
	// Forgotten (no read asked for it), then growing again: not summed
	// ahead a second time.
	s.tot.mu.Lock()
	delete(s.tot.tenants, "big")
	s.tot.mu.Unlock()
	push("big", 3, 4)
	for range 2 {
		if err := s.RefreshTotals(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if kept("big") != nil {
		t.Fatal("a forgotten tenant was summed ahead again for growing")
	}
	// A read has it summed by the refresher's next round.
	if sum, err := s.Summary(ctx, "big"); err != nil || sum.StatsAge != combtype.NotSummed {
		t.Fatalf("Summary: %+v, %v", sum, err)
	}
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	if sum, err := s.Summary(ctx, "big"); err != nil || sum.Counts.Total != 4 || !sum.Summarized {
		t.Fatalf("Summary: %+v, %v", sum, err)
	}
}

// The sums made at open find the large tenants without reading every
// partition: each tenant is sized by a count that stops past the live
// limit (at a million partitions, counting them all by tenant took 0.2 s
// before the first sum could begin). Timed against that count, the best
// of several runs of each, in the same test.
func TestFindingTheLargeTenantsDoesNotReadEveryPartition(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	pushPartitions(t, s, "wide", "p", 10000, 1)
	if _, err := s.Push(ctx, "small", []combtype.PushItem{{Queue: "q", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	s.liveSummary = 2
	best := func(f func() error) time.Duration {
		var b time.Duration
		for i := range 7 {
			start := time.Now()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); i == 0 || d < b {
				b = d
			}
		}
		return b
	}
	var large []string
	find := best(func() (err error) {
		large, err = s.largeTenants(ctx)
		return err
	})
	count := best(func() error { // what the sums made at open read before
		rows, err := s.r.QueryContext(ctx, `SELECT q.tenant, COUNT(*) FROM partitions p JOIN queues q ON q.id = p.queue_id
			GROUP BY q.tenant`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	})
	if !slices.Equal(large, []string{""}) {
		t.Fatalf("large tenants %q, want only the default one", large)
	}
	if find*5 > count {
		t.Errorf("finding the large tenants took %v, counting the partitions by tenant %v: want a fifth of it at most", find, count)
	}
	t.Logf("finding the large tenants %v, counting the partitions by tenant %v", find, count)
}

// A tenant is large by its group positions too, not its partitions alone:
// one partition read by 100,000 groups made every status read sum each
// cursor's lag (0.7 s a read). Its subscriptions, or its cursor rows (a
// group with rows and no subscription, as an older comb's seek left it),
// past Options.LiveGroupPositions make it large.
func TestATenantOfFewPartitionsAndManyGroupsIsLarge(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), LiveGroupPositions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for tenant, groups := range map[string]int{"few": 3, "many": 4, "rows": 4} {
		if _, err := s.Push(ctx, tenant, []combtype.PushItem{{Queue: "q", Payload: []byte(`1`)}}); err != nil {
			t.Fatal(err)
		}
		for g := range groups {
			if _, err := s.Pop(ctx, tenant, combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g%d", g), Batch: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeSQL(t, s, `DELETE FROM subscriptions WHERE queue_id = (SELECT id FROM queues WHERE tenant = 'rows')`)
	for tenant, want := range map[string]bool{"few": false, "many": true, "rows": true} {
		if got, err := s.largeTenant(ctx, tenant); err != nil || got != want {
			t.Errorf("tenant %s large: %v, %v; want %v", tenant, got, err, want)
		}
	}
}
