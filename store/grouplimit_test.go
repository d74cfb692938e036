package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// subscriptionsOf lists the groups subscribed to queue and those with a
// cursor on one of its partitions, as a listing would find them.
func subscriptionsOf(t *testing.T, s *Store, queue string) (subs, cursors []string) {
	t.Helper()
	for _, q := range []struct {
		sql string
		out *[]string
	}{
		{`SELECT s.group_name FROM subscriptions s JOIN queues q ON q.id = s.queue_id WHERE q.name = ? ORDER BY 1`, &subs},
		{`SELECT DISTINCT c.group_name FROM cursors c JOIN partitions p ON p.id = c.partition_id
			JOIN queues q ON q.id = p.queue_id WHERE q.name = ? ORDER BY 1`, &cursors},
	} {
		rows, err := s.ReadDB().Query(q.sql, queue)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var g string
			if err := rows.Scan(&g); err != nil {
				t.Fatal(err)
			}
			*q.out = append(*q.out, g)
		}
		rows.Close()
	}
	return subs, cursors
}

// A pop or a seek that would subscribe a group past Options.MaxGroups is
// refused with ErrGroupLimit and writes nothing, neither a subscription
// nor a cursor; groups already subscribed are served; a group's or a
// queue's delete makes room; and the count holds across a reopen.
func TestAGroupPastTheBoundIsRefusedAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	open := func() *Store {
		s, err := Open(ctx, Options{Path: path, Clock: clock.NewManual(t0), MaxGroups: 3})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	lossPush(t, s, "q", "p", "a", "b")
	lossPush(t, s, "q2", "p", "c")
	pop := func(queue, group string) (*combtype.PopResult, error) {
		return s.Pop(ctx, "", combtype.PopRequest{Queue: queue, Group: group, Batch: 1})
	}
	seekEnd := func(queue, group string) error {
		_, err := s.Seek(ctx, "", combtype.SeekRequest{Group: group, Queue: queue, Target: combtype.SeekTarget{ToEnd: true}})
		return err
	}
	for _, g := range []string{"g1", "g2"} {
		if _, err := pop("q", g); err != nil {
			t.Fatalf("pop %s: %v", g, err)
		}
	}
	// A seek may be a group's first act on a queue: it subscribes it.
	if err := seekEnd("q", "g3"); err != nil {
		t.Fatalf("seek g3: %v", err)
	}
	if err := seekEnd("q", "g3"); err != nil {
		t.Fatalf("seek g3 again: %v", err)
	}
	if _, err := pop("q", "g4"); !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("pop of a fourth group: %v; want ErrGroupLimit", err)
	}
	if err := seekEnd("q", "g4"); !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("seek of a fourth group: %v; want ErrGroupLimit", err)
	}
	// A group subscribed to one queue is one more on another.
	if _, err := pop("q2", "g1"); !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("pop of g1 on a second queue: %v; want ErrGroupLimit", err)
	}
	subs, cursors := subscriptionsOf(t, s, "q")
	if !slices.Equal(subs, []string{"g1", "g2", "g3"}) || slices.Contains(cursors, "g4") {
		t.Fatalf("after the refusals q has subscriptions %q and cursors of %q; want g1, g2, g3 and no g4", subs, cursors)
	}
	if subs, cursors := subscriptionsOf(t, s, "q2"); len(subs)+len(cursors) != 0 {
		t.Fatalf("after the refusal q2 has subscriptions %q and cursors of %q; want none", subs, cursors)
	}
	// Subscribed groups go on (g1 and g2 hold live leases: nothing).
	for _, g := range []string{"g1", "g2", "g3"} {
		if _, err := pop("q", g); err != nil {
			t.Fatalf("pop of %s: %v", g, err)
		}
	}

	// The count is taken again after a reopen.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer func() { s.Close() }()
	if _, err := pop("q", "g5"); !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("pop of a fourth group after a reopen: %v; want ErrGroupLimit", err)
	}
	// The refused pop rolled back, and kept the count it took: a client
	// sending such pops does not make the writer count for each.
	if c := s.groups; !c.known || c.n != 3 {
		t.Fatalf("count after a refused pop: %+v; want 3, known", c)
	}
	// A group's delete makes room at once, as does a queue's.
	if _, err := s.DeleteGroup(ctx, "", "g2", "q", true); err != nil {
		t.Fatal(err)
	}
	if _, err := pop("q", "g5"); err != nil {
		t.Fatalf("pop of g5 after g2's delete: %v", err)
	}
	if _, err := pop("q", "g6"); !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("pop of g6: %v; want ErrGroupLimit", err)
	}
	if _, err := s.DeleteQueue(ctx, "", "q"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g1", "g2", "g3"} {
		if res, err := pop("q2", g); err != nil || res == nil || !slices.Equal(payloads(res), []string{"c"}) {
			t.Fatalf("pop of %s on q2 after q's delete: %v, %v", g, res, err)
		}
	}
	if _, err := pop("q2", "g4"); !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("pop of a fourth group on q2: %v; want ErrGroupLimit", err)
	}
}

// Woken pops applied together in a wave: one of a new group past the
// bound is refused by itself, and the subscribed groups of the same wave
// are served.
func TestAWaveWithAGroupPastTheBoundServesTheOthers(t *testing.T) {
	ctx := context.Background()
	var logs lockedBuffer
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), Clock: clock.NewManual(t0), MaxGroups: 3,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lossPush(t, s, "q", "p", "a")
	for _, g := range []string{"g-0", "g-1"} {
		if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: g, Batch: 1, AutoAck: true}); err != nil {
			t.Fatal(err)
		}
	}
	lossPush(t, s, "q", "p", "b")

	release := holdWriter(t, s)
	const groups = 4 // g-2 fits, g-3 is one past
	got := make([][]string, groups)
	errs := make([]error, groups)
	var wg sync.WaitGroup
	for i := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.PopWoken(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g-%d", i), Batch: 10})
			if errs[i] = err; err == nil {
				got[i] = payloads(res)
			}
		}()
	}
	waitPending(t, s, groups)
	release()
	wg.Wait()

	// g-0 and g-1 are served; of the new groups, g-2 and g-3, the one
	// applied first takes the last room and the other is refused.
	for i := range 2 {
		if errs[i] != nil || !slices.Equal(got[i], []string{"b"}) {
			t.Errorf("g-%d got %q, %v; want [b]", i, got[i], errs[i])
		}
	}
	served := 2
	if errors.Is(errs[2], combtype.ErrGroupLimit) {
		served = 3
	}
	if errs[served] != nil || !slices.Equal(got[served], []string{"a", "b"}) || !errors.Is(errs[5-served], combtype.ErrGroupLimit) {
		t.Errorf("g-2 got %q, %v; g-3 got %q, %v; want one served from the start, the other refused",
			got[2], errs[2], got[3], errs[3])
	}
	if l := logs.String(); !strings.Contains(l, "claim wave rolled back") || !strings.Contains(l, "consumer group limit reached") {
		t.Errorf("no wave was tried: %s", logs.String())
	}
	if subs, _ := subscriptionsOf(t, s, "q"); !slices.Equal(subs, []string{"g-0", "g-1", fmt.Sprintf("g-%d", served)}) {
		t.Errorf("subscriptions %q; want g-0, g-1, g-%d", subs, served)
	}
}

// A pop of a namespace refused at the bound on subscriptions leaves none
// of its group's behind: it subscribes a page of queues a commit, and the
// pages it had written stayed while it answered 409 "nothing was
// written" (768 subscriptions of 2,000 queues under a bound of 3,000).
func TestANamespacePopRefusedAtTheGroupBoundLeavesNoSubscription(t *testing.T) {
	ctx := context.Background()
	n := popQueuePageSize + 144
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), MaxGroups: n + popQueuePageSize + 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		if _, _, err := s.Configure(ctx, "", combtype.ConfigureRequest{Queue: fmt.Sprintf("q%04d", i), Namespace: "ns",
			Options: combtype.DefaultQueueOptions()}); err != nil {
			t.Fatal(err)
		}
	}
	subs := func(group string) int {
		return countRows(t, s, `SELECT COUNT(*) FROM subscriptions WHERE group_name = ?`, group)
	}
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Namespace: "ns", Group: "a", Batch: 1}); err != nil {
		t.Fatal(err)
	}
	if got := subs("a"); got != n {
		t.Fatalf("group a holds %d subscriptions, want %d", got, n)
	}
	_, err = s.Pop(ctx, "", combtype.PopRequest{Namespace: "ns", Group: "b", Batch: 1})
	if !errors.Is(err, combtype.ErrGroupLimit) {
		t.Fatalf("group b's pop past the bound = %v, want ErrGroupLimit", err)
	}
	if got := subs("b"); got != 0 {
		t.Fatalf("group b's refused pop left %d subscriptions, want none", got)
	}
	// The count of subscriptions is right after the take-back: b fits
	// once a's are gone.
	if _, err := s.DeleteGroup(ctx, "", "a", "", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Namespace: "ns", Group: "b", Batch: 1}); err != nil {
		t.Fatalf("group b's pop once a was deleted: %v", err)
	}
	if got := subs("b"); got != n {
		t.Fatalf("group b holds %d subscriptions, want %d", got, n)
	}
}
