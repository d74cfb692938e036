package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/comb-broker/comb/internal/combtest"
)

// choose sets a select to value and fires change, as a person's pick does.
func (p *page) choose(sel, value string) {
	p.t.Helper()
	p.do("choose "+value+" in "+sel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event("change")); })()`, sel, value)))
}

// committed is billing's committed offset on orders per partition, as the
// group route reports it.
func (f *fixture) committed(t *testing.T) map[string]float64 {
	t.Helper()
	var out map[string]struct {
		Partitions []map[string]any `json:"partitions"`
	}
	f.srv.Do("GET", "/api/v1/consumer-groups/billing", nil).JSON(t, &out)
	c := map[string]float64{}
	for _, p := range out["orders"].Partitions {
		if v, ok := p["committedOffset"].(float64); ok {
			c[p["partition"].(string)] = v
		}
	}
	return c
}

func TestConsoleSeeksByTimeEditsAndDeletesInABrowser(t *testing.T) {
	f := newFixture(t)
	p := newPage(t, f.srv.URL)
	p.signIn("/#/groups/billing/orders", f.admin)

	// The group detail shows committed offsets from the read-only route.
	p.wait(`#group-partitions tr[data-partition="p0"] td.committed`)
	if got := p.text(`#group-partitions tr[data-partition="p0"] td.committed`); got != "5" {
		t.Fatalf("committed offset of p0 shown as %q, want 5", got)
	}

	// A time seek to long before the first message: the preview moves
	// nothing, the apply rewinds p0 to its start.
	p.click("#seek-open")
	p.choose("#seek-mode", "time")
	p.fill("#seek-time", "2001-01-01T00:00:00Z")
	p.click("#seek-preview-btn")
	p.wait(`.seek-result tr[data-partition="p0"]`)
	if got := p.text(`.seek-result tr[data-partition="p0"]`); !strings.Contains(got, "5 → -1") {
		t.Fatalf("time preview of p0 = %q, want 5 → -1", got)
	}
	if got := f.committed(t); got["p0"] != 5 || got["p1"] != -1 {
		t.Fatalf("committed after a time preview = %v, want p0 5, p1 -1", got)
	}
	p.shot("seek-time-preview")
	p.click("#seek-apply")
	p.do("dialog closes", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
	if got := f.committed(t); got["p0"] != -1 || got["p1"] != -1 {
		t.Fatalf("committed after the time seek = %v, want -1 on both", got)
	}
	if got := f.lag(t); got["p0"] != 20 || got["p1"] != 21 {
		t.Fatalf("lag after the time seek = %v, want p0 20, p1 21", got)
	}
	p.until(`document.querySelector('#group-partitions tr[data-partition="p0"] td.committed').textContent === "nothing consumed"`)

	// Edit a snapshot's labels and expiry.
	p.show("#/snapshots", `tr[data-snapshot="before-replay"] .edit-snapshot`)
	p.click(`tr[data-snapshot="before-replay"] .edit-snapshot`)
	p.wait("#edit-labels")
	p.fill("#edit-labels", "reason=rollback, team=ops")
	p.fill("#edit-expire", "2030-01-02T03:04:05.000Z")
	p.click("#edit-save")
	p.do("dialog closes", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
	p.until(`document.querySelector('tr[data-snapshot="before-replay"]').textContent.includes("team=ops")`)
	snap := f.srv.Do("GET", "/api/v1/snapshots/before-replay", nil).Map(t)
	labels, _ := snap["labels"].(map[string]any)
	if labels["reason"] != "rollback" || labels["team"] != "ops" || len(labels) != 2 || snap["expireTime"] != "2030-01-02T03:04:05.000Z" {
		t.Fatalf("snapshot after the edit = %v", snap)
	}
	// A bad expiry is refused in the dialog and changes nothing.
	p.click(`tr[data-snapshot="before-replay"] .edit-snapshot`)
	p.fill("#edit-expire", "next tuesday")
	p.click("#edit-save")
	p.until(`document.querySelector("dialog[open] .error").textContent !== ""`)
	p.click("dialog[open] .actions button:not(.primary)")
	p.do("dialog closes", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
	if again := f.srv.Do("GET", "/api/v1/snapshots/before-replay", nil).Map(t); again["expireTime"] != "2030-01-02T03:04:05.000Z" {
		t.Fatalf("a refused edit changed the expiry: %v", again)
	}

	// Delete the snapshot.
	p.click(`tr[data-snapshot="before-replay"] .delete-snapshot`)
	p.click("#confirm-ok")
	p.do("snapshot row goes", chromedp.WaitNotPresent(chromedp.CSS(`tr[data-snapshot="before-replay"]`)))
	if r := f.srv.Do("GET", "/api/v1/snapshots/before-replay", nil); r.Status != http.StatusNotFound {
		t.Fatalf("snapshot after delete: %d %s, want 404", r.Status, r.Body)
	}

	// Delete one message.
	var msgs struct {
		Messages []struct {
			PartitionID   string `json:"partitionId"`
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	f.srv.Do("GET", "/api/v1/messages?queue=orders&limit=100", nil).JSON(t, &msgs)
	var msgPath string
	for _, m := range msgs.Messages {
		if m.TransactionID == "p0-19" {
			msgPath = "/api/v1/messages/" + url.PathEscape(m.PartitionID) + "/p0-19"
		}
	}
	if msgPath == "" {
		t.Fatalf("p0-19 not listed: %+v", msgs)
	}
	p.show("#/messages", "#message-filter")
	p.fill("#msg-queue", "orders")
	p.click(`#message-filter button[type="submit"]`)
	p.wait(`tr[data-txn="p0-19"] .open-message`)
	p.click(`tr[data-txn="p0-19"] .open-message`)
	p.wait("#message-delete")
	p.click("#message-delete")
	p.click("#confirm-ok")
	p.do("message row goes", chromedp.WaitNotPresent(chromedp.CSS(`tr[data-txn="p0-19"]`)))
	if r := f.srv.Do("GET", msgPath, nil); r.Status != http.StatusNotFound {
		t.Fatalf("message after delete: %d %s, want 404", r.Status, r.Body)
	}
	if r := f.srv.Do("GET", "/api/v1/messages?queue=orders&limit=100", nil); strings.Count(string(r.Body), `"transactionId"`) != len(msgs.Messages)-1 {
		t.Fatalf("deleting one message removed more: %s", r.Body)
	}

	// DLQ purge: selected rows first, then everything matching, total shown first.
	p.show("#/dlq", "#dlq-filter")
	p.fill("#dlq-queue", "payments")
	p.click(`#dlq-filter button[type="submit"]`)
	p.until(`document.querySelector("#dlq-summary").textContent.startsWith("6 ")`)
	p.click("#dlq-list tbody tr .dlq-pick")
	p.click("#dlq-purge-selected")
	p.click("#confirm-ok")
	p.until(`document.querySelector("#dlq-result").textContent.includes("deleted 1,")`)
	if got := f.dlqTotal(t, "payments"); got != 5 {
		t.Fatalf("dead letters after purging one = %d, want 5", got)
	}
	p.until(`document.querySelector("#dlq-summary").textContent.startsWith("5 ")`)
	p.click("#dlq-purge-all")
	p.wait("#confirm-ok")
	if got := p.text("dialog[open] p"); !strings.HasPrefix(got, "5 dead letter(s) match.") {
		t.Fatalf("purge confirmation = %q, want the total first", got)
	}
	p.click("#confirm-cancel")
	p.do("dialog closes", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
	if got := f.dlqTotal(t, "payments"); got != 5 {
		t.Fatalf("a cancelled purge deleted something: %d left", got)
	}
	// With no filter the purge means every dead letter: the name must be typed.
	p.fill("#dlq-queue", "")
	p.click("#dlq-purge-all")
	p.wait("#confirm-typed")
	if got := p.text("dialog[open] p"); !strings.Contains(got, "every dead letter") {
		t.Fatalf("unfiltered purge confirmation = %q", got)
	}
	if !eval[bool](p, `document.querySelector("#confirm-ok").disabled`) {
		t.Fatal("an unfiltered purge is offered without typing")
	}
	p.click("#confirm-cancel")
	p.do("dialog closes", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))
	p.fill("#dlq-queue", "payments")
	p.click("#dlq-purge-all")
	p.click("#confirm-ok")
	p.until(`document.querySelector("#dlq-result").textContent.includes("deleted 5, remaining 0")`)
	p.shot("dlq-purged")
	if got := f.dlqTotal(t, "payments"); got != 0 {
		t.Fatalf("dead letters after purging all = %d, want 0", got)
	}
	if got := p.text("#dlq-summary"); !strings.HasPrefix(got, "0 ") {
		t.Fatalf("summary after the purge = %q", got)
	}

	// Deleting a group needs its name typed.
	p.show("#/groups/billing/orders", "#group-delete")
	p.click("#group-delete")
	p.fill("#confirm-typed", "billin")
	if !eval[bool](p, `document.querySelector("#confirm-ok").disabled`) {
		t.Fatal("delete is enabled with a name that is not the group's")
	}
	p.fill("#confirm-typed", "billing")
	p.click("#confirm-ok")
	p.until(`location.hash === "#/groups"`)
	if r := f.srv.Do("GET", "/api/v1/consumer-groups/billing", nil); r.Status != http.StatusOK || string(r.Body) != "{}" {
		t.Fatalf("group after delete: %d %s, want {}", r.Status, r.Body)
	}
}

// TestConsoleAutoRefreshPausesWhileTheTabIsHidden drives the page's own
// visibilitychange handler: the document reports hidden, the event fires,
// and no refresh runs for many intervals until the tab is visible again.
// The test adds a 0.2 s choice to the refresh menu so that many intervals
// pass in little time; the schedule is the console's own.
func TestConsoleAutoRefreshPausesWhileTheTabIsHidden(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	srv.Push(map[string]any{"queue": "first", "transactionId": "t1", "payload": 1})
	p := newPage(t, srv.URL)
	p.do("open console", chromedp.Navigate(srv.URL+"/#/queues"))
	p.wait(`#queue-list tr[data-queue="first"]`)

	const fetches = `performance.getEntriesByType("resource").filter(e => new URL(e.name).pathname === "/api/v1/resources/queues").length`
	p.do("fast refresh", chromedp.Evaluate[chromedp.Void](`document.querySelector("#refresh").append(new Option("0.2 s", "0.2"))`))
	p.choose("#refresh", "0.2")
	// Visible: a queue created behind the page's back shows up by itself.
	srv.Push(map[string]any{"queue": "second", "transactionId": "t2", "payload": 2})
	p.wait(`#queue-list tr[data-queue="second"]`)

	setVisibility := func(state string) {
		p.t.Helper()
		p.do("visibility "+state, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			Object.defineProperty(document, "visibilityState", { configurable: true, get: () => %q });
			Object.defineProperty(document, "hidden", { configurable: true, get: () => %q === "hidden" });
			document.dispatchEvent(new Event("visibilitychange"));
			window.__hiddenAt = Date.now();
		})()`, state, state)))
	}
	setVisibility("hidden")
	// A refresh in flight when the tab was hidden lands first: its request
	// may reach the broker after a push made now.
	p.until(`Date.now() - window.__hiddenAt > 1000`)
	before := eval[int](p, fetches)
	srv.Push(map[string]any{"queue": "third", "transactionId": "t3", "payload": 3})
	// Two seconds more on the page's clock: ten intervals.
	p.until(`Date.now() - window.__hiddenAt > 3000`)
	if after := eval[int](p, fetches); after > before {
		t.Fatalf("%d refreshes ran while the tab was hidden", after-before)
	}
	if n := eval[int](p, `document.querySelectorAll('#queue-list tr[data-queue="third"]').length`); n != 0 {
		t.Fatal("the hidden tab refreshed its view")
	}
	setVisibility("visible")
	p.wait(`#queue-list tr[data-queue="third"]`)
	if after := eval[int](p, fetches); after <= before {
		t.Fatal("visible again, yet no refresh ran")
	}
}
