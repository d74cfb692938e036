package httpd_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// pagedGet GETs path and returns the status, the body and the Link
// header's next URL ("" when none).
func pagedGet(t *testing.T, s *combtest.Server, path string) (int, []byte, string, http.Header) {
	t.Helper()
	resp, err := s.HTTP.Client().Get(s.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	next := ""
	if l := resp.Header.Get("Link"); l != "" {
		if !strings.HasPrefix(l, "<") || !strings.HasSuffix(l, `>; rel="next"`) {
			t.Fatalf("Link %q is not one rel=next link", l)
		}
		next = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
	}
	return resp.StatusCode, body, next, resp.Header
}

// pushPartitions pushes one message into each of n partitions of queue,
// named prefix0000.., a thousand per push.
func pushPartitions(t *testing.T, s *combtest.Server, queue, prefix string, n int) []string {
	t.Helper()
	var names []string
	for i := 0; i < n; i += 1000 {
		var items []map[string]any
		for j := i; j < min(i+1000, n); j++ {
			name := fmt.Sprintf("%s%05d", prefix, j)
			names = append(names, name)
			items = append(items, opItem(queue, name, "t-"+name, map[string]any{"j": j}))
		}
		s.Push(items...)
	}
	return names
}

type queueDetailPage struct {
	Partitions []struct {
		Name  string         `json:"name"`
		Stats map[string]int `json:"stats"`
	} `json:"partitions"`
	Totals     map[string]int `json:"totals"`
	Pagination *struct {
		Limit  int     `json:"limit"`
		Offset int     `json:"offset"`
		Total  int     `json:"total"`
		Next   *string `json:"next"`
	} `json:"pagination"`
}

func TestQueueDetailPages(t *testing.T) {
	s, _ := opServer(t)
	names := pushPartitions(t, s, "big", "p", 2500)
	pushPartitions(t, s, "small", "s", 3)
	pushPartitions(t, s, "full", "f", 1000)

	// A queue that fits one page (up to 1000 partitions) keeps Queen's
	// shape exactly.
	for queue, n := range map[string]int{"small": 3, "full": 1000} {
		for _, route := range []string{"/api/v1/resources/queues/", "/api/v1/status/queues/"} {
			code, body, next, hdr := pagedGet(t, s, route+queue)
			var reply map[string]any
			if code != http.StatusOK || json.Unmarshal(body, &reply) != nil {
				t.Fatalf("GET %s%s: %d %.200s", route, queue, code, body)
			}
			if _, paged := reply["pagination"]; paged || next != "" || len(reply["partitions"].([]any)) != n {
				t.Fatalf("GET %s%s: %d partitions, pagination %v, Link %q; want all %d in Queen's shape",
					route, queue, len(reply["partitions"].([]any)), reply["pagination"], next, n)
			}
			if hdr.Get("X-Total-Count") != fmt.Sprint(n) {
				t.Fatalf("GET %s%s: X-Total-Count %q", route, queue, hdr.Get("X-Total-Count"))
			}
		}
	}
	small := opGet(t, s, "/api/v1/resources/queues/small")
	opKeys(t, "small queue", small, "id", "name", "namespace", "task", "createdAt", "partitions", "totals")

	// The default reply of a queue larger than one page is a first page
	// of 100 partitions (a page's cost is its partitions' figures); totals
	// still count every partition.
	code, body, next, hdr := pagedGet(t, s, "/api/v1/resources/queues/big")
	if code != http.StatusOK {
		t.Fatalf("GET big: %d %s", code, body)
	}
	var first queueDetailPage
	if err := json.Unmarshal(body, &first); err != nil {
		t.Fatal(err)
	}
	if len(first.Partitions) != 100 || first.Pagination == nil || first.Pagination.Total != 2500 || first.Pagination.Limit != 100 ||
		first.Pagination.Next == nil || first.Totals["total"] != 2500 || first.Totals["pending"] != 2500 {
		t.Fatalf("default page: %d partitions, pagination %+v, totals %v", len(first.Partitions), first.Pagination, first.Totals)
	}
	if hdr.Get("X-Total-Count") != "2500" || !strings.Contains(next, "after="+url.QueryEscape(*first.Pagination.Next)) ||
		!strings.Contains(next, "limit=100") {
		t.Fatalf("headers: total %q, next %q", hdr.Get("X-Total-Count"), next)
	}
	// A limit asked for is kept.
	code, body, _, _ = pagedGet(t, s, "/api/v1/resources/queues/big?limit=1000")
	var asked queueDetailPage
	if code != http.StatusOK || json.Unmarshal(body, &asked) != nil || len(asked.Partitions) != 1000 || asked.Pagination.Limit != 1000 {
		t.Fatalf("limit=1000: %d, %d partitions", code, len(asked.Partitions))
	}

	// Walking with after visits every partition once, in creation order;
	// a partition created meanwhile comes at the end, nothing twice.
	var seen []string
	path := "/api/v1/resources/queues/big?limit=700"
	for pages := 0; path != ""; pages++ {
		if pages == 1 {
			pushPartitions(t, s, "big", "z", 1)
			names = append(names, "z00000")
		}
		code, body, next, _ := pagedGet(t, s, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		var p queueDetailPage
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Partitions) > 700 {
			t.Fatalf("page of %d partitions, limit 700", len(p.Partitions))
		}
		for _, part := range p.Partitions {
			seen = append(seen, part.Name)
		}
		if (next == "") != (p.Pagination.Next == nil) {
			t.Fatalf("Link %q disagrees with pagination.next %v", next, p.Pagination.Next)
		}
		path = next
	}
	if !slices.Equal(seen, names) {
		t.Fatalf("walk saw %d partitions (first %v), want %d in creation order", len(seen), seen[:3], len(names))
	}

	// Offsets page too; past the end is an empty last page.
	code, body, next, _ = pagedGet(t, s, "/api/v1/resources/queues/big?limit=100&offset=2450")
	var tail queueDetailPage
	if code != http.StatusOK || json.Unmarshal(body, &tail) != nil || len(tail.Partitions) != 51 || next != "" ||
		tail.Partitions[50].Name != "z00000" || tail.Pagination.Next != nil {
		t.Fatalf("last page: %d %s, next %q", code, body, next)
	}
	code, body, _, _ = pagedGet(t, s, "/api/v1/resources/queues/big?limit=10&offset=9999")
	var past queueDetailPage
	if code != http.StatusOK || json.Unmarshal(body, &past) != nil || len(past.Partitions) != 0 || past.Totals["total"] != 2501 {
		t.Fatalf("past the end: %d %s", code, body)
	}

	for _, bad := range []string{"limit=0", "limit=1001", "limit=-1", "limit=1.5", "offset=-2", "after=nonsense", "after=-5"} {
		r := s.Do("GET", "/api/v1/resources/queues/big?"+bad, nil)
		opWantError(t, r, http.StatusBadRequest, strings.SplitN(bad, "=", 2)[0])
	}
	// An offset deeper than 10,000 would walk every row before it: a 400
	// that points to after. Up to it, offsets page.
	for _, route := range []string{"/api/v1/resources/queues/big", "/api/v1/status/queues/big"} {
		opWantError(t, s.Do("GET", route+"?limit=10&offset=10001", nil), http.StatusBadRequest, "after")
		if code, body, _, _ := pagedGet(t, s, route+"?limit=10&offset=10000"); code != http.StatusOK {
			t.Fatalf("%s offset 10000: %d %s", route, code, body)
		}
	}
	opWantError(t, s.Do("GET", "/api/v1/resources/queues/nope?limit=10", nil), http.StatusNotFound, "not found")
}

func TestGroupListingPages(t *testing.T) {
	s, clk := opServer(t)
	pushPartitions(t, s, "wide", "p", 1500)
	// A group's first pop seeds a cursor on every partition.
	if r := s.Pop("/api/v1/pop/queue/wide?consumerGroup=g&batch=1"); r.Status != http.StatusOK {
		t.Fatalf("pop: %d", r.Status)
	}
	for _, g := range []string{"a", "b", "c", "d"} {
		s.Push(opItem("q-"+g, "", "m-"+g, nil))
		if r := s.Pop("/api/v1/pop/queue/q-" + g + "?consumerGroup=" + g); r.Status != http.StatusOK {
			t.Fatalf("pop %s: %d", g, r.Status)
		}
	}
	clk.Advance(2 * time.Hour)
	// Past an offset of 10,000 the group's cursors page with after only.
	opWantError(t, s.Do("GET", "/api/v1/consumer-groups/g?limit=10&offset=10001", nil), http.StatusBadRequest, "after")

	// The group's cursors, a page at a time, each once, in partition order.
	type groupReply map[string]struct {
		Partitions []struct {
			Partition       string `json:"partition"`
			OffsetLag       int64  `json:"offsetLag"`
			CommittedOffset *int64 `json:"committedOffset"`
		} `json:"partitions"`
	}
	var seen []string
	path := "/api/v1/consumer-groups/g?limit=600"
	for path != "" {
		code, body, next, _ := pagedGet(t, s, path)
		var g groupReply
		if code != http.StatusOK || json.Unmarshal(body, &g) != nil || len(g["wide"].Partitions) > 600 {
			t.Fatalf("GET %s: %d %.200s", path, code, body)
		}
		for _, p := range g["wide"].Partitions {
			if p.CommittedOffset == nil {
				t.Fatalf("partition %s has no committedOffset", p.Partition)
			}
			seen = append(seen, p.Partition)
		}
		path = next
	}
	if len(seen) != 1500 || !slices.IsSorted(seen) || slices.Compact(slices.Clone(seen)) == nil || seen[0] != "p00000" {
		t.Fatalf("walk saw %d cursors", len(seen))
	}
	var all groupReply
	code, body, next, _ := pagedGet(t, s, "/api/v1/consumer-groups/g")
	if code != http.StatusOK || json.Unmarshal(body, &all) != nil || len(all["wide"].Partitions) != 1000 || next == "" {
		t.Fatalf("default group page: %d, %d cursors, next %q", code, len(all["wide"].Partitions), next)
	}

	// The (group, queue) listing: bare array, ordered by group then queue,
	// paged by offset with the next page in Link.
	type listed struct {
		Name      string `json:"name"`
		QueueName string `json:"queueName"`
		Members   int    `json:"members"`
		TotalLag  int    `json:"totalLag"`
	}
	var names []string
	path = "/api/v1/consumer-groups?limit=2"
	for path != "" {
		code, body, next, hdr := pagedGet(t, s, path)
		var page []listed
		if code != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page) > 2 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if hdr.Get("X-Total-Count") != "5" {
			t.Fatalf("groups listing X-Total-Count %q, want the 5 pairs", hdr.Get("X-Total-Count"))
		}
		for _, g := range page {
			names = append(names, g.Name+"/"+g.QueueName)
			if g.Name == "g" && (g.Members != 1500 || g.TotalLag != 1500) {
				t.Fatalf("group g: %+v, want 1500 cursors and lag 1500 (the popped one is unacked)", g)
			}
		}
		path = next
	}
	if want := []string{"a/q-a", "b/q-b", "c/q-c", "d/q-d", "g/wide"}; !slices.Equal(names, want) {
		t.Fatalf("groups listing walk = %v, want %v", names, want)
	}
	var whole []listed
	if r := s.Do("GET", "/api/v1/consumer-groups", nil); r.Status != http.StatusOK {
		t.Fatalf("groups: %d", r.Status)
	} else if r.JSON(t, &whole); len(whole) != 5 {
		t.Fatalf("default listing has %d entries, want 5", len(whole))
	}

	// Lagging cursors, oldest first, paged by offset.
	code, body, next, _ = pagedGet(t, s, "/api/v1/consumer-groups/lagging?minLagSeconds=60&limit=3")
	var lag []map[string]any
	if code != http.StatusOK || json.Unmarshal(body, &lag) != nil || len(lag) != 3 || !strings.Contains(next, "offset=3") {
		t.Fatalf("lagging page: %d %.300s next %q", code, body, next)
	}

	for _, bad := range []string{"/api/v1/consumer-groups?limit=0", "/api/v1/consumer-groups?limit=5000",
		"/api/v1/consumer-groups?after=3", "/api/v1/consumer-groups/g?limit=abc", "/api/v1/consumer-groups/g?after=x",
		"/api/v1/consumer-groups/lagging?limit=1001", "/api/v1/consumer-groups/lagging?offset=-1"} {
		r := s.Do("GET", bad, nil)
		if r.Status != http.StatusBadRequest {
			t.Fatalf("GET %s: %d %s, want 400", bad, r.Status, r.Body)
		}
		errorOf(t, r)
	}
}

// TestQueueTotalsAgreeWithPartitions checks the one-statement totals of
// the queue views against the per-partition counts the status view sums in
// Go, over queue-mode and bus cursors, live and expired leases, acks and
// dead letters.
func TestQueueTotalsAgreeWithPartitions(t *testing.T) {
	s, clk := opServer(t)
	opConfigure(t, s, "mix", map[string]any{"leaseTime": 60, "retryLimit": 0})
	var items []map[string]any
	for i := range 60 {
		items = append(items, opItem("mix", fmt.Sprintf("p%d", i%7), fmt.Sprintf("m%d", i), map[string]any{"i": i}))
	}
	s.Push(items...)
	check := func(when string) {
		t.Helper()
		var sum map[string]int
		status := opGet(t, s, "/api/v1/status/queues/mix")
		for _, p := range status["partitions"].([]any) {
			c := opCounts(t, "partition", p.(map[string]any)["stats"])
			if sum == nil {
				sum = c
				continue
			}
			for k, v := range c {
				sum[k] += v
			}
		}
		detail := opCounts(t, "totals", opGet(t, s, "/api/v1/resources/queues/mix?limit=2")["totals"])
		dlq := opDLQ(t, s, "?queue=mix")
		sum["deadLetter"] = dlq.Total
		if fmt.Sprint(detail) != fmt.Sprint(sum) {
			t.Fatalf("%s: detail totals %v, partitions sum %v", when, detail, sum)
		}
		var list struct {
			Queues []struct {
				Name       string         `json:"name"`
				Partitions int            `json:"partitions"`
				Messages   map[string]int `json:"messages"`
			} `json:"queues"`
		}
		s.Do("GET", "/api/v1/resources/queues", nil).JSON(t, &list)
		q := list.Queues[0]
		if q.Partitions != 8 || // p0..p6 and Default, which configure made
			q.Messages["total"] != sum["total"] || q.Messages["pending"] != sum["pending"] ||
			q.Messages["processing"] != sum["processing"] {
			t.Fatalf("%s: listing %+v, partitions sum %v", when, q, sum)
		}
	}
	check("untouched")
	// Bus groups: one leases batches and acks some, one only leases.
	for range 3 {
		r := s.Pop("/api/v1/pop/queue/mix?consumerGroup=fast&batch=4")
		s.Ack(r.Messages[0], "completed", "fast")
	}
	s.Pop("/api/v1/pop/queue/mix?consumerGroup=slow&batch=3")
	check("bus leases")
	// Queue mode beats the named groups where it has a cursor.
	r := s.Pop("/api/v1/pop/queue/mix?batch=5")
	s.Ack(r.Messages[0], "dlq", "")
	s.Pop("/api/v1/pop/queue/mix?batch=2")
	check("queue mode")
	clk.Advance(2 * time.Minute)
	check("leases expired")
}

// A queue with more partitions than the live limit is answered from a sum
// made in the background, with its statsAge, never summed on a request's
// path: before the first sum it says so (statsAge -1); the sum agrees with
// its partitions once made again. Smaller queues stay summed on every
// read.
func TestLargeQueueTotalsComeFromTheBackgroundSum(t *testing.T) {
	clk := clock.NewManual(opT0)
	s := combtest.MustServer(t, combtest.Options{Clock: clk,
		Broker: func(o *broker.Options) { o.LiveTotalsPartitions = 3 }})
	var items []map[string]any
	for i := range 12 {
		items = append(items, opItem("big", fmt.Sprintf("p%d", i%6), fmt.Sprintf("m%d", i), i))
	}
	s.Push(append(items, opItem("small", "", "s0", 0))...)
	partitionsSum := func() map[string]int {
		var sum map[string]int
		for _, p := range opGet(t, s, "/api/v1/status/queues/big")["partitions"].([]any) {
			c := opCounts(t, "partition", p.(map[string]any)["stats"])
			if sum == nil {
				sum = c
				continue
			}
			for k, v := range c {
				sum[k] += v
			}
		}
		return sum
	}
	// The first read does not sum on its path: it says the queue is not
	// summed yet (statsAge -1) and the refresher sums it within about a
	// second.
	code, body, _, hdr := pagedGet(t, s, "/api/v1/resources/queues/big?limit=2")
	var first map[string]any
	if err := json.Unmarshal(body, &first); err != nil || code != http.StatusOK {
		t.Fatalf("first read: %d %s", code, body)
	}
	if got := opCounts(t, "totals", first["totals"]); got["total"] != 0 || first["statsAge"] != -1.0 || hdr.Get("X-Total-Count") != "" {
		t.Fatalf("first read: totals %v statsAge %v total count %q, want none summed yet (-1) and no count",
			got, first["statsAge"], hdr.Get("X-Total-Count"))
	}
	for deadline := time.Now().Add(backgroundSumWait); ; time.Sleep(20 * time.Millisecond) {
		got := opGet(t, s, "/api/v1/resources/queues/big?limit=2")
		totals, want := opCounts(t, "totals", got["totals"]), partitionsSum()
		if got["statsAge"] == 0.0 && fmt.Sprint(totals) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no first sum: totals %v statsAge %v, partitions sum %v", totals, got["statsAge"], want)
		}
	}
	// Pushed and consumed since: the large queue shows its last sum and
	// its age, the small one its counts now.
	s.Push(opItem("big", "p0", "late", 0), opItem("small", "", "s1", 1))
	r := s.Pop("/api/v1/pop/queue/big?batch=3")
	s.Ack(r.Messages[0], "completed", "")
	clk.Advance(5 * time.Second)
	stale := opGet(t, s, "/api/v1/resources/queues/big?limit=2")
	if got := opCounts(t, "totals", stale["totals"]); got["total"] != 12 || got["completed"] != 0 || stale["statsAge"] != 5.0 {
		t.Fatalf("before the next sum: totals %v statsAge %v, want the first sum, 5 s old", got, stale["statsAge"])
	}
	var list struct {
		Queues []map[string]any `json:"queues"`
	}
	s.Do("GET", "/api/v1/resources/queues", nil).JSON(t, &list)
	for _, q := range list.Queues {
		switch q["name"] {
		case "small":
			if _, ok := q["statsAge"]; ok || q["messages"].(map[string]any)["total"] != 2.0 {
				t.Errorf("small queue in the listing: %v, want its 2 messages and no statsAge", q)
			}
		case "big":
			if q["statsAge"] != 5.0 {
				t.Errorf("big queue in the listing: %v, want statsAge 5", q)
			}
		}
	}
	// The refresher sums again within about a second.
	deadline := time.Now().Add(backgroundSumWait)
	for {
		got := opGet(t, s, "/api/v1/resources/queues/big?limit=2")
		totals, want := opCounts(t, "totals", got["totals"]), partitionsSum()
		if got["statsAge"] == 0.0 && fmt.Sprint(totals) == fmt.Sprint(want) && totals["total"] == 13 && totals["completed"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fresh sum: totals %v statsAge %v, partitions sum %v", totals, got["statsAge"], want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A queue deleted and made again under the same name is not answered
	// from the old one's sum.
	if r := s.Do("DELETE", "/api/v1/resources/queues/big", nil); r.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	s.Push(opItem("big", "", "again", 0))
	again := opGet(t, s, "/api/v1/resources/queues/big")
	if got := opCounts(t, "totals", again["totals"]); got["total"] != 1 {
		t.Errorf("recreated queue: totals %v, want 1 message", got)
	}
	if _, ok := again["statsAge"]; ok {
		t.Errorf("recreated small queue has statsAge %v", again["statsAge"])
	}
}

// The consumer-group listings, the status view of a queue and the metrics
// of a queue above the live limit come from the background sum, say how
// old it is, and catch up with pops and acks; every page is bounded.
func TestLargeQueueGroupListingsComeFromTheBackgroundSum(t *testing.T) {
	clk := clock.NewManual(opT0)
	s := combtest.MustServer(t, combtest.Options{Clock: clk,
		Broker: func(o *broker.Options) { o.LiveTotalsPartitions = 50 }})
	pushPartitions(t, s, "wide", "p", 2500)
	pushPartitions(t, s, "tiny", "t", 2)
	for _, q := range []string{"wide", "tiny"} {
		if r := s.Pop("/api/v1/pop/queue/" + q + "?consumerGroup=g&batch=1"); r.Status != http.StatusOK {
			t.Fatalf("pop %s: %d", q, r.Status)
		}
	}
	clk.Advance(2 * time.Hour)

	type listed struct {
		Name      string `json:"name"`
		QueueName string `json:"queueName"`
		Members   int    `json:"members"`
		TotalLag  int    `json:"totalLag"`
		StatsAge  *int   `json:"statsAge"`
	}
	groups := func() map[string]listed {
		t.Helper()
		code, body, _, hdr := pagedGet(t, s, "/api/v1/consumer-groups")
		var list []listed
		if code != http.StatusOK || json.Unmarshal(body, &list) != nil || hdr.Get("X-Total-Count") != "2" {
			t.Fatalf("groups: %d %s, total %q", code, body, hdr.Get("X-Total-Count"))
		}
		out := map[string]listed{}
		for _, g := range list {
			out[g.QueueName] = g
		}
		return out
	}
	// The first lagging page does not wait for wide's sum: it leaves
	// wide's rows out and says so.
	code, body, _, hdr := pagedGet(t, s, "/api/v1/consumer-groups/lagging?minLagSeconds=60&limit=5")
	if code != http.StatusOK || hdr.Get("X-Stats-Pending") != "1" || strings.Contains(string(body), `"wide"`) {
		t.Fatalf("first lagging page: %d %.300s, X-Stats-Pending %q; want no row of wide and 1 queue pending",
			code, body, hdr.Get("X-Stats-Pending"))
	}
	// The first listing does not wait for wide's sum either: its pair is
	// listed with no figures and statsAge -1, and the refresher sums it.
	got := groups()
	if w := got["wide"]; w.StatsAge == nil || (*w.StatsAge == -1) != (w.Members == 0) {
		t.Fatalf("g on wide, first listing: %+v, want statsAge -1 and no figures, or a sum", w)
	}
	for deadline := time.Now().Add(backgroundSumWait); *got["wide"].StatsAge == -1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("wide's group figures not summed in the background")
		}
		got = groups()
	}
	if w := got["wide"]; w.Members != 2500 || w.TotalLag != 2500 || w.StatsAge == nil || *w.StatsAge != 0 {
		t.Fatalf("g on wide: %+v, want 2500 cursors, lag 2500, statsAge 0", w)
	}
	if tn := got["tiny"]; tn.Members != 2 || tn.StatsAge != nil {
		t.Fatalf("g on tiny: %+v, want 2 cursors and no statsAge", tn)
	}
	clk.Advance(7 * time.Second)
	if w := groups()["wide"]; w.StatsAge == nil || (*w.StatsAge != 7 && *w.StatsAge != 0) {
		t.Fatalf("g on wide later: %+v, want statsAge 7 (or 0 after a refresh)", w)
	}

	// Lagging rows of wide carry the age of the sum they come from.
	var lag []map[string]any
	code, body, next, _ := pagedGet(t, s, "/api/v1/consumer-groups/lagging?minLagSeconds=60&limit=5")
	if code != http.StatusOK || json.Unmarshal(body, &lag) != nil || len(lag) != 5 || !strings.Contains(next, "offset=5") {
		t.Fatalf("lagging: %d %.300s next %q", code, body, next)
	}
	for _, l := range lag {
		if _, ok := l["statsAge"]; ok != (l["queue_name"] == "wide") {
			t.Errorf("lagging row %v: statsAge only on wide's rows", l)
		}
	}

	// The status view of a queue: one bounded page, totals over every
	// partition, with their age, once the refresher has summed them (a
	// read before says none are summed yet: statsAge -1).
	for deadline := time.Now().Add(backgroundSumWait); ; time.Sleep(20 * time.Millisecond) {
		if got := opGet(t, s, "/api/v1/resources/queues/wide?limit=1"); got["statsAge"] != -1.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("wide's totals not summed in the background")
		}
	}
	code, body, next, hdr = pagedGet(t, s, "/api/v1/status/queues/wide")
	var st struct {
		Partitions []map[string]any `json:"partitions"`
		Totals     map[string]any   `json:"totals"`
		StatsAge   *int             `json:"statsAge"`
		Pagination *struct {
			Total int     `json:"total"`
			Next  *string `json:"next"`
		} `json:"pagination"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("status queue: %d %.300s", code, body)
	}
	if len(st.Partitions) != 100 || st.Pagination == nil || st.Pagination.Total != 2500 || st.Pagination.Next == nil ||
		next == "" || hdr.Get("X-Total-Count") != "2500" || st.Totals["total"] != 2500.0 || st.StatsAge == nil {
		t.Fatalf("status queue: %d partitions, pagination %+v, Link %q, totals %v, statsAge %v",
			len(st.Partitions), st.Pagination, next, st.Totals, st.StatsAge)
	}
	if len(body) > 600*1000 {
		t.Fatalf("status queue reply of %d bytes for a page of 100", len(body))
	}
	small := opGet(t, s, "/api/v1/status/queues/tiny")
	opKeys(t, "status of a small queue", small, "queue", "partitions", "totals")
	if !strings.Contains(next, "after="+url.QueryEscape(*st.Pagination.Next)) {
		t.Fatalf("Link %q, pagination.next %q", next, *st.Pagination.Next)
	}
	code, body, _, _ = pagedGet(t, s, "/api/v1/status/queues/wide?limit=10&after="+url.QueryEscape(*st.Pagination.Next))
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil || len(st.Partitions) != 10 || st.Partitions[0]["name"] != "p00100" {
		t.Fatalf("status queue, second page: %d %.300s", code, body)
	}

	// Acked since: the refresher catches up, in the listing and in the
	// metrics, which say how old their figures are.
	acked := 0
	for range 3 {
		r := s.Pop("/api/v1/pop/queue/wide?consumerGroup=g&batch=10")
		for _, m := range r.Messages {
			s.Ack(m, "completed", "g")
			acked++
		}
	}
	deadline := time.Now().Add(backgroundSumWait)
	for {
		w := groups()["wide"]
		metrics := string(s.Do("GET", "/metrics/prometheus", nil).Body)
		if w.TotalLag == 2500-acked && w.StatsAge != nil && *w.StatsAge == 0 &&
			strings.Contains(metrics, `comb_consumer_group_lag{consumer_group="g",queue="wide",tenant=""} `+fmt.Sprint(w.TotalLag)) &&
			strings.Contains(metrics, `comb_queue_stats_age_seconds{queue="wide",tenant=""}`) &&
			!strings.Contains(metrics, `comb_queue_stats_age_seconds{queue="tiny"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fresh sum: g on wide %+v (statsAge %v) after %d acks; metrics:\n%s", w, *w.StatsAge, acked,
				grepLines(metrics, "wide"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// grepLines returns the lines of text that contain sub.
func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
