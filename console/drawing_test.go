package console_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/comb-broker/comb/internal/combtest"
)

// drawsJS records each comb:drawn event of a table: its grid's id, whether
// the page was whole, how many rows the table then held, whether a row
// stood in for the rest, and where the groups card below the partitions
// began.
const drawsJS = `window.__drawn = [];
document.addEventListener("comb:drawn", (e) => {
	const tb = e.target.querySelector("tbody");
	const stand = tb.querySelector("tr.rest");
	const below = document.querySelector("#queue-groups");
	window.__drawn.push({ id: e.target.id, complete: e.detail.complete !== false, rows: tb.querySelectorAll("tr[data-key]").length,
		stand: stand ? stand.getBoundingClientRect().height : -1, below: below ? below.getBoundingClientRect().top + scrollY : -1,
		bottom: [...tb.querySelectorAll("tr[data-key]")].at(-1)?.getBoundingClientRect().bottom ?? -1 });
});`

type drawnEvent struct {
	ID       string  `json:"id"`
	Complete bool    `json:"complete"`
	Rows     int     `json:"rows"`
	Stand    float64 `json:"stand"`
	Below    float64 `json:"below"`
	Bottom   float64 `json:"bottom"`
}

// TestConsoleDrawsTheFirstScreenOfAPageThenTheRest opens a queue of 1,200
// partitions and filters its partitions: each time the partitions table
// first draws the rows that reach the bottom of the window, with a row
// standing in for the rest at about their height (the card below does not
// jump when they come), and then the whole page of 100.
func TestConsoleDrawsTheFirstScreenOfAPageThenTheRest(t *testing.T) {
	p := wideConsole(t)
	p.do("record draws", chromedp.Evaluate[chromedp.Void](drawsJS))
	check := func(what string) {
		t.Helper()
		p.until(`(() => { const d = window.__drawn.filter((x) => x.id === "queue-partition-list"); const i = d.findIndex((x) => !x.complete && x.rows > 0);
			return i >= 0 && d.slice(i).some((x) => x.complete && x.rows === 100); })()`)
		var first, whole *drawnEvent
		for _, d := range eval[[]drawnEvent](p, `window.__drawn.filter((d) => d.id === "queue-partition-list")`) {
			if first == nil && !d.Complete && d.Rows > 0 {
				first = &d
			}
			if first != nil && d.Complete && d.Rows == 100 {
				whole = &d
				break
			}
		}
		if first == nil || whole == nil {
			t.Fatalf("%s: the partitions were not drawn a screenful first, then whole: %+v", what, eval[[]drawnEvent](p, `window.__drawn`))
		}
		h := eval[float64](p, `innerHeight`)
		if first.Rows >= 100 || first.Bottom < h {
			t.Fatalf("%s: the first draw held %d rows ending at %.0f px, want fewer than 100 reaching the window's bottom (%.0f px)", what, first.Rows, first.Bottom, h)
		}
		if first.Stand <= 0 || whole.Stand != -1 {
			t.Fatalf("%s: stand-in %.0f px high at first and %.0f after, want a height, then none", what, first.Stand, whole.Stand)
		}
		// The rows are alike: the stand-in's estimate is within a row.
		rowH := (first.Stand) / float64(100-first.Rows)
		if d := whole.Below - first.Below; d > rowH || d < -rowH {
			t.Fatalf("%s: the card below moved by %.0f px when the rest came (a row is %.0f px)", what, d, rowH)
		}
		p.do("forget draws", chromedp.Evaluate[chromedp.Void](`window.__drawn = []`))
	}
	p.show("#/queues/wide", "#queue-partition-list tbody tr[data-key]")
	check("first open")
	// A key that brings a page of other rows.
	p.do("type", chromedp.Click(chromedp.CSS("#queue-partition-list-filter")), chromedp.SendKeys(chromedp.CSS("#queue-partition-list-filter"), "part-01"))
	p.until(`document.querySelector("#queue-partition-list-count").textContent === "100 of 1,200 partitions match"`)
	check("filter")
	if got := p.text(`#queue-partition-list tbody tr[data-key]:first-child td`); got != "part-0100" {
		t.Fatalf("first row after filtering: %q", got)
	}
}

// TestConsoleQueueFilterNarrowsWhatItHolds types in the queues filter.
// Once the list holds every queue that matched, a longer filter narrows it
// in the page with no request, to the rows the broker itself answers; a
// filter that widens it, and a refresh, ask the broker.
func TestConsoleQueueFilterNarrowsWhatItHolds(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	var items []map[string]any
	for i := range 150 {
		items = append(items, map[string]any{"queue": fmt.Sprintf("q%03d", i), "transactionId": "t", "payload": map[string]any{"i": i}})
	}
	srv.Push(items...)
	p := newPage(t, srv.URL)
	p.do("open console", chromedp.Navigate(srv.URL+"/#/queues"))
	p.choose("#refresh", "0")
	p.until(`document.querySelectorAll("#queue-list tbody tr[data-queue]").length === 100`)
	// Searches are logged.
	p.do("log searches", chromedp.Evaluate[chromedp.Void](`(() => {
		window.__asked = [];
		const f0 = window.fetch;
		window.fetch = (url, ...a) => {
			const u = new URL(String(url), location.origin);
			if (u.searchParams.has("search")) window.__asked.push(u.searchParams.get("search"));
			return f0(url, ...a);
		};
	})()`))
	p.do("type q12", chromedp.Click(chromedp.CSS("#queue-filter")), chromedp.SendKeys(chromedp.CSS("#queue-filter"), "q12"))
	p.until(`document.querySelector("#queue-list-count").textContent === "10 of 150 queues match"`)

	// Every queue matching q12 is held: q123 asks nothing, and shows what
	// the broker answers for it.
	n := eval[int](p, `window.__asked.length`)
	p.do("type 3", chromedp.SendKeys(chromedp.CSS("#queue-filter"), "3"))
	p.until(`document.querySelector("#queue-list-count").textContent === "1 of 150 queues match"`)
	if got := eval[[]string](p, `window.__asked`); len(got) != n {
		t.Fatalf("q123 asked the broker: %q", got[n:])
	}
	var want struct {
		Queues []struct {
			Name string `json:"name"`
		} `json:"queues"`
	}
	r := srv.Do("GET", "/api/v1/resources/queues?search=q123&limit=100", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("search: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &want)
	shown := eval[[]string](p, `[...document.querySelectorAll("#queue-list tbody tr[data-queue]")].map((tr) => tr.dataset.queue)`)
	var names []string
	for _, q := range want.Queues {
		names = append(names, q.Name)
	}
	if !slices.Equal(shown, names) {
		t.Fatalf("narrowed in the page to %v, the broker answers %v", shown, names)
	}
	if got := eval[string](p, `location.hash`); got != "#/queues?q=q123" {
		t.Fatalf("hash = %q, want the filter in it", got)
	}
	// A refresh of the same filter asks the broker, and so does a filter
	// that is not a narrowing of the last one.
	refreshNow(p)
	if got := eval[[]string](p, `window.__asked`); len(got) != n+1 || got[n] != "q123" {
		t.Fatalf("after a refresh the broker was asked %q, want q123 once more", got[n:])
	}
	p.do("backspace", chromedp.SendKeys(chromedp.CSS("#queue-filter"), "\b"))
	p.until(`document.querySelector("#queue-list-count").textContent === "10 of 150 queues match"`)
	if got := eval[[]string](p, `window.__asked`); got[len(got)-1] != "q12" {
		t.Fatalf("a wider filter was not asked of the broker: %q", got)
	}
}

// TestConsoleQueuesRefreshDrawsRowsOnceWhenNoRateMoved refreshes the queues
// view twice within the counters' sampling age: no rate can move, and the
// page of rows is drawn once per refresh (the answer), not a second time
// for the rates.
func TestConsoleQueuesRefreshDrawsRowsOnceWhenNoRateMoved(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	srv.Push(map[string]any{"queue": "a", "transactionId": "t", "payload": 1}, map[string]any{"queue": "b", "transactionId": "t", "payload": 2})
	p := newPage(t, srv.URL)
	p.do("open console", chromedp.Navigate(srv.URL+"/#/queues"))
	p.choose("#refresh", "0")
	p.until(`document.querySelectorAll("#queue-list tbody tr[data-queue]").length === 2`)
	refreshNow(p) // samples the counters: later refreshes within 5 s do not
	p.do("count draws", chromedp.Evaluate[chromedp.Void](`window.__n = 0; document.addEventListener("comb:drawn", (e) => { if (e.target.id === "queue-list") window.__n++; })`))
	refreshNow(p)
	refreshNow(p)
	if n := eval[int](p, `window.__n`); n != 2 {
		t.Fatalf("two refreshes drew the queue list %d times, want 2", n)
	}
}
