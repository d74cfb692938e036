package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// A large tenant's Summary is never summed on a read: a read that finds
// no sum kept answers at once with the tenant's queues and no figures
// (StatsAge NotSummed), also while the first sum is under way (it waited
// for it: minutes at a million partitions), and the refresher's next
// round makes the sum.
func TestALargeTenantsFirstSumIsNotMadeOnARead(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), LiveSummaryPartitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stopRefresher(s)
	var items []combtype.PushItem
	for i := range 3 {
		items = append(items, combtype.PushItem{Queue: fmt.Sprintf("q%d", i), TxnID: "t", Payload: []byte(`1`)})
	}
	if _, err := s.Push(ctx, "big", items); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Configure(ctx, "big", combtype.ConfigureRequest{Queue: "q1", Namespace: "ns",
		Options: combtype.DefaultQueueOptions()}); err != nil {
		t.Fatal(err)
	}
	live, err := s.summarise(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	unsummed := func(when string, sum *combtype.Summary, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if sum.StatsAge != combtype.NotSummed || !sum.Summarized || sum.Counts.Total != 0 {
			t.Fatalf("%s: Overview %+v, want no figures and StatsAge NotSummed", when, sum.Overview)
		}
		if sum.Overview.Queues != 3 || sum.Namespaces != live.Namespaces || sum.Tasks != live.Tasks || len(sum.Queues) != 3 {
			t.Fatalf("%s: %+v, want the 3 queues and their namespaces and tasks as a sum counts them (%+v)",
				when, sum.Overview, live.Overview)
		}
		for i, qs := range sum.Queues {
			if qs.Name != live.Queues[i].Name {
				t.Fatalf("%s: queue %d is %s, want %s, in a sum's order", when, i, qs.Name, live.Queues[i].Name)
			}
		}
		for _, qs := range sum.Queues {
			if qs.StatsAge != combtype.NotSummed || qs.Counts.Total != 0 {
				t.Fatalf("%s: queue %s %+v, want no figures", when, qs.Name, qs)
			}
		}
	}
	// A first sum under way (at open, or the refresher's) that does not
	// end: the read does not wait for it.
	s.tot.mu.Lock()
	if s.tot.summing == nil {
		s.tot.summing = map[string]chan struct{}{}
	}
	s.tot.summing["big"] = make(chan struct{})
	s.tot.mu.Unlock()
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	sum, err := s.Summary(tctx, "big")
	cancel()
	unsummed("while a first sum is under way", sum, err)
	s.tot.mu.Lock()
	delete(s.tot.summing, "big")
	s.tot.mu.Unlock()

	// None under way and none kept: answered at once, and summed by the
	// refresher's next round.
	sum, err = s.Summary(ctx, "big")
	unsummed("before the first sum", sum, err)
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	sum, err = s.Summary(ctx, "big")
	if err != nil || !sum.Summarized || sum.StatsAge < 0 || sum.Counts.Total != 3 || sum.Partitions != 3 {
		t.Fatalf("after the refresher's round: %+v, %v", sum.Overview, err)
	}
}

// The namespace and task listings read a large queue's totals from the
// background sums, as the queue listing does: a queue not summed yet is
// counted with no partitions and no messages, at once, and the
// refresher's next round sums it. They summed it on the read.
func TestNamespaceAndTaskListingsReadTheBackgroundSums(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), LiveTotalsPartitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stopRefresher(s)
	var items []combtype.PushItem
	for i := range 3 {
		items = append(items, combtype.PushItem{Queue: "large", Partition: fmt.Sprint("p", i), Payload: []byte(`1`)})
	}
	items = append(items, combtype.PushItem{Queue: "small", Payload: []byte(`1`)})
	if _, err := s.Push(ctx, "", items); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"large", "small"} {
		if _, _, err := s.Configure(ctx, "", combtype.ConfigureRequest{Queue: q, Namespace: "ns", Task: "tk",
			Options: combtype.DefaultQueueOptions()}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, partitions, total int64) {
		t.Helper()
		for name, list := range map[string]func(context.Context, string) ([]combtype.GroupedStats, error){
			"namespaces": s.NamespaceStats, "tasks": s.TaskStats} {
			gs, err := list(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(gs) != 1 || gs[0].Queues != 2 || gs[0].Partitions != partitions || gs[0].Counts.Total != total {
				t.Fatalf("%s, %s: %+v, want 2 queues, %d partitions, %d messages", when, name, gs, partitions, total)
			}
		}
	}
	check("before the background sum", 1, 1) // the small queue alone, summed on the read
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	check("after it", 5, 4) // configuring made the large queue's default partition
}

// The refresher rests after the sums made at open as after any of its
// rounds, four times as long as they took: it summed the tenant again a
// second after, so a store opened over a large tenant held a core for
// two sums in a row (minutes each at a million partitions).
func TestTheRefresherRestsAfterTheSumsMadeAtOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	opts := Options{Path: path, LiveSummaryPartitions: 2}
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A sum long enough to tell a second's rest from four sums': the lag
	// part reads every position of a group placed by a time one by one,
	// and these are on every partition. Under the race detector (the
	// -short run) the same sum is some fifty times slower, 1.5 minutes
	// for 2000 partitions: a tenth of them still takes far longer than
	// the quarter second that tells the two rests apart.
	partitions := 2000
	if testing.Short() {
		partitions = 200
	}
	pushPartitions(t, s, "q", "p", partitions, 1)
	if err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		_, err := w.ExecContext(w.ctx, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100)
			INSERT INTO subscriptions (queue_id, group_name, mode, from_time, created_at)
			SELECT q.id, 'g' || g.n, 'timestamp', 1, 0 FROM queues q, g`)
		return err
	}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The rest the refresher chose, read rather than timed: timing a
	// second's rest against four sums' raced a loaded machine. The
	// deadline only tells a sum that never ends from a slow one.
	var took, rest time.Duration
	for deadline := time.Now().Add(10 * time.Minute); rest == 0; time.Sleep(5 * time.Millisecond) {
		s.tot.mu.Lock()
		took, rest = s.tot.primeTook, s.tot.primeRest
		s.tot.mu.Unlock()
		if rest == 0 && time.Now().After(deadline) {
			t.Fatal("the tenant was not summed at open")
		}
	}
	s.tot.mu.Lock()
	summed := s.tot.tenants[""] != nil
	s.tot.mu.Unlock()
	if !summed {
		t.Fatal("the sums made at open did not keep the tenant's Summary")
	}
	if rest < 4*took || rest < time.Second {
		t.Fatalf("the refresher rests %v after the sums made at open, which took %v: want four times as long, at least a second", rest, took)
	}
	t.Logf("sums made at open took %v, the refresher rests %v", took, rest)
}

// stopRefresher ends s's refresher and keeps it from starting again, so
// that a test's "before the background sum" is not a race with a round a
// loaded machine let run first; the test makes each round itself with
// RefreshTotals.
func stopRefresher(s *Store) {
	s.tot.mu.Lock()
	s.tot.stopped = true
	stop, done := s.tot.stop, s.tot.done
	s.tot.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}
