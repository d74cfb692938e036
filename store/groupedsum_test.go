package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// The namespace and task listings of a tenant the background sums whole
// are grouped from that sum, so they agree with the queue listing by
// totals (which pages the same sum) at every moment, and follow it when
// it is summed again. Before, they read and summed every queue of the
// names on their page on each request (50,000 queues in 7 namespaces:
// 1.7-2.7 s a listing), and counted what the sum had not seen yet.
func TestGroupedListingsOfASummedTenantReadItsSum(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), LiveSummaryPartitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stopRefresher(s)
	var items []combtype.PushItem
	for i := range 12 {
		items = append(items, combtype.PushItem{Queue: fmt.Sprintf("ns%d.task%d.q%d", i%3, i%2, i), Payload: []byte(`1`)})
	}
	items = append(items, combtype.PushItem{Queue: "plain", Payload: []byte(`1`)}) // namespace "plain", no task
	if _, err := s.Push(ctx, "", items); err != nil {
		t.Fatal(err)
	}
	// A large tenant is summed once a read asks for it.
	if _, err := s.Summary(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want map[string]int64) {
		t.Helper()
		qs, _, err := s.QueuePage(ctx, "", combtype.QueueFilter{Sort: "total"})
		if err != nil {
			t.Fatal(err)
		}
		byNS, byTask := map[string]int64{}, map[string]int64{}
		for _, q := range qs {
			byNS[q.Namespace] += q.Counts.Total
			if q.Task != "" {
				byTask[q.Task] += q.Counts.Total
			}
		}
		for name, list := range map[string]struct {
			page func(context.Context, string, combtype.Page) ([]combtype.GroupedStats, combtype.PageInfo, error)
			want map[string]int64
		}{"namespaces": {s.NamespacePage, byNS}, "tasks": {s.TaskPage, byTask}} {
			gs, info, err := list.page(ctx, "", combtype.Page{Limit: 2, Offset: 1})
			if err != nil {
				t.Fatal(err)
			}
			all, _, err := list.page(ctx, "", combtype.Page{})
			if err != nil {
				t.Fatal(err)
			}
			if int(info.Total) != len(list.want) || len(all) != len(list.want) {
				t.Fatalf("%s, %s: %d listed, total %d, want %d", when, name, len(all), info.Total, len(list.want))
			}
			if len(gs) != min(2, len(all)-1) || gs[0].Name != all[1].Name {
				t.Fatalf("%s, %s: the page from 1 of 2 is %+v of %+v", when, name, gs, all)
			}
			for _, g := range all {
				if g.Counts.Total != list.want[g.Name] {
					t.Errorf("%s, %s: %s counts %d messages, the queue listing %d", when, name, g.Name, g.Counts.Total, list.want[g.Name])
				}
				if w, ok := want[g.Name]; ok && g.Counts.Total != w {
					t.Errorf("%s, %s: %s counts %d messages, want %d", when, name, g.Name, g.Counts.Total, w)
				}
			}
		}
	}
	check("summed", map[string]int64{"ns0": 4, "plain": 1, "task0": 6})
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "ns0.task0.q0", Payload: []byte(`2`)}}); err != nil {
		t.Fatal(err)
	}
	check("pushed, not summed again", map[string]int64{"ns0": 4, "task0": 6})
	if err := s.RefreshTotals(ctx); err != nil {
		t.Fatal(err)
	}
	check("summed again", map[string]int64{"ns0": 5, "task0": 7})
}
