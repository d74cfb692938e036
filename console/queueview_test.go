package console_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/comb-broker/comb/internal/combtest"
)

// TestConsoleQueueViewAsksForItsOwnGroups opens a queue on a broker with
// other queues and groups: the view lists the groups on its queue from
// the listing of that queue alone (/consumer-groups?queue=), never the
// tenant's whole listing, which reads every queue.
func TestConsoleQueueViewAsksForItsOwnGroups(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	var items []map[string]any
	for i := range 3 {
		items = append(items, map[string]any{"queue": "wide", "partition": fmt.Sprintf("part-%d", i), "transactionId": fmt.Sprintf("w%d", i),
			"payload": map[string]any{"i": i}})
	}
	items = append(items, map[string]any{"queue": "other", "transactionId": "o", "payload": map[string]any{"o": 1}})
	srv.Push(items...)
	for _, s := range []struct{ group, queue string }{{"fleet", "wide"}, {"elsewhere", "other"}} {
		if r := srv.Do("POST", "/api/v1/consumer-groups/"+s.group+"/queues/"+s.queue+"/seek", map[string]any{"offset": 0}); r.Status != http.StatusOK {
			t.Fatalf("seek %s: %d %s", s.group, r.Status, r.Body)
		}
	}
	p := newPage(t, srv.URL)
	p.do("open console", chromedp.Navigate(srv.URL+"/#/snapshots"))
	p.wait("#snapshot-grid")
	p.choose("#refresh", "0")
	p.show("#/queues/wide", "#queue-group-list tbody tr[data-key]")
	p.until(`document.querySelector("#queue-group-list-count")?.textContent === "3 cursors"`)
	if got := eval[[]string](p, `[...document.querySelectorAll(".seek-group")].map((b) => b.textContent)`); !slices.Equal(got, []string{"Seek fleet…"}) {
		t.Fatalf("seek buttons = %q, want fleet's alone", got)
	}
	asked := eval[[]string](p, `performance.getEntriesByType("resource").map((e) => new URL(e.name)).filter((u) => u.pathname === "/api/v1/consumer-groups").map((u) => u.search)`)
	if !slices.Equal(asked, []string{"?queue=wide"}) {
		t.Fatalf("the queue view asked /api/v1/consumer-groups with %q, want only ?queue=wide", asked)
	}
}

// TestConsoleAsksForWhatTheFirstPaintDoesNotNeedAfterIt opens the
// overview and a queue over 1,200 partitions (two pages of the broker's
// listings) and records, for every request the views make, what was on
// the page when it was made: the answers the first paint does not need
// (the throughput chart, the queue's configuration and retention figures,
// the lists' later pages, the list confirming the groups seen before) are
// asked only once the first rows are drawn, so they never hold them back;
// and each of them does arrive.
func TestConsoleAsksForWhatTheFirstPaintDoesNotNeedAfterIt(t *testing.T) {
	p := wideConsole(t)
	p.do("record requests", chromedp.Evaluate[chromedp.Void](`(() => {
		const n = (sel) => document.querySelectorAll(sel).length;
		window.__asked = [];
		const f0 = window.fetch;
		window.fetch = (url, ...a) => {
			window.__asked.push({ url: String(url), overview: n("#ov-cards .stat") > 0 && n("#ov-groups tbody a") > 0 && n("#ov-queues tbody a") > 0,
				rows: n("#queue-partition-list tbody tr[data-key]"), cursors: n("#queue-group-list tbody tr[data-key]") });
			return f0(url, ...a);
		};
	})()`))
	type asked struct {
		URL           string
		Overview      bool
		Rows, Cursors int
	}
	requests := func(match string) []asked {
		t.Helper()
		var out []asked
		for _, a := range eval[[]asked](p, `window.__asked`) {
			if strings.Contains(a.URL, match) {
				out = append(out, a)
			}
		}
		if len(out) == 0 {
			t.Fatalf("no request for %s", match)
		}
		return out
	}

	// The overview: the chart after the cards and tables.
	p.show("#/overview", "#ov-groups tbody a")
	p.until(`document.querySelectorAll("#ov-chart polyline").length === 2`)
	for _, a := range requests("/api/v1/status") {
		if !a.Overview {
			t.Fatalf("%s was asked before the overview's cards and tables were drawn", a.URL)
		}
	}

	// The queue, its groups seen on the overview: configuration and
	// retention, later pages, and its list of groups after the first rows.
	p.show("#/queues/wide", "#queue-partition-list tbody tr[data-key]")
	p.until(`document.querySelector("#queue-partition-list-count").textContent === "1,200 partitions" &&
		document.querySelector("#queue-group-list-count").textContent === "1,200 cursors" &&
		document.querySelector("#queue-config").textContent.includes("retention seconds")`)
	var late []asked
	for _, m := range []string{"/api/v1/analytics/retention?queue=wide", "/api/v1/resources/queues/wide?after=",
		"/api/v1/consumer-groups/fleet?after=", "/api/v1/consumer-groups?queue=wide"} {
		late = append(late, requests(m)...)
	}
	for _, a := range late {
		if a.Rows != 100 || a.Cursors != 100 {
			t.Fatalf("%s was asked with %d partition rows and %d cursor rows drawn, want the first 100 of each", a.URL, a.Rows, a.Cursors)
		}
	}
	for _, a := range requests("/api/v1/consumer-groups/fleet?limit=100") {
		if a.Cursors != 0 {
			t.Fatalf("the group's first page was asked with %d cursor rows drawn", a.Cursors)
		}
	}
}
