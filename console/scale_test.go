package console_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/comb-broker/comb/internal/combtest"
)

// Scale of the walk an operator's console must stay quick at.
const (
	scaleQueues = 10000
	// More than one page of the broker's listings (1,000 rows), so the
	// console must follow pages to show them all.
	scalePartitions = 1200
)

// seedWide makes the queue "wide" of scalePartitions partitions of one
// message each, and gives the group "fleet" a cursor on every one of them,
// at its start.
func seedWide(t *testing.T, srv *combtest.Server) {
	t.Helper()
	var items []map[string]any
	for i := range scalePartitions {
		items = append(items, map[string]any{"queue": "wide", "partition": fmt.Sprintf("part-%04d", i),
			"transactionId": fmt.Sprintf("w%d", i), "payload": map[string]any{"i": i}})
	}
	srv.Push(items...)
	if r := srv.Do("POST", "/api/v1/consumer-groups/fleet/queues/wide/seek", map[string]any{"offset": 0}); r.Status != http.StatusOK {
		t.Fatalf("seek fleet: %d %s", r.Status, r.Body)
	}
}

// wideConsole seeds the queue "wide" on a new server and opens the
// console on a view that asks nothing of it, with refresh off.
func wideConsole(t *testing.T) *page {
	t.Helper()
	srv := combtest.MustServer(t, combtest.Options{})
	seedWide(t, srv)
	p := newPage(t, srv.URL)
	p.do("open console", chromedp.Navigate(srv.URL+"/#/snapshots"))
	p.wait("#snapshot-grid")
	p.choose("#refresh", "0")
	return p
}

// seedScale makes scaleQueues queues of one message each, and a queue
// "wide" of scalePartitions partitions on which the group "fleet" has a
// cursor in every partition, half of them behind.
func seedScale(t *testing.T, srv *combtest.Server) {
	t.Helper()
	start := time.Now()
	const batch = 1000
	for i := 0; i < scaleQueues-1; i += batch {
		var items []map[string]any
		for j := i; j < min(i+batch, scaleQueues-1); j++ {
			items = append(items, map[string]any{"queue": fmt.Sprintf("q%05d", j), "transactionId": "t",
				"payload": map[string]any{"n": j}})
		}
		srv.Push(items...)
	}
	var items []map[string]any
	for i := range scalePartitions {
		for k := range 2 {
			items = append(items, map[string]any{"queue": "wide", "partition": fmt.Sprintf("part-%04d", i),
				"transactionId": fmt.Sprintf("w%d-%d", i, k), "payload": map[string]any{"k": k}})
		}
	}
	srv.Push(items...)
	// A whole-group seek gives fleet a cursor on every partition; then half
	// are moved to the end so that the rest lag.
	if r := srv.Do("POST", "/api/v1/consumer-groups/fleet/queues/wide/seek", map[string]any{"offset": 0}); r.Status != http.StatusOK {
		t.Fatalf("seek fleet: %d %s", r.Status, r.Body)
	}
	for i := 0; i < scalePartitions; i += 2 {
		if r := srv.Do("POST", fmt.Sprintf("/api/v1/consumer-groups/fleet/queues/wide/partitions/part-%04d/seek", i),
			map[string]any{"toEnd": true}); r.Status != http.StatusOK {
			t.Fatalf("seek part-%04d: %d %s", i, r.Status, r.Body)
		}
	}
	t.Logf("seeded %d queues and a group over %d partitions in %v", scaleQueues, scalePartitions, time.Since(start).Round(time.Millisecond))
}

// measureJS opens a view through its hash and resolves with the
// milliseconds taken until the frame in which ready() held was painted,
// and until the frame in which whole() held (every row of the view's first
// pages drawn, where the view draws a screenful first) was painted. Each
// condition is checked in a frame before it is drawn. The clock starts
// after a frame painted with nothing in flight, so that the last view's
// own drawing (its rows drawn again with their rates once the last answer
// came) is not counted as the next view's.
const measureJS = `window.__open = async (hash, ready, whole) => {
	await new Promise((r) => requestAnimationFrame(() => setTimeout(r)));
	const t0 = performance.now();
	location.hash = hash;
	const deadline = t0 + 60000;
	const took = [];
	for (const cond of [ready, whole]) {
		while (!(await new Promise((r) => requestAnimationFrame(() => r(cond()))))) {
			if (performance.now() > deadline) throw new Error("not ready: " + hash);
		}
		await new Promise((r) => setTimeout(r)); // after that frame's paint
		took.push(performance.now() - t0);
	}
	return took;
}`

// fullJS says whether the rows sel finds fill the screen: there are n of
// them, or the last one reaches the bottom of the window (a table below it
// starts there or lower).
const fullJS = `window.__full = (sel, n) => { const rows = document.querySelectorAll(sel); return rows.length === n || (rows.length > 0 && rows[rows.length - 1].getBoundingClientRect().bottom >= innerHeight); }`

// keyLatencyJS records, for each key press in el, the time from the key
// event to the frame painted after the page handled it (__keys), and, for
// each value the filter took, the time from its input event to the frame
// painted after a table drew the rows of that value (__results(): the
// first screenful of them; __results(true): the whole page): what the
// operator waits for, answer from the broker included where the table
// asks it.
const keyLatencyJS = `if (!window.__inflight) {
	window.__inflight = 0;
	const f0 = window.fetch;
	window.fetch = (...a) => { window.__inflight++; return f0(...a).then((r) => r.clone().text().then(() => r)).finally(() => window.__inflight--); };
}
if (!window.__draws) {
	window.__draws = [];
	document.addEventListener("comb:drawn", (e) => { const q = e.detail.q, whole = e.detail.complete !== false; requestAnimationFrame(() => setTimeout(() => window.__draws.push({ q, whole, t: performance.now() }))); });
}
window.__keys = []; window.__inputs = []; window.__watchKeys = (el) => {
	el.addEventListener("keydown", (e) => {
		const t0 = e.timeStamp;
		requestAnimationFrame(() => setTimeout(() => window.__keys.push(performance.now() - t0)));
	});
	el.addEventListener("input", (e) => window.__inputs.push({ v: el.value, t0: e.timeStamp }));
};
window.__results = (whole) => window.__inputs.map((i) => { const d = window.__draws.find((d) => d.q === i.v && d.t >= i.t0 && (d.whole || !whole)); return d ? d.t - i.t0 : -1; })`

// TestConsoleStaysQuickAtTenThousandQueues walks the console as an operator
// would on a broker with 10,000 queues and a group over 1,200 partitions
// (more than the 1,000 rows one reply of the broker holds):
// every view opens, filters page and match, the URL keeps a filter across a
// reload, the seek dialog totals the preview with Apply in reach, and an
// auto-refresh keeps focus and scroll. It logs how long each view took to
// open and each key press in a filter took to paint; it asserts behaviour,
// not timings, which a shared machine cannot promise.
func TestConsoleStaysQuickAtTenThousandQueues(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 10,000 queues")
	}
	srv := combtest.MustServer(t, combtest.Options{})
	seedScale(t, srv)
	p := newPage(t, srv.URL)
	p.do("open console", chromedp.Navigate(srv.URL+"/#/snapshots"))
	p.wait("#snapshot-grid")
	p.do("install probes", chromedp.Evaluate[chromedp.Void](measureJS+";"+fullJS+";"+keyLatencyJS))
	p.choose("#refresh", "0") // views open and keys are timed with nothing else running

	open := func(name, hash, ready, whole string) {
		t.Helper()
		p.until(`window.__inflight === 0`) // the last view's answers are in
		ms := await[[]float64](p, fmt.Sprintf("window.__open(%q, () => %s, () => %s)", hash, ready, whole))
		t.Logf("open %-34s %7.0f ms, whole %7.0f ms", name, ms[0], ms[1])
	}
	// A view is open once its cards and the rows that fill the screen are
	// painted (ready); whole is every row of its tables' first pages.
	full := func(sel string) string { return fmt.Sprintf("__full(%q, 100)", sel) }
	views := []struct{ name, hash, ready, whole string }{
		{"overview (cards, top tables)", "#/overview", `document.querySelectorAll("#ov-cards .stat").length > 0 && !!document.querySelector("#ov-groups tbody a") && !!document.querySelector("#ov-queues tbody a")`, "true"},
		{"queues (10,000)", "#/queues", full("#queue-list tbody tr[data-queue]"), `document.querySelectorAll("#queue-list tbody tr[data-queue]").length === 100`},
		{"queue wide (1,200 partitions)", "#/queues/wide", full("#queue-partition-list tbody tr[data-key]") + " && " + full("#queue-group-list tbody tr[data-key]"),
			`document.querySelectorAll("#queue-partition-list tbody tr[data-key]").length === 100 && document.querySelectorAll("#queue-group-list tbody tr[data-key]").length === 100`},
		{"groups", "#/groups", `!!document.querySelector('#group-list tr[data-group="fleet"]') && ` + full("#group-lagging tbody tr[data-key]"),
			`document.querySelectorAll("#group-lagging tbody tr[data-key]").length === 100`},
		{"group fleet (1,200 partitions)", "#/groups/fleet/wide", full("#group-partition-list tbody tr[data-partition]"),
			`document.querySelectorAll("#group-partition-list tbody tr[data-partition]").length === 100`},
		{"messages", "#/messages", `document.querySelectorAll("#message-list tbody tr[data-txn]").length > 0`, "true"},
		{"dead letters", "#/dlq", `!!document.querySelector("#dlq-summary")?.textContent`, "true"},
		{"snapshots", "#/snapshots", `!!document.querySelector("#snapshot-grid-count")?.textContent`, "true"},
	}
	for round, label := range []string{"first", "again"} {
		for _, v := range views {
			open(label+": "+v.name, v.hash, v.ready, v.whole)
		}
		if round == 0 {
			// What the broker itself took for the lists, as the browser saw it.
			for _, api := range eval[[]string](p, `performance.getEntriesByType("resource").filter(e => e.name.includes("/api/v1/") && !e.name.includes("/dlq") && !e.name.includes("/messages")).map(e => new URL(e.name).pathname + " " + Math.round(e.responseEnd - e.requestStart) + " ms, " + Math.round(e.decodedBodySize / 1024) + " KiB")`) {
				t.Logf("  api %s", api)
			}
		}
	}

	// The queues list draws a page, and its filter narrows it per key.
	p.show("#/queues", `#queue-list tbody tr[data-queue]`)
	if got := p.text("#queue-list-count"); got != "10,000 queues" {
		t.Fatalf("queue count = %q", got)
	}
	p.until(`document.querySelectorAll("#queue-list tbody tr[data-queue]").length === 100`)
	if n := eval[int](p, `document.querySelectorAll("#queue-list tbody tr").length`); n != 100 {
		t.Fatalf("the queues view drew %d rows, want a page of 100", n)
	}
	keys := func(sel, text string) []float64 {
		t.Helper()
		// Typing starts on a settled page: nothing in flight, no rows still
		// to come of the page drawn last (a page turn's), a frame painted.
		p.until(`window.__inflight === 0 && !document.querySelector(".grid[data-rest]")`)
		await[bool](p, `new Promise((r) => requestAnimationFrame(() => setTimeout(() => r(true))))`) // and painted
		p.do("watch keys", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__keys = []; window.__watchKeys(document.querySelector(%q))`, sel)))
		p.do("type "+text, chromedp.Click(chromedp.CSS(sel)), chromedp.SendKeys(chromedp.CSS(sel), text))
		p.until(fmt.Sprintf(`window.__keys.length === %d`, len(text)))
		// The last value's rows painted; an earlier value's answer may have
		// been overtaken by a newer one and never drawn (-1).
		p.until(`window.__inflight === 0 && window.__results(true).at(-1) >= 0`)
		return eval[[]float64](p, `window.__keys`)
	}
	results := func(whole bool) []float64 { return eval[[]float64](p, fmt.Sprintf(`window.__results(%v)`, whole)) }
	lat := keys("#queue-filter", "q0999")
	res, resWhole := results(false), results(true)
	// The baseline, in the same page a moment later: drawing every
	// queue's row, as the view did on each key press before it paged.
	// Taken after the keys: putting the 10,000 rows back out of the page
	// takes a frame of 0.5 s of its own, which a key pressed right after
	// the baseline waited for.
	base := await[float64](p, `(async () => {
		const rows = [...document.querySelectorAll("#queue-list tbody tr")];
		const t0 = performance.now();
		const tb = document.createElement("tbody");
		for (let i = 0; i < 10000; i++) {
			const tr = document.createElement("tr");
			for (let c = 0; c < 8; c++) { const td = document.createElement("td"); td.textContent = "q" + i + "/" + c; tr.appendChild(td); }
			tb.appendChild(tr);
		}
		const old = document.querySelector("#queue-list tbody");
		old.replaceWith(tb);
		await new Promise((r) => requestAnimationFrame(() => setTimeout(r)));
		const ms = performance.now() - t0;
		tb.replaceWith(old);
		return ms;
	})()`)
	t.Logf("baseline, all 10,000 rows drawn once: %.0f ms", base)
	t.Logf("queues filter, key to paint per key (ms): %s; worst/baseline %.2f", fmtMs(lat), slices.Max(lat)/base)
	t.Logf("queues filter, key to its rows painted (ms): %s; whole page %s", fmtMs(res), fmtMs(resWhole))
	p.until(`document.querySelectorAll("#queue-list tbody tr[data-queue]").length === 9`)
	if got := p.text("#queue-list-count"); got != "9 of 10,000 queues match" {
		t.Fatalf("queue count after filtering = %q", got)
	}
	if got := eval[string](p, `location.hash`); got != "#/queues?q=q0999" {
		t.Fatalf("hash after filtering = %q, want the filter in it", got)
	}
	// A reload (or a shared link) shows the same filtered view.
	p.do("reload", chromedp.Reload())
	p.until(`document.querySelectorAll("#queue-list tbody tr[data-queue]").length === 9`)
	if got := eval[string](p, `document.querySelector("#queue-filter").value`); got != "q0999" {
		t.Fatalf("filter after reload = %q", got)
	}
	p.do("install probes", chromedp.Evaluate[chromedp.Void](measureJS+";"+fullJS+";"+keyLatencyJS))
	// The reload turned auto-refresh back on: off, so that keys are timed
	// with nothing else running, as above.
	p.choose("#refresh", "0")

	// The queue's and the group's 1,200 partitions all came, pages followed,
	// and so did what the first paint did not wait for: the queue's
	// configuration and retention figures, and the overview's chart.
	p.show("#/queues/wide", `#queue-partition-list tbody tr[data-key]`)
	p.until(`document.querySelector("#queue-partition-list-count")?.textContent === "1,200 partitions" &&
		document.querySelector("#queue-group-list-count")?.textContent === "1,200 cursors" &&
		document.querySelector("#queue-config").textContent.includes("retention seconds")`)
	p.show("#/overview", "#ov-groups tbody a")
	p.until(`document.querySelectorAll("#ov-chart polyline").length === 2`)
	// The group's 1,200 partitions: a page, a filter, the next page.
	p.show("#/groups/fleet/wide", `#group-partition-list tbody tr[data-partition]`)
	if got := p.text("#group-partition-list-count"); got != "1,200 partitions" {
		t.Fatalf("partition count = %q", got)
	}
	p.click("#group-partition-list-next")
	p.until(`!!document.querySelector('#group-partition-list tr[data-partition="part-0100"]')`)
	if got := p.text("#group-partition-list-page"); got != "101–200 of 1,200" {
		t.Fatalf("second page reads %q", got)
	}
	p.click("#group-partition-list-prev")
	p.until(`!!document.querySelector('#group-partition-list tr[data-partition="part-0000"]')`)
	lat = keys("#group-partition-list-filter", "part-099")
	t.Logf("group partitions filter, key to paint per key (ms): %s", fmtMs(lat))
	t.Logf("group partitions filter, key to its rows painted (ms): %s; whole page %s", fmtMs(results(false)), fmtMs(results(true)))
	p.until(`document.querySelectorAll("#group-partition-list tbody tr[data-partition]").length === 10`)
	// The filter shows rows it drew before without drawing them again: a
	// key press that brings back rows already built costs no DOM work. (A
	// refresh draws rows anew: auto-refresh is off since the reload.)
	p.until(`window.__inflight === 0`)
	p.do("mark a row", chromedp.Evaluate[chromedp.Void](`document.querySelector('#group-partition-list tr[data-partition="part-0990"]').__mark = true`))
	p.filter("#group-partition-list-filter", "part-09", "#group-partition-list-count", "100 of 1,200 partitions match")
	p.filter("#group-partition-list-filter", "part-099", "#group-partition-list-count", "10 of 1,200 partitions match")
	if !eval[bool](p, `document.querySelector('#group-partition-list tr[data-partition="part-0990"]').__mark === true`) {
		t.Fatal("the filter drew again a row it had drawn before")
	}

	// Seek the whole group: totals first, and Apply in reach.
	p.click("#seek-open")
	p.click("#seek-preview-btn")
	p.wait("#seek-totals")
	// The reply lists 1,000 partitions; the totals are the server's, of
	// all 1,200.
	if got := p.text("#seek-totals"); !strings.Contains(got, "1,200 partition(s)") || !strings.Contains(got, "skip 600") ||
		!strings.Contains(got, "the first 1,000 are listed") {
		t.Fatalf("seek totals = %q, want 1,200 partitions skipping 600, the first 1,000 listed", got)
	}
	if n := eval[int](p, `document.querySelectorAll(".seek-result tbody tr").length`); n != 50 {
		t.Fatalf("the preview drew %d rows, want a page of 50", n)
	}
	if !eval[bool](p, `(() => { const r = document.querySelector("#seek-apply").getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight && !document.querySelector("#seek-apply").disabled; })()`) {
		t.Fatal("Apply is out of reach (or disabled) after the preview of 1,200 partitions")
	}
	p.click("#seek-cancel")
	p.do("dialog closes", chromedp.WaitNotPresent(chromedp.CSS("dialog[open]")))

	// Auto-refresh keeps keyboard focus and the scroll position.
	p.show("#/queues", `#queue-list tbody tr[data-queue]`)
	p.do("clear filter", chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector("#queue-filter"); f.value = ""; f.dispatchEvent(new Event("input")); })()`))
	p.until(`document.querySelectorAll("#queue-list tbody tr[data-queue]").length === 100`)
	p.do("focus a row", chromedp.Evaluate[chromedp.Void](`(() => {
		const a = document.querySelectorAll("#queue-list tbody tr[data-queue] a")[60];
		a.focus(); a.__before = true; window.scrollTo(0, 1500);
	})()`))
	focused := eval[string](p, `document.activeElement.textContent`)
	y := eval[float64](p, `scrollY`)
	if y < 1000 {
		t.Fatalf("page scrolled only to %v", y)
	}
	refreshNow(p)
	if !eval[bool](p, `document.activeElement.tagName === "A" && !document.activeElement.__before`) {
		t.Fatal("the refresh did not redraw the focused row (the check would prove nothing)")
	}
	if got := eval[string](p, `document.activeElement.textContent`); got != focused {
		t.Fatalf("focus after refresh on %q, want %q", got, focused)
	}
	if got := eval[float64](p, `scrollY`); got != y {
		t.Fatalf("scroll after refresh = %v, want %v", got, y)
	}
	p.do("focus filter", chromedp.Evaluate[chromedp.Void](`document.querySelector("#queue-filter").focus()`))
	refreshNow(p)
	if got := eval[string](p, `document.activeElement.id`); got != "queue-filter" {
		t.Fatalf("focus after refresh on #%s, want the filter", got)
	}
}

// TestConsoleDrawsTheFirstRowsWhileTheRestCome opens a queue and a group
// over 1,200 partitions (two pages of the broker's listings) on a console
// that has seen nothing yet, with every page after the first held back:
// the first rows are drawn, and the counts say more are coming, until the
// rest arrive.
func TestConsoleDrawsTheFirstRowsWhileTheRestCome(t *testing.T) {
	p := wideConsole(t)
	// Pages after the first (offset or after given) wait until __release().
	p.do("hold later pages", chromedp.Evaluate[chromedp.Void](`(() => {
		let release; const held = new Promise((r) => { release = r; });
		window.__release = release;
		const f0 = window.fetch;
		window.fetch = (url, ...a) => /[?&](offset|after)=/.test(String(url)) ? held.then(() => f0(url, ...a)) : f0(url, ...a);
	})()`))
	for _, v := range []struct{ hash, rows, counts, partial, whole string }{
		{"#/groups/fleet/wide", "#group-partition-list tbody tr[data-partition]", "#group-partition-list-count",
			"100 partitions so far, loading more…", "1,200 partitions"},
		{"#/queues/wide", "#queue-partition-list tbody tr[data-key]", "#queue-partition-list-count",
			"100 partitions so far, loading more…", "1,200 partitions"},
		{"#/queues/wide", "#queue-group-list tbody tr[data-key]", "#queue-group-list-count",
			"100 cursors so far, loading more…", "1,200 cursors"},
	} {
		p.show(v.hash, v.rows)
		p.until(fmt.Sprintf(`document.querySelectorAll(%q).length === 100`, v.rows))
		if got := p.text(v.counts); got != v.partial {
			t.Fatalf("%s while the rest is held: %q, want %q", v.counts, got, v.partial)
		}
	}
	p.do("release", chromedp.Evaluate[chromedp.Void](`window.__release()`))
	p.until(`document.querySelector("#queue-partition-list-count").textContent === "1,200 partitions" && document.querySelector("#queue-group-list-count").textContent === "1,200 cursors"`)
	p.show("#/groups/fleet/wide", "#group-partition-list tbody tr[data-partition]")
	p.until(`document.querySelector("#group-partition-list-count").textContent === "1,200 partitions"`)
}

// refreshNow presses the refresh button and waits for the view to finish.
func refreshNow(p *page) {
	p.t.Helper()
	await[bool](p, `(() => { const done = new Promise((r) => document.addEventListener("comb:refreshed", () => r(true), { once: true }));
		document.querySelector("#refresh-now").click(); return done; })()`)
}

func fmtMs(v []float64) string {
	parts := make([]string, len(v))
	worst := 0.0
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.0f", x)
		worst = max(worst, x)
	}
	return strings.Join(parts, " ") + fmt.Sprintf(" (worst %.0f)", worst)
}
