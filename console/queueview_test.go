package console_test

import (
	"fmt"
	"net/http"
	"slices"
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
