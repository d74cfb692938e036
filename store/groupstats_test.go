package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// openLive opens a store whose queues above live partitions are summed in
// the background.
func openLive(t *testing.T, clk clock.Clock, live int) *store.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "comb.db")
	st, err := store.Open(context.Background(), store.Options{Path: path, Clock: clk, LiveTotalsPartitions: live})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		combtest.CheckInvariants(t, path)
	})
	return st
}

// sameGroups compares a groups page with the live aggregate over every
// cursor (Store.Groups), figure by figure.
func sameGroups(t *testing.T, when string, got, want []combtype.GroupSummary, summarized map[string]bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d pairs, want %d: %+v", when, len(got), len(want), got)
	}
	for i, g := range got {
		w := want[i]
		if g.Group != w.Group || g.Queue != w.Queue || g.Cursors != w.Cursors || g.PartitionsWithLag != w.PartitionsWithLag ||
			g.TotalLag != w.TotalLag || g.TotalConsumed != w.TotalConsumed || g.MaxTimeLag != w.MaxTimeLag {
			t.Errorf("%s: pair %d = %+v, live sum %+v", when, i, g, w)
		}
		if g.Summarized != summarized[g.Queue] {
			t.Errorf("%s: %s/%s summarized %v", when, g.Group, g.Queue, g.Summarized)
		}
	}
}

// pushEach pushes one message, with a transaction id starting with txn,
// into each of the first n partitions of queue (p0, p1, ...).
func pushEach(t *testing.T, st *store.Store, queue, txn string, n int) {
	t.Helper()
	items := make([]combtype.PushItem, n)
	for i := range items {
		items[i] = combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%d", i), TxnID: fmt.Sprintf("%s-%d", txn, i),
			Payload: []byte(`{}`)}
	}
	if _, err := st.Push(context.Background(), "", items); err != nil {
		t.Fatalf("push: %v", err)
	}
}

func lagKey(l combtype.PartitionLag) [5]any {
	return [5]any{l.Group, l.Queue, l.Partition, l.OffsetLag, l.OldestUnconsumedAt.UnixMicro()}
}

// A queue above the live limit has its consumer-group figures, its
// lagging cursors and its depth from one background pass: a read after the
// first reads none of its cursors, the figures are those the live sums
// give, and a refresh brings them up to date after pops and acks.
func TestLargeQueueGroupFiguresComeFromTheBackgroundSum(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	st := openLive(t, clk, 50)
	store.StopRefresher(st) // each sum is made below, with RefreshTotals
	pushEach(t, st, "wide", "a", 1000)
	clk.Advance(time.Minute)
	// 2000 more partitions, and a second segment on the first 1000: the
	// oldest rows the background sum keeps span both push times.
	pushEach(t, st, "wide", "b", 3000)
	pushEach(t, st, "tiny", "a", 3)
	popGroupsAndQueueMode(t, st)
	clk.Advance(time.Hour)
	large := map[string]bool{"wide": true}

	// The first read lists wide's pairs without their figures (see
	// TestTheFirstGroupsListingOfALargeQueueDoesNotWaitForItsSum); the
	// refresher sums them.
	if _, _, err := st.GroupsPage(ctx, "", combtype.Page{Limit: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := st.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	page, info, err := st.GroupsPage(ctx, "", combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	live, err := st.Groups(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	sameGroups(t, "first summed read", page, live, large)
	if info.Total != int64(len(live)) || info.More {
		t.Errorf("page info %+v, want total %d and no more", info, len(live))
	}

	// Later reads, of any of the listings, read none of wide's cursors.
	before := st.Stats().ReadSummedRows.Load()
	clk.Advance(3 * time.Second)
	page, _, err = st.GroupsPage(ctx, "", combtype.Page{Limit: 2, Offset: 1})
	if err != nil || len(page) != 2 {
		t.Fatalf("second page: %d pairs, %v", len(page), err)
	}
	for _, g := range page {
		if g.Queue == "wide" && g.StatsAge < 3*time.Second && g.StatsAge != 0 {
			t.Errorf("%s/%s statsAge %s", g.Group, g.Queue, g.StatsAge)
		}
	}
	liveLag, err := st.LaggingPartitions(ctx, "", 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lag, linfo, err := st.LaggingPage(ctx, "", 30*time.Minute, combtype.Page{Limit: 100})
	if err != nil || len(lag) != 100 || !linfo.More {
		t.Fatalf("lagging page: %d rows, %+v, %v", len(lag), linfo, err)
	}
	for i, l := range lag {
		if lagKey(l) != lagKey(liveLag[i]) {
			t.Fatalf("lagging row %d = %v, live %v", i, lagKey(l), lagKey(liveLag[i]))
		}
		if l.Summarized != large[l.Queue] {
			t.Errorf("lagging row %d of %s summarized %v", i, l.Queue, l.Summarized)
		}
	}
	if read := st.Stats().ReadSummedRows.Load() - before; read != 0 {
		t.Fatalf("later reads summed %d rows of wide, want 0", read)
	}
	// Every page, those past the rows the background sum kept included,
	// is the live listing's, in order, each row once.
	var walked []combtype.PartitionLag
	for off := 0; ; off += 1000 {
		rows, info, err := st.LaggingPage(ctx, "", 30*time.Minute, combtype.Page{Limit: 1000, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, rows...)
		if !info.More {
			break
		}
	}
	if len(walked) != len(liveLag) {
		t.Fatalf("walk: %d lagging rows, live %d", len(walked), len(liveLag))
	}
	for i := range walked {
		if lagKey(walked[i]) != lagKey(liveLag[i]) {
			t.Fatalf("walk row %d = %v, live %v", i, lagKey(walked[i]), lagKey(liveLag[i]))
		}
	}
	// A minimum lag between the two pushes leaves only the cursors whose
	// oldest segment came with the first: a prefix of the rows kept.
	old, _, err := st.LaggingPage(ctx, "", time.Hour+30*time.Second, combtype.Page{Limit: 1000, Offset: 1500})
	liveOld, _ := st.LaggingPartitions(ctx, "", time.Hour+30*time.Second)
	if err != nil || len(liveOld) < 1500 || len(liveOld) > 2000 || len(old) != len(liveOld)-1500 {
		t.Fatalf("older than 1h0m30s, offset 1500: %d rows of %d live, %v", len(old), len(liveOld), err)
	}
	for i := range old {
		if lagKey(old[i]) != lagKey(liveOld[1500+i]) {
			t.Fatalf("older row %d = %v, live %v", i, lagKey(old[i]), lagKey(liveOld[1500+i]))
		}
	}

	depths, err := st.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range depths {
		if d.Queue != "wide" {
			continue
		}
		var qm, g int64
		for _, s := range live {
			if s.Queue == "wide" && s.Group == combtype.QueueModeGroup {
				qm = s.TotalLag
			} else if s.Queue == "wide" {
				g = s.TotalLag
			}
		}
		if !d.Summarized || d.Stored != 4000 || d.Depth != qm || d.GroupLag["g"] != g || d.GroupLag[combtype.QueueModeGroup] != qm {
			t.Errorf("wide's depth %+v, want stored 4000, depth %d (queue mode), g's lag %d", d, qm, g)
		}
	}

	// Consumed and pushed since: a refresh makes the figures the live ones.
	for range 3 {
		if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "wide", Group: "g", Batch: 50, AutoAck: true}); err != nil {
			t.Fatal(err)
		}
	}
	pushEach(t, st, "wide", "c", 3100) // 100 new partitions
	if err := st.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	page, _, err = st.GroupsPage(ctx, "", combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	live, err = st.Groups(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	sameGroups(t, "after a refresh", page, live, large)
	for _, g := range page {
		if g.Summarized && g.StatsAge != 0 {
			t.Errorf("%s/%s statsAge %s right after the refresh", g.Group, g.Queue, g.StatsAge)
		}
	}
}

// The metrics read no large queue on the scrape's path: a queue no read
// asked for yet is left out until the refresher has summed it.
func TestQueueDepthsLeaveUnsummedLargeQueuesToTheRefresher(t *testing.T) {
	ctx := context.Background()
	st := openLive(t, nil, 50)
	store.StopRefresher(st) // the sum is made below, with RefreshTotals
	pushEach(t, st, "wide", "a", 200)
	pushEach(t, st, "tiny", "a", 3)
	depths, err := st.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(depths) != 1 || depths[0].Queue != "tiny" || depths[0].Stored != 3 || depths[0].Summarized {
		t.Fatalf("first scrape: %+v, want tiny only", depths)
	}
	if read := st.Stats().ReadSummedRows.Load(); read != 0 {
		t.Fatalf("the scrape summed %d rows", read)
	}
	if err := st.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	depths, err = st.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(depths) != 2 || depths[1].Queue != "wide" || depths[1].Stored != 200 || depths[1].Depth != 200 || !depths[1].Summarized {
		t.Fatalf("after the refresh: %+v, want wide's 200 messages, summarized", depths)
	}
}

// Cursors are lazy (implied.go): a group that subscribed has a cursor row
// only where it claimed, acked or sought, and its other positions are
// those its subscription implies. The background sum of a large queue
// reads them so too: its figures equal those of the same history summed
// live, for a group subscribed to new messages with no row at all, a
// group from the oldest with one row, the queue-mode group with a few,
// on partitions that existed at registration (written since or not) and
// on partitions made after it.
func TestLargeQueueBackgroundSumReadsImpliedCursors(t *testing.T) {
	ctx := context.Background()
	history := func(live int) *store.Store {
		clk := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
		st := openLive(t, clk, live)
		pushEach(t, st, "wide", "a", 200)
		clk.Advance(time.Minute)
		for _, pop := range []combtype.PopRequest{
			{Queue: "wide", Group: "new", SubscriptionMode: "new"},
			{Queue: "wide", Group: "one", Batch: 1},
			{Queue: "wide", Batch: 5, Partitions: 5, AutoAck: true},
		} {
			if _, err := st.Pop(ctx, "", pop); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Minute)
		pushEach(t, st, "wide", "b", 100) // written since the registrations
		clk.Advance(time.Minute)
		pushEach(t, st, "wide", "c", 250) // and 50 partitions made after them
		clk.Advance(time.Hour)
		return st
	}
	large, small := history(50), history(1_000_000)

	rows := func(st *store.Store, group string) int {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+st.Path()+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM cursors WHERE group_name = ?`, group).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n, m, k := rows(large, "new"), rows(large, "one"), rows(large, combtype.QueueModeGroup); n != 0 || m != 1 || k != 5 {
		t.Fatalf("cursor rows: new %d, one %d, queue mode %d; want 0, 1, 5", n, m, k)
	}

	want, _, err := small.GroupsPage(ctx, "", combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := large.GroupsPage(ctx, "", combtype.Page{Limit: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := large.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	got, _, err := large.GroupsPage(ctx, "", combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	sameGroups(t, "groups", got, want, map[string]bool{"wide": true})
	for _, g := range want {
		// Every partition is a position of every group, and the groups
		// with no row where new messages came lag there.
		if g.Cursors != 250 || g.TotalLag == 0 {
			t.Errorf("live %s: %d positions, lag %d; want 250 and some lag", g.Group, g.Cursors, g.TotalLag)
		}
	}
	if n, m := rows(large, "new"), rows(large, "one"); n != 0 || m != 1 {
		t.Fatalf("reading the figures wrote cursors: new %d, one %d", n, m)
	}

	liveLag, err := small.LaggingPartitions(ctx, "", 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lag, _, err := large.LaggingPage(ctx, "", 30*time.Minute, combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(lag) != len(liveLag) || len(lag) == 0 {
		t.Fatalf("lagging: %d rows summed, %d live", len(lag), len(liveLag))
	}
	for i := range lag {
		if lagKey(lag[i]) != lagKey(liveLag[i]) || !lag[i].Summarized {
			t.Fatalf("lagging row %d = %v (summarized %v), live %v", i, lagKey(lag[i]), lag[i].Summarized, lagKey(liveLag[i]))
		}
	}

	if err := large.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	wantD, err := small.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gotD, err := large.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotD) != 1 || len(wantD) != 1 || !gotD[0].Summarized || wantD[0].Summarized {
		t.Fatalf("depths: summed %+v, live %+v", gotD, wantD)
	}
	g, w := gotD[0], wantD[0]
	if g.Stored != w.Stored || g.Depth != w.Depth || len(g.GroupLag) != 3 || len(w.GroupLag) != 3 {
		t.Errorf("depth: summed %+v, live %+v", g, w)
	}
	for k, v := range w.GroupLag {
		if g.GroupLag[k] != v {
			t.Errorf("%s's lag: summed %d, live %d", k, g.GroupLag[k], v)
		}
	}
}

// The first groups listing of a queue above the live limit does not make
// the queue's sum on the request's path (88 s at a million cursors): it
// lists the queue's pairs from the groups' own rows (subscriptions, and
// cursor rows of groups that only sought) with no figures yet and
// StatsAge NotSummed, reading none of the queue's cursors, and the
// lagging listing leaves the queue's rows out and says so; once the
// refresher has summed the queue, both answer from the sum.
func TestTheFirstGroupsListingOfALargeQueueDoesNotWaitForItsSum(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	st := openLive(t, clk, 50)
	store.StopRefresher(st) // each sum is made below, with RefreshTotals
	pushEach(t, st, "wide", "a", 300)
	pushEach(t, st, "side", "a", 100)
	pushEach(t, st, "tiny", "a", 3)
	for _, sk := range []combtype.SeekRequest{{Group: "seeker", Queue: "wide"}, {Group: "elsewhere", Queue: "side"}} {
		sk.Target.ToEnd = true
		if _, err := st.Seek(ctx, "", sk); err != nil {
			t.Fatal(err)
		}
	}
	popGroupsAndQueueMode(t, st)
	pushEach(t, st, "wide", "b", 10)
	clk.Advance(time.Hour)
	live, err := st.Groups(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	large := map[string]bool{"wide": true, "side": true}

	before := st.Stats().ReadSummedRows.Load()
	page, info, err := st.GroupsPage(ctx, "", combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if read := st.Stats().ReadSummedRows.Load() - before; read != 0 {
		t.Fatalf("the first listing summed %d rows on its path, want 0", read)
	}
	if len(page) != len(live) || info.Total != int64(len(live)) {
		t.Fatalf("first listing: %d pairs (total %d), want the %d pairs of the live listing: %+v", len(page), info.Total,
			len(live), page)
	}
	for i, g := range page {
		w := live[i]
		if g.Group != w.Group || g.Queue != w.Queue {
			t.Fatalf("pair %d = %s/%s, live %s/%s", i, g.Group, g.Queue, w.Group, w.Queue)
		}
		switch {
		case large[g.Queue]:
			if !g.Summarized || g.StatsAge != combtype.NotSummed || g.Cursors != 0 || g.TotalLag != 0 {
				t.Errorf("%s/%s = %+v, want no figures yet and StatsAge NotSummed", g.Group, g.Queue, g)
			}
		case g.Summarized || g.Cursors != w.Cursors || g.TotalLag != w.TotalLag:
			t.Errorf("%s/%s = %+v, want the live figures %+v", g.Group, g.Queue, g, w)
		}
	}
	one, _, err := st.QueueGroupsPage(ctx, "", "wide", combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range one {
		names = append(names, g.Group)
	}
	if got := fmt.Sprint(names); got != fmt.Sprint([]string{combtype.QueueModeGroup, "g", "seeker"}) {
		t.Errorf("wide's pairs: %s", got)
	}
	lag, linfo, err := st.LaggingPage(ctx, "", 0, combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if linfo.Unsummed != 2 {
		t.Errorf("lagging page info %+v, want 2 queues not summed yet", linfo)
	}
	for _, l := range lag {
		if large[l.Queue] {
			t.Fatalf("a lagging row of %s before its sum: %+v", l.Queue, l)
		}
	}
	if read := st.Stats().ReadSummedRows.Load() - before; read != 0 {
		t.Fatalf("the first listings summed %d rows on their path, want 0", read)
	}

	if err := st.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	if read := st.Stats().ReadSummedRows.Load() - before; read < 300*3+100 {
		t.Fatalf("the refresher's sums read %d rows, want every position on wide and side", read)
	}
	page, _, err = st.GroupsPage(ctx, "", combtype.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	sameGroups(t, "after the sum", page, live, large)
	liveLag, err := st.LaggingPartitions(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	lag, linfo, err = st.LaggingPage(ctx, "", 0, combtype.Page{Limit: 1000})
	if err != nil || linfo.Unsummed != 0 || len(lag) != len(liveLag) {
		t.Fatalf("lagging after the sum: %d rows of %d, %+v, %v", len(lag), len(liveLag), linfo, err)
	}
}

// popGroupsAndQueueMode leaves wide with a lease of group g and a queue
// mode read, and tiny with a read of g: the three kinds of pair the sums
// must list.
func popGroupsAndQueueMode(t *testing.T, st *store.Store) {
	t.Helper()
	for _, pop := range []combtype.PopRequest{
		{Queue: "wide", Group: "g", Batch: 1},
		{Queue: "wide", Batch: 5, AutoAck: true},
		{Queue: "tiny", Group: "g", Batch: 1, AutoAck: true},
	} {
		if _, err := st.Pop(context.Background(), "", pop); err != nil {
			t.Fatal(err)
		}
	}
}
