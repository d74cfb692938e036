package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

func openTestStore(tb testing.TB, c clock.Clock) *Store {
	tb.Helper()
	s, err := Open(context.Background(), Options{Path: filepath.Join(tb.TempDir(), "comb.db"), Clock: c})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return s
}

// holdWriter parks the writer inside a commit until the returned func is
// called, so that writes submitted meanwhile pile up and are fused.
func holdWriter(t testing.TB, s *Store) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	go s.submit(context.Background(), &writeOp{apply: func(w *wtx) error {
		close(entered)
		<-gate
		return nil
	}})
	<-entered
	return func() { close(gate) }
}

func waitPending(t testing.TB, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.ops) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes pending", len(s.ops), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func segmentRows(t *testing.T, s *Store) map[string][]int64 {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT p.name, s.frame_count FROM segments s JOIN partitions p ON p.id = s.partition_id ORDER BY s.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		out[name] = append(out[name], n)
	}
	return out
}

func TestGroupCommitFusesConcurrentPushesIntoOneSegmentPerPartition(t *testing.T) {
	s := openTestStore(t, nil)
	ctx := context.Background()
	release := holdWriter(t, s)
	const producers = 50
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for i := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := []string{"a", "b"}[i%2]
			_, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: part, Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)), TxnID: fmt.Sprint("tx-", i)}})
			errs <- err
		}()
	}
	waitPending(t, s, producers)
	commitsBefore := s.stats.Commits.Load()
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("push: %v", err)
		}
	}
	// The held commit, then exactly one commit for all fifty pushes.
	if got := s.stats.Commits.Load() - commitsBefore; got != 2 {
		t.Errorf("commits = %d, want 2 (the held one and one fused)", got)
	}
	segs := segmentRows(t, s)
	if len(segs["a"]) != 1 || segs["a"][0] != 25 || len(segs["b"]) != 1 || segs["b"][0] != 25 {
		t.Errorf("segments = %v, want one of 25 frames per partition", segs)
	}
}

func TestCreatedAtNeverDecreasesWhenTheClockStepsBack(t *testing.T) {
	c := clock.NewManual(time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC))
	s := openTestStore(t, c)
	ctx := context.Background()
	push := func(txn string) {
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`1`), TxnID: txn}}); err != nil {
			t.Fatal(err)
		}
	}
	push("first")
	c.Advance(-time.Hour)
	push("second")
	rows, err := s.rdb.Query(`SELECT created_at FROM segments ORDER BY base_offset`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var stamps []int64
	for rows.Next() {
		var at int64
		rows.Scan(&at)
		stamps = append(stamps, at)
	}
	if len(stamps) != 2 || stamps[1] != stamps[0] {
		t.Errorf("created_at = %v, want the second clamped to the first", stamps)
	}
}

func TestAFailingIsolatedOpDoesNotFailItsNeighbours(t *testing.T) {
	s := openTestStore(t, nil)
	ctx := context.Background()
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	var pushErr, txErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, pushErr = s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`1`), TxnID: "kept"}})
	}()
	waitPending(t, s, 1)
	go func() {
		defer wg.Done()
		_, txErr = s.Transaction(ctx, "", []combtype.TxOp{
			{Type: "push", Items: []combtype.PushItem{{Queue: "q", Payload: []byte(`2`), TxnID: "rolled-back"}}},
			{Type: "ack", Ack: combtype.AckItem{TxnID: "nope", PartitionID: "nope"}},
		})
	}()
	waitPending(t, s, 2)
	release()
	wg.Wait()
	if pushErr != nil {
		t.Fatalf("push fused with a failing transaction: %v", pushErr)
	}
	if txErr == nil {
		t.Fatal("transaction acking an unknown message succeeded")
	}
	var n int
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM txids`).Scan(&n); err != nil || n != 1 {
		t.Errorf("stored keys = %d (%v), want only the plain push", n, err)
	}
}

func TestWatchersAreDroppedWhenNobodyWaits(t *testing.T) {
	s := openTestStore(t, nil)
	ch1, release1 := s.Watch("", "q")
	ch2, release2 := s.Watch("", "q")
	if ch1 != ch2 || s.watching() != 1 {
		t.Fatalf("two waiters on one queue: %d entries, same channel %v", s.watching(), ch1 == ch2)
	}
	release1()
	release1() // releasing twice is harmless
	if s.watching() != 1 {
		t.Fatalf("entry dropped while a waiter remains")
	}
	release2()
	if s.watching() != 0 {
		t.Fatalf("%d entries left after every waiter left", s.watching())
	}

	// A change closes the channel and drops the entry; a waiter that leaves
	// afterwards must not drop the entry of the next watch.
	old, releaseOld := s.Watch("", "q")
	s.Notify("", "q")
	select {
	case <-old:
	default:
		t.Fatal("notify did not close the channel")
	}
	fresh, releaseFresh := s.Watch("", "q")
	releaseOld()
	if s.watching() != 1 {
		t.Fatalf("a stale release dropped the fresh entry")
	}
	select {
	case <-fresh:
		t.Fatal("fresh channel closed by an earlier change")
	default:
	}
	releaseFresh()
	if s.watching() != 0 {
		t.Fatalf("%d entries left", s.watching())
	}
}

func TestCreatedAtMonotoneUnderConcurrentPushesAndAJitteryClock(t *testing.T) {
	c := clock.NewManual(time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC))
	s := openTestStore(t, c)
	ctx := context.Background()
	stop := make(chan struct{})
	var jitter sync.WaitGroup
	jitter.Add(1)
	go func() {
		defer jitter.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Forward most of the time, sometimes a step back.
			if i%5 == 4 {
				c.Advance(-3 * time.Millisecond)
			} else {
				c.Advance(time.Millisecond)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for p := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: fmt.Sprint("p", p%3), Payload: []byte(`1`),
					TxnID: fmt.Sprintf("%d-%d", p, i)}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	jitter.Wait()
	var bad, segs int
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM (SELECT created_at,
		LAG(created_at) OVER (PARTITION BY partition_id ORDER BY base_offset) AS prev FROM segments)
		WHERE prev IS NOT NULL AND created_at < prev`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM segments`).Scan(&segs); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("%d of %d segments stamped earlier than the one before them", bad, segs)
	}
	if segs < 3 {
		t.Errorf("only %d segments: the test did not exercise concurrent commits", segs)
	}
}

func TestPopsTakePartitionsInTurn(t *testing.T) {
	s := openTestStore(t, nil)
	ctx := context.Background()
	for _, p := range []string{"a", "b", "c"} {
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: p, Payload: []byte(`1`)}, {Queue: "q", Partition: p, Payload: []byte(`2`)}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 6 {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Batch: 1, AutoAck: true})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("pop: %+v %v", res, err)
		}
		got = append(got, res.Messages[0].Partition)
	}
	// Each partition once before any comes again.
	for i := 0; i+2 < len(got); i += 3 {
		if seen := map[string]bool{got[i]: true, got[i+1]: true, got[i+2]: true}; len(seen) != 3 {
			t.Fatalf("partitions served %v: one was starved", got)
		}
	}
}

// TestOnlyClaimsOfASubscribedGroupCommitWithoutASync checks which writes
// may skip their sync: a pop that may subscribe its group or that consumes
// (autoAck) waits for a durable commit like a push or an ack; the pops
// after it only lease, and commit lazily.
func TestOnlyClaimsOfASubscribedGroupCommitWithoutASync(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.Real{})
	lazy := func() int64 { return s.stats.LazyCommits.Load() }
	step := func(what string, wantLazy bool, f func() error) {
		t.Helper()
		before := lazy()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := lazy() - before; got != map[bool]int64{true: 1, false: 0}[wantLazy] {
			t.Fatalf("%s: %d lazy commits, want lazy %v", what, got, wantLazy)
		}
	}
	push := func() error {
		_, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`{}`)}, {Queue: "q", Payload: []byte(`{}`)}})
		return err
	}
	var leased *combtype.PopResult
	pop := func(group string, autoAck bool) func() error {
		return func() error {
			res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: group, AutoAck: autoAck})
			if err == nil && len(res.Messages) != 1 {
				err = fmt.Errorf("popped %d messages, want 1", len(res.Messages))
			}
			leased = res
			return err
		}
	}
	ack := func() error {
		m := leased.Messages[0]
		res, err := s.Ack(ctx, "", "g", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}})
		if err == nil && !res[0].Success {
			err = fmt.Errorf("ack: %+v", res[0])
		}
		return err
	}
	step("push", false, push)
	step("a group's first pop", false, pop("g", false))
	step("ack", false, ack)
	step("its next pop", true, pop("g", false))
	step("ack", false, ack)
	step("push", false, push)
	step("an autoAck pop", false, pop("auto", true))
	step("another autoAck pop", false, pop("auto", true))
}

// Producers that push again as soon as they are answered share one commit
// per round: the writer waits, briefly, for the ones it just answered.
// Without that wait the commits split the producers in two halves, each
// paying a sync for half of them.
func TestProducersPushingInTurnShareACommit(t *testing.T) {
	s := openTestStore(t, nil)
	ctx := context.Background()
	const producers, rounds = 40, 10
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for i := range producers {
		wg.Go(func() {
			for r := range rounds {
				item := combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", i%4), Payload: []byte(`{}`), TxnID: fmt.Sprintf("t-%d-%d", i, r)}
				if _, err := s.Push(ctx, "", []combtype.PushItem{item}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	waitPending(t, s, producers)
	commits, ops := s.stats.Commits.Load(), s.stats.CommitOps.Load()
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The held op's commit, then the pushes.
	commits, ops = s.stats.Commits.Load()-commits-1, s.stats.CommitOps.Load()-ops-1
	if ops != producers*rounds {
		t.Fatalf("%d ops committed, want %d", ops, producers*rounds)
	}
	perCommit := float64(ops) / float64(commits)
	t.Logf("%d pushes in %d commits", ops, commits)
	if perCommit < 0.75*producers {
		t.Errorf("%.1f pushes a commit: want at least %.0f", perCommit, 0.75*producers)
	}
}

// The writer waits for the durable callers it answered, and for those
// already queued, up to a few commit times: the callers' way back costs
// CPU per caller, so on a busy machine it outlasts one commit.
func TestLingerWaitsSeveralCommitTimesForTheCallersItAnswered(t *testing.T) {
	batch := []*writeOp{{}, {}, {lazy: true}}
	for _, c := range []struct {
		took, budget time.Duration
	}{
		{0, 0},
		{500 * time.Microsecond, 2 * time.Millisecond},
		{time.Millisecond, 4 * time.Millisecond},
		{3 * time.Millisecond, maxLinger},
		{time.Second, maxLinger},
	} {
		var l linger
		l.expect(batch, 5, c.took)
		if l.want != 7 || l.budget != c.budget {
			t.Errorf("after a commit of %v: want %d ops within %v, expected 7 within %v", c.took, l.want, l.budget, c.budget)
		}
	}
}
