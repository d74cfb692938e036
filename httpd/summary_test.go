package httpd_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// backgroundSumWait is how long a test waits for a sum the refresher
// makes. The refresher rests four times as long as its last round took,
// and under the race detector a round over a few thousand partitions
// takes seconds (a test that waits for three such sums took 19 s in the
// race run, against waits of 20 s and 30 s). The wait only tells a sum
// that never comes from a slow one.
const backgroundSumWait = 2 * time.Minute

// queueNames are the names of a listing's queues, in its order.
func queueNames(t *testing.T, reply map[string]any) []string {
	t.Helper()
	var out []string
	for _, q := range reply["queues"].([]any) {
		out = append(out, q.(map[string]any)["name"].(string))
	}
	return out
}

// linkOf GETs path and returns its Link header.
func linkOf(t *testing.T, s *combtest.Server, path string) string {
	t.Helper()
	res, err := s.Client.HTTP.Get(s.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	res.Body.Close()
	return res.Header.Get("Link")
}

// A tenant with more partitions than the live limit has its status and
// overview totals from a sum made in the background, with their age; the
// next sum brings them up to date. The queue listing in creation order
// stays summed on every read.
func TestTenantTotalsComeFromTheBackgroundSummary(t *testing.T) {
	clk := clock.NewManual(opT0)
	s := combtest.MustServer(t, combtest.Options{Clock: clk,
		Broker: func(o *broker.Options) { o.LiveSummaryPartitions = 3 }})
	s.Push(opItem("a", "", "a0", 0), opItem("b", "", "b0", 0), opItem("c", "", "c0", 0), opItem("d", "", "d0", 0))
	total := func(path string) (float64, float64) {
		r := opGet(t, s, path)
		return r["messages"].(map[string]any)["total"].(float64), r["statsAge"].(float64)
	}
	// Not summed on the read: answered at once, "not summed yet", and
	// summed by the background.
	if n, age := total("/api/v1/resources/overview"); n != 0 || age != -1 {
		t.Fatalf("first overview: total %v statsAge %v, want 0 and -1", n, age)
	}
	for deadline := time.Now().Add(backgroundSumWait); ; time.Sleep(50 * time.Millisecond) {
		n, age := total("/api/v1/resources/overview")
		if n == 4 && age == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no first sum: total %v statsAge %v", n, age)
		}
	}
	s.Push(opItem("a", "", "a1", 1))
	clk.Advance(7 * time.Second)
	for _, path := range []string{"/api/v1/resources/overview", "/api/v1/status"} {
		if n, age := total(path); n != 4 || age != 7 {
			t.Fatalf("%s before the next sum: total %v statsAge %v, want the first sum, 7 s old", path, n, age)
		}
	}
	for _, q := range opGet(t, s, "/api/v1/status")["queues"].([]any) {
		if q.(map[string]any)["statsAge"] != 7.0 {
			t.Fatalf("status queue %v, want statsAge 7", q)
		}
	}
	byTotal := opGet(t, s, "/api/v1/resources/queues?sort=total&dir=desc")
	if q := byTotal["queues"].([]any)[0].(map[string]any); q["statsAge"] != 7.0 {
		t.Fatalf("listing by total: first %v, want statsAge 7", q)
	}
	for _, q := range opGet(t, s, "/api/v1/resources/queues")["queues"].([]any) {
		q := q.(map[string]any)
		if _, ok := q["statsAge"]; ok || (q["name"] == "a" && q["messages"].(map[string]any)["total"] != 2.0) {
			t.Fatalf("listing in creation order: %v, want live counts", q)
		}
	}
	deadline := time.Now().Add(backgroundSumWait)
	for {
		n, age := total("/api/v1/resources/overview")
		if n == 5 && age == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fresh sum: total %v statsAge %v", n, age)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The queue listing searches, sorts and pages on the broker, so a console
// asks for the one page it shows.
func TestQueueListingSearchesSortsAndPages(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("shop.orders", "", "o1", 0), opItem("shop.orders", "", "o2", 0), opItem("shop.orders", "", "o3", 0),
		opItem("shop.refunds", "", "r1", 0), opItem("mail.send", "", "m1", 0), opItem("mail.send", "", "m2", 0))
	opConfigure(t, s, "Zeta", nil)

	plain := opGet(t, s, "/api/v1/resources/queues")
	if _, ok := plain["pagination"]; ok {
		t.Fatalf("a listing that fits carries pagination: %v", plain)
	}
	if got := fmt.Sprint(queueNames(t, plain)); got != "[Zeta mail.send shop.refunds shop.orders]" {
		t.Fatalf("plain listing = %s, want newest first", got)
	}
	found := opGet(t, s, "/api/v1/resources/queues?search=SHOP")
	if got := fmt.Sprint(queueNames(t, found)); got != "[shop.refunds shop.orders]" || found["pagination"].(map[string]any)["total"] != 2.0 {
		t.Fatalf("search SHOP = %s %v", got, found["pagination"])
	}
	byPending := opGet(t, s, "/api/v1/resources/queues?sort=pending&dir=desc&limit=2")
	if got := fmt.Sprint(queueNames(t, byPending)); got != "[shop.orders mail.send]" || byPending["pagination"].(map[string]any)["total"] != 4.0 {
		t.Fatalf("top 2 by pending = %s %v", got, byPending["pagination"])
	}
	if link := linkOf(t, s, "/api/v1/resources/queues?sort=pending&dir=desc&limit=2"); !strings.Contains(link, "offset=2") {
		t.Fatalf("Link = %q, want the next offset", link)
	}
	if link := linkOf(t, s, "/api/v1/resources/queues?sort=pending&dir=desc&limit=2&offset=2"); link != "" {
		t.Fatalf("last page has Link %q", link)
	}
	if got := fmt.Sprint(queueNames(t, opGet(t, s, "/api/v1/resources/queues?sort=name"))); got != "[Zeta mail.send shop.orders shop.refunds]" {
		t.Fatalf("by name = %s", got)
	}
	if got := fmt.Sprint(queueNames(t, opGet(t, s, "/api/v1/resources/queues?sort=namespace&dir=desc&limit=1&offset=1"))); got != "[shop.orders]" {
		t.Fatalf("second by namespace, descending = %s", got)
	}
	opWantError(t, s.Do("GET", "/api/v1/resources/queues?sort=age", nil), http.StatusBadRequest, "sort must be one of")
	opWantError(t, s.Do("GET", "/api/v1/resources/queues?dir=up", nil), http.StatusBadRequest, "dir must be asc or desc")
}

// The status lists one page of its queues and counts them all.
func TestStatusListsAPageOfItsQueues(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("a", "", "a0", 0), opItem("b", "", "b0", 0), opItem("c", "", "c0", 0))
	page := opGet(t, s, "/api/v1/status?limit=2")
	if got := fmt.Sprint(queueNames(t, page)); got != "[c b]" {
		t.Fatalf("status page = %s", got)
	}
	if p := page["pagination"].(map[string]any); p["total"] != 3.0 || page["messages"].(map[string]any)["total"] != 3.0 {
		t.Fatalf("status page: pagination %v messages %v, want 3 queues and 3 messages", p, page["messages"])
	}
	if link := linkOf(t, s, "/api/v1/status?limit=2"); !strings.Contains(link, "offset=2") {
		t.Fatalf("Link = %q", link)
	}
	whole := opGet(t, s, "/api/v1/status")
	if _, ok := whole["pagination"]; ok || len(whole["queues"].([]any)) != 3 {
		t.Fatalf("whole status: %v", whole)
	}
	opWantError(t, s.Do("GET", "/api/v1/status?limit=0", nil), http.StatusBadRequest, "limit must be between 1 and 1000")
}

// The analytics a view of a few queues reads can be asked for those
// queues only.
func TestAnalyticsOfTheQueuesAViewShows(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("a", "", "a0", 0), opItem("b", "", "b0", 0), opItem("c", "", "c0", 0))
	opConfigure(t, s, "b", map[string]any{"leaseTime": 30, "retentionEnabled": true, "retentionSeconds": 60})
	ops := opGet(t, s, "/api/v1/analytics/queue-ops?queue=a&queue=c")
	var got []string
	for _, q := range ops["queues"].([]any) {
		got = append(got, q.(map[string]any)["queue"].(string))
	}
	if fmt.Sprint(got) != "[c a]" {
		t.Fatalf("queue-ops of a and c = %v", got)
	}
	if n := len(opGet(t, s, "/api/v1/analytics/queue-ops")["queues"].([]any)); n != 3 {
		t.Fatalf("queue-ops of every queue lists %d", n)
	}
	ret := opGet(t, s, "/api/v1/analytics/retention?queue=b")["queues"].([]any)
	if len(ret) != 1 {
		t.Fatalf("retention of b = %v", ret)
	}
	row := ret[0].(map[string]any)
	if row["retentionSeconds"] != 60.0 || row["config"].(map[string]any)["leaseTime"] != 30.0 {
		t.Fatalf("retention of b = %v", row)
	}
	if n := len(opGet(t, s, "/api/v1/analytics/retention?queue=none")["queues"].([]any)); n != 0 {
		t.Fatalf("retention of an unknown queue lists %d", n)
	}
}
