package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// labelled is JavaScript that lists the inputs and selects in the page that
// have no accessible name (no <label> and no aria-label).
const unlabelled = `[...document.querySelectorAll("input, select, textarea")].filter(e => e.type !== "hidden" && !e.hidden && e.labels.length === 0 && !e.getAttribute("aria-label")).map(e => e.id || e.outerHTML.slice(0, 60))`

// numericHeadersAlign is JavaScript that lists the tables whose header
// alignment differs from the cells below it.
const misaligned = `[...document.querySelectorAll("#main table")].filter(t => {
	const hs = t.tHead.rows[0].cells, r = t.tBodies[0].rows[0];
	if (!r || r.cells.length !== hs.length) return false;
	return [...hs].some((th, i) => (getComputedStyle(th).textAlign === "right") !== (getComputedStyle(r.cells[i]).textAlign === "right"));
}).map(t => t.closest("[id]").id)`

func TestConsoleMeetsAnOperatorsExpectations(t *testing.T) {
	f := newFixture(t)
	// A dead letter with a payload longer than the table shows.
	long := strings.Repeat("abcdefghij", 40)
	f.srv.Push(map[string]any{"queue": "bulky", "transactionId": "big-1", "payload": map[string]any{"text": long}})
	pop := f.srv.Pop("/api/v1/pop/queue/bulky?batch=1")
	if len(pop.Messages) != 1 {
		t.Fatalf("popped %d from bulky", len(pop.Messages))
	}
	m := pop.Messages[0]
	if r := f.srv.Do("POST", "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
		"leaseId": m.LeaseID, "status": "dlq", "error": "too big"}); r.Status != http.StatusOK {
		t.Fatalf("dlq ack: %d %s", r.Status, r.Body)
	}
	// A message with a traceId to find it by.
	const trace = "3b241101-e2bb-4255-8caf-4136c566a962"
	f.srv.Push(map[string]any{"queue": "orders", "partition": "p0", "transactionId": "traced-1", "traceId": trace, "payload": map[string]any{"t": 1}})

	p := newPage(t, f.srv.URL)
	p.signIn("/#/groups", f.admin)

	// Queue mode is not a group: listed apart, under its meaning.
	p.wait(`#group-list tr[data-group="billing"]`)
	p.wait(`#queue-mode tr[data-group="__QUEUE_MODE__"][data-queue="payments"]`)
	if got := p.text(`#queue-mode tr[data-queue="payments"] td`); got != "queue mode (no group)" {
		t.Fatalf("queue-mode row reads %q", got)
	}
	if n := eval[int](p, `document.querySelectorAll('#group-list tr[data-group="__QUEUE_MODE__"]').length`); n != 0 {
		t.Fatal("queue mode is listed among the groups")
	}
	if got := p.text("#group-list-count"); got != "1 groups" {
		t.Fatalf("group count = %q, want 1 (billing)", got)
	}
	// Lagging partitions link to their group and queue.
	p.wait(`#group-lagging .group-link`)
	if bad := eval[[]string](p, misaligned); len(bad) != 0 {
		t.Fatalf("numeric headers not over their numbers in %v", bad)
	}
	if bad := eval[[]string](p, unlabelled); len(bad) != 0 {
		t.Fatalf("inputs without a label on the groups view: %v", bad)
	}
	// Every table's own filter narrows it and says by how much.
	p.filter("#group-lagging-filter", "p1", "#group-lagging-count", "1 of 2 partitions match")
	p.filter("#queue-mode-list-filter", "nothing", "#queue-mode-list-count", "0 of 2 queues match")
	p.filter("#queue-mode-list-filter", "bulky", "#queue-mode-list-count", "1 of 2 queues match")
	p.filter("#group-list-filter", "orders", "#group-list-count", "1 groups")
	p.filter("#group-lagging-filter", "", "#group-lagging-count", "2 partitions")
	p.click(`#group-lagging tr[data-key^="billing"] .group-link`)
	p.until(`location.hash.startsWith("#/groups/billing/orders")`)
	// A committed offset of -1 means nothing consumed yet.
	p.wait(`#group-partitions tr[data-partition="p1"] td.committed`)
	if got := p.text(`#group-partitions tr[data-partition="p1"] td.committed`); got != "nothing consumed" {
		t.Fatalf("p1's committed offset reads %q", got)
	}
	p.show("#/groups", `#group-lagging .queue-link`)
	p.click(`#group-lagging tr[data-key^="billing"] .queue-link`)
	p.until(`location.hash === "#/queues/orders"`)
	p.wait(`#queue-group-list tbody tr[data-key]`)
	p.filter("#queue-partition-list-filter", "p0", "#queue-partition-list-count", "1 of 2 partitions match")
	p.filter("#queue-group-list-filter", "p1", "#queue-group-list-count", "1 of 2 cursors match")
	if got := eval[string](p, `location.hash`); got != "#/queues/orders?pq=p0&gq=p1" {
		t.Fatalf("hash with two filters = %q", got)
	}
	if bad := eval[[]string](p, misaligned); len(bad) != 0 {
		t.Fatalf("numeric headers not over their numbers in %v", bad)
	}

	// The overview counts billing alone as a group.
	p.show("#/overview", "#ov-cards .stat")
	p.until(`[...document.querySelectorAll("#ov-cards .stat")].some(s => s.textContent === "1groups")`)

	// Sortable columns, with the sort in the URL.
	p.show("#/queues", `#queue-list tr[data-queue="orders"]`)
	p.click(`#queue-list th[data-col="pending"] button`)
	p.until(`document.querySelector('#queue-list th[data-col="pending"]').getAttribute("aria-sort") === "descending"`)
	if got := eval[string](p, `document.querySelector("#queue-list tbody tr").dataset.queue`); got != "orders" {
		t.Fatalf("most pending first = %q, want orders", got)
	}
	p.click(`#queue-list th[data-col="pending"] button`)
	p.until(`document.querySelector('#queue-list th[data-col="pending"]').getAttribute("aria-sort") === "ascending"`)
	if got := eval[string](p, `document.querySelector("#queue-list tbody tr").dataset.queue`); got == "orders" {
		t.Fatal("ascending pending still starts with orders")
	}
	p.click(`#queue-list th[data-col="name"] button`)
	p.until(`location.hash.includes("sort=name")`)
	p.do("reload", chromedp.Reload())
	p.until(`document.querySelector('#queue-list th[data-col="name"]')?.getAttribute("aria-sort") === "ascending"`)
	if got := eval[[]string](p, `[...document.querySelectorAll("#queue-list tbody tr")].map(r => r.dataset.queue)`); strings.Join(got, ",") != "bulky,orders,payments" {
		t.Fatalf("queues by name after a reload = %v", got)
	}
	if bad := eval[[]string](p, misaligned); len(bad) != 0 {
		t.Fatalf("numeric headers not over their numbers in %v", bad)
	}

	// Dead letters: the filter in the URL, distinct names on the row
	// boxes, the payload cut with an ellipsis and opened in full.
	p.show("#/dlq", "#dlq-filter")
	p.fill("#dlq-queue", "payments")
	p.click(`#dlq-filter button[type="submit"]`)
	p.until(`document.querySelector("#dlq-summary").textContent.startsWith("6 ")`)
	if got := eval[string](p, `location.hash`); got != "#/dlq?queue=payments" {
		t.Fatalf("hash = %q", got)
	}
	p.do("reload", chromedp.Reload())
	p.until(`document.querySelector("#dlq-summary")?.textContent.startsWith("6 ")`)
	if got := eval[string](p, `document.querySelector("#dlq-queue").value`); got != "payments" {
		t.Fatalf("queue filter after reload = %q", got)
	}
	names := eval[[]string](p, `[...document.querySelectorAll(".dlq-pick")].map(c => c.getAttribute("aria-label"))`)
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || !strings.Contains(n, "payments") {
			t.Fatalf("row checkbox names are not distinct: %q", names)
		}
		seen[n] = true
	}
	if len(names) != 6 {
		t.Fatalf("%d row checkboxes, want 6", len(names))
	}
	if bad := eval[[]string](p, unlabelled); len(bad) != 0 {
		t.Fatalf("inputs without a label on the dead-letter view: %v", bad)
	}
	p.fill("#dlq-queue", "bulky")
	p.click(`#dlq-filter button[type="submit"]`)
	p.until(`document.querySelector("#dlq-summary").textContent.startsWith("1 ")`)
	p.wait("#dlq-list tbody tr .dlq-open")
	cell := p.text("#dlq-list tbody tr code.clip")
	if !strings.HasSuffix(cell, "…") || len([]rune(cell)) > 160 || !strings.Contains(cell, "abcdefghij") {
		t.Fatalf("payload cell = %q, want it cut with an ellipsis", cell)
	}
	p.click("#dlq-list tbody tr .dlq-open")
	p.wait("#dlq-payload")
	var shown map[string]string
	if err := json.Unmarshal([]byte(p.text("#dlq-payload")), &shown); err != nil || shown["text"] != long {
		t.Fatalf("full payload shown as %q (%v)", p.text("#dlq-payload"), err)
	}
	p.click("#dlq-payload-close")
	p.do("dialog closes", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))

	// Find a message by transactionId, then by traceId; the search is in
	// the URL too.
	p.show("#/messages", "#message-filter")
	if bad := eval[[]string](p, unlabelled); len(bad) != 0 {
		t.Fatalf("inputs without a label on the messages view: %v", bad)
	}
	p.fill("#msg-find", "p1-07")
	p.click("#msg-find-go")
	p.until(`document.querySelector("#message-detail h2")?.textContent === "Message p1-07"`)
	if got := eval[string](p, `location.hash`); !strings.Contains(got, "find=p1-07") {
		t.Fatalf("hash after find = %q", got)
	}
	p.fill("#msg-find", trace)
	p.click("#msg-find-go")
	p.until(`document.querySelector("#message-detail h2")?.textContent === "Message traced-1"`)
	if got := p.text("#message-detail dl"); !strings.Contains(got, trace) {
		t.Fatalf("found message detail = %q", got)
	}
	p.fill("#msg-find", "no-such-id")
	p.click("#msg-find-go")
	p.wait("#message-not-found")
	p.do("reload", chromedp.Reload())
	p.wait("#message-not-found")
	if got := eval[string](p, `document.querySelector("#msg-find").value`); got != "no-such-id" {
		t.Fatalf("find after reload = %q", got)
	}

	// Every other view's inputs have labels too.
	for _, v := range []struct{ hash, ready string }{{"#/queues", "#queue-filter"}, {"#/snapshots", "#snap-name"},
		{"#/queues/orders", "#queue-partition-list-filter"}, {"#/groups/billing/orders", "#group-partition-list-filter"}} {
		p.show(v.hash, v.ready)
		if bad := eval[[]string](p, unlabelled); len(bad) != 0 {
			t.Fatalf("inputs without a label on %s: %v", v.hash, bad)
		}
	}
	p.click("#seek-open")
	p.wait("#seek-mode")
	p.click("#seek-preview-btn")
	p.wait("#seek-result-filter")
	p.filter("#seek-result-filter", "p1", "#seek-result-count", "1 of 2 partitions match")
	if bad := eval[[]string](p, unlabelled); len(bad) != 0 {
		t.Fatalf("inputs without a label in the seek dialog: %v", bad)
	}
	p.click("#seek-cancel")
	p.do("dialog closes", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
	p.show("#/snapshots", `tr[data-snapshot="before-replay"]`)
	p.filter("#snapshot-grid-filter", "deploy", "#snapshot-grid-count", "1 snapshots")
	p.filter("#snapshot-grid-filter", "nope", "#snapshot-grid-count", "0 of 1 snapshots match")

	// Dark mode follows the system's choice.
	light := eval[string](p, `getComputedStyle(document.documentElement).backgroundColor`)
	setScheme(t, p, "dark")
	if got := eval[string](p, `getComputedStyle(document.documentElement).backgroundColor`); got == light || got != "rgb(18, 22, 27)" {
		t.Fatalf("dark background = %q (light %q)", got, light)
	}
	p.shot("dark")
	setScheme(t, p, "light")
	if got := eval[string](p, `getComputedStyle(document.documentElement).backgroundColor`); got != light {
		t.Fatalf("light again = %q, want %q", got, light)
	}
}

// filter types text into a table's filter and waits for its count.
func (p *page) filter(sel, text, countSel, want string) {
	p.t.Helper()
	p.fill(sel, text)
	if text == "" {
		p.do("clear "+sel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).dispatchEvent(new Event("input"))`, sel)))
	}
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector(%q)?.textContent === %q`, countSel, want), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		p.t.Fatalf("%s after typing %q into %s: %q, want %q", countSel, text, sel, eval[string](p, fmt.Sprintf(`document.querySelector(%q)?.textContent + " / " + document.querySelector(%q)?.value`, countSel, sel)), want)
	}
}

func setScheme(t *testing.T, p *page, scheme string) {
	t.Helper()
	if _, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatalf("emulate %s: %v", scheme, err)
	}
}
