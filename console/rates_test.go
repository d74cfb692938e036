package console_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleShowsLiveRatesAndLagOverTime drives the page's clock (the
// test replaces Date.now, which the console reads for every sample) and
// the broker through the API, so each rate has an exact expected value:
// messages in and out per second per queue and per group, and a lag
// sparkline per group that grows a point per 30 s.
func TestConsoleShowsLiveRatesAndLagOverTime(t *testing.T) {
	f := newFixture(t)
	f.srv.Push(map[string]any{"queue": "fresh", "transactionId": "f-0", "payload": 0})
	p := newPage(t, f.srv.URL)
	p.signIn("/#/queues", f.admin)
	p.wait(`#queue-list tr[data-queue="fresh"]`)
	p.choose("#refresh", "0")
	p.do("own the clock", chromedp.Evaluate[chromedp.Void](`window.__now = Date.now() + 60000; Date.now = () => window.__now`))
	advance := func(secs int) {
		p.t.Helper()
		p.do("advance", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__now += %d`, secs*1000)))
	}
	refreshNow(p) // the baseline sample on the test's clock

	// 50 in and 20 out of fresh within 10 s.
	var items []map[string]any
	for i := 1; i <= 50; i++ {
		items = append(items, map[string]any{"queue": "fresh", "transactionId": fmt.Sprintf("f-%d", i), "payload": i})
	}
	f.srv.Push(items...)
	pop := f.srv.Pop("/api/v1/pop/queue/fresh?batch=20")
	if len(pop.Messages) != 20 {
		t.Fatalf("popped %d, want 20", len(pop.Messages))
	}
	for _, m := range pop.Messages {
		f.srv.Ack(m, "completed", "")
	}
	advance(10)
	refreshNow(p)
	if in, out := p.text(`#queue-list tr[data-queue="fresh"] td.rate-in`), p.text(`#queue-list tr[data-queue="fresh"] td.rate-out`); in != "5.00" || out != "2.00" {
		t.Fatalf("fresh in %q out %q per second, want 5.00 and 2.00", in, out)
	}
	if got := p.text(`#queue-list tr[data-queue="orders"] td.rate-in`); got != "0.00" {
		t.Fatalf("orders, untouched, in %q per second", got)
	}

	// billing on orders: 30 pushed and 10 consumed in 10 s, so its lag
	// grew by 20: it took in 3 and gave out 1 per second.
	p.show("#/groups", `#group-list tr[data-group="billing"]`)
	advance(10)
	refreshNow(p)
	items = nil
	for i := range 30 {
		items = append(items, map[string]any{"queue": "orders", "partition": "p0", "transactionId": fmt.Sprintf("more-%d", i), "payload": i})
	}
	f.srv.Push(items...)
	pop = f.srv.Pop("/api/v1/pop/queue/orders/partition/p0?batch=10&consumerGroup=billing")
	if len(pop.Messages) != 10 {
		t.Fatalf("billing popped %d, want 10", len(pop.Messages))
	}
	for _, m := range pop.Messages {
		f.srv.Ack(m, "completed", "billing")
	}
	advance(10)
	refreshNow(p)
	row := `#group-list tr[data-group="billing"]`
	if in, out := p.text(row+" td.rate-in"), p.text(row+" td.rate-out"); in != "3.00" || out != "1.00" {
		t.Fatalf("billing in %q out %q per second, want 3.00 and 1.00", in, out)
	}

	// Lag over time: a point per 30 s, the newest value named.
	lag := f.lag(t)
	total := lag["p0"] + lag["p1"]
	for range 3 {
		advance(30)
		refreshNow(p)
	}
	points := eval[int](p, `document.querySelector('`+row+` svg.spark polyline').getAttribute("points").trim().split(" ").length`)
	if points < 4 {
		t.Fatalf("the sparkline has %d points after four 30 s steps, want at least 4", points)
	}
	label := eval[string](p, `document.querySelector('`+row+` svg.spark').getAttribute("aria-label")`)
	if !strings.Contains(label, fmt.Sprintf("now %d", total)) {
		t.Fatalf("sparkline label %q, want the lag now (%d)", label, total)
	}
	// The group's own page shows the same, larger.
	p.show("#/groups/billing/orders", "#group-spark svg polyline")
	if got := p.text("#group-rate-in"); got != "3.00" && got != "0.00" {
		t.Fatalf("group page in rate = %q", got)
	}
	p.shot("group-live")
}
