package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// A queue found within the live limit is not sized again on the next
// read; the writer giving it a partition drops that verdict, so a queue
// grown past the limit is answered as a large one; and a read racing the
// commit that grew a queue keeps no verdict on it.
func TestSmallVerdictHoldsUntilTheQueueGrows(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), LiveTotalsPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	push := func(queue string, from, to int) {
		t.Helper()
		var items []combtype.PushItem
		for i := from; i < to; i++ {
			items = append(items, combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%d", i), TxnID: "t", Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(q *combtype.Queue) bool {
		s.tot.grewMu.Lock()
		defer s.tot.grewMu.Unlock()
		return s.tot.small[q.ID] == q.UUID
	}
	push("a", 0, 3) // at the limit: small
	push("b", 0, 1)
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "a", Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
		t.Fatal(err)
	}
	queues, err := queueKeys(ctx, s.r, "", "")
	if err != nil || len(queues) != 2 {
		t.Fatalf("queues: %v %v", queues, err)
	}
	qa, qb := queues[0], queues[1]
	if qa.Name != "a" {
		qa, qb = qb, qa
	}
	page := func() combtype.GroupSummary {
		t.Helper()
		g, _, err := s.GroupsPage(ctx, "", combtype.Page{Limit: 10})
		if err != nil || len(g) != 1 || g[0].Queue != "a" {
			t.Fatalf("groups page: %+v %v", g, err)
		}
		return g[0]
	}
	if g := page(); g.Summarized || g.Cursors != 3 {
		t.Fatalf("a small queue's pair = %+v", g)
	}
	if !kept(qa) || !kept(qb) {
		t.Fatal("the small verdicts were not kept")
	}
	// Kept verdicts are not sized again: with both known, no probe is
	// made (an error from one would tell), however many reads come.
	large, err := s.largeQueues(ctx, queues)
	if err != nil || len(large) != 0 {
		t.Fatalf("large = %v %v", large, err)
	}

	// The writer marks a queue before its commit: a read between the two
	// does not see the partition and must not keep its verdict.
	s.grown(qa)
	if kept(qa) {
		t.Fatal("growth did not drop the verdict")
	}
	if _, err := s.largeQueues(ctx, queues); err != nil {
		t.Fatal(err)
	}
	if kept(qa) {
		t.Fatal("a read racing the growth's commit kept its verdict")
	}
	if !kept(qb) {
		t.Fatal("a queue that did not grow lost its verdict")
	}
	// Past the limit now: the next read finds it large and lists the pair
	// as not summed yet; once the refresher has summed it, the pair comes
	// from the background sum.
	push("a", 3, 4)
	if kept(qa) {
		t.Fatal("a partition given did not drop the verdict")
	}
	if g := page(); !g.Summarized || g.StatsAge != combtype.NotSummed || g.Cursors != 0 {
		t.Fatalf("a queue grown past the limit, first read = %+v, want the pair not summed yet", g)
	}
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := s.Groups(ctx, "")
	if err != nil || len(live) != 1 {
		t.Fatalf("groups: %+v %v", live, err)
	}
	if g := page(); !g.Summarized || g.Cursors != live[0].Cursors {
		t.Fatalf("a queue grown past the limit = %+v, want its background sum (%+v)", g, live[0])
	}
	if kept(qa) {
		t.Fatal("a large queue was kept as small")
	}
}

// A queue of few partitions with many groups is large by its positions
// (partitions times groups): a group subscribing drops its small verdict,
// and once past the limit its group figures come from the background sum
// like those of a queue of many partitions.
func TestManyGroupsMakeAQueueOfFewPartitionsLarge(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), LiveGroupPositions: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var items []combtype.PushItem
	for _, p := range []string{"p0", "p1"} {
		items = append(items, combtype.PushItem{Queue: "a", Partition: p, TxnID: "t", Payload: []byte(`1`)})
	}
	if _, err := s.Push(ctx, "", items); err != nil {
		t.Fatal(err)
	}
	pop := func(group string) {
		t.Helper()
		if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "a", Group: group, Batch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	queues, err := queueKeys(ctx, s.r, "", "a")
	if err != nil || len(queues) != 1 {
		t.Fatalf("queues: %v %v", queues, err)
	}
	q := queues[0]
	kept := func() bool {
		s.tot.grewMu.Lock()
		defer s.tot.grewMu.Unlock()
		return s.tot.small[q.ID] == q.UUID
	}
	page := func() []combtype.GroupSummary {
		t.Helper()
		g, _, err := s.GroupsPage(ctx, "", combtype.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	pop("g1")
	pop("g2") // 2 partitions x 2 groups: within 5
	if g := page(); len(g) != 2 || g[0].Summarized || g[1].Summarized {
		t.Fatalf("within the positions limit: %+v, want live figures", g)
	}
	if !kept() {
		t.Fatal("the small verdict was not kept")
	}
	pop("g3") // 6 positions
	if kept() {
		t.Fatal("a group subscribing did not drop the verdict")
	}
	if g := page(); len(g) != 3 || !g[0].Summarized || g[0].StatsAge != combtype.NotSummed {
		t.Fatalf("past the positions limit, first read: %+v, want pairs not summed yet", g)
	}
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := s.Groups(ctx, "")
	if err != nil || len(live) != 3 {
		t.Fatalf("groups: %+v %v", live, err)
	}
	got := page()
	for i := range live {
		if !got[i].Summarized || got[i].StatsAge == combtype.NotSummed || got[i].Cursors != live[i].Cursors ||
			got[i].TotalLag != live[i].TotalLag {
			t.Fatalf("after the background sum: %+v, want the live figures %+v", got[i], live[i])
		}
	}
}

// The queue keys the group listings read are kept until the writer adds
// or removes a queue: a queue made or deleted after a listing is in, or
// out of, the next; and a read racing the commit that changed the queues
// keeps nothing.
func TestQueueKeysKeptUntilQueuesChange(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seek := func(group, queue string) {
		t.Helper()
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: queue, TxnID: "t", Payload: []byte(`1`)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: group, Queue: queue, Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
			t.Fatal(err)
		}
	}
	pairs := func() []string {
		t.Helper()
		g, _, err := s.GroupsPage(ctx, "", combtype.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		l, _, err := s.LaggingPage(ctx, "", 0, combtype.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range g {
			out = append(out, p.Group+"/"+p.Queue)
		}
		return append(out, fmt.Sprint(len(l)))
	}
	kept := func() bool {
		s.tot.grewMu.Lock()
		defer s.tot.grewMu.Unlock()
		_, ok := s.tot.keys[""]
		return ok
	}
	seek("g", "a")
	if got := fmt.Sprint(pairs()); got != "[g/a 0]" || !kept() {
		t.Fatalf("pairs = %s, kept %v", got, kept())
	}
	seek("h", "b") // a new queue
	if kept() {
		t.Fatal("a queue made did not drop the kept keys")
	}
	if got := fmt.Sprint(pairs()); got != "[g/a h/b 0]" {
		t.Fatalf("after a queue was made: %s", got)
	}
	if _, err := s.DeleteQueue(ctx, "", "a"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(pairs()); got != "[h/b 0]" {
		t.Fatalf("after a queue was deleted: %s", got)
	}
	// The writer marks before its commit: a read between the two may not
	// see the queue and must not keep what it read.
	s.queuesChanged()
	if _, err := s.tenantQueueKeys(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if kept() {
		t.Fatal("a read racing a change of the queues kept its keys")
	}
}
