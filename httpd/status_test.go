package httpd_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestStatus(t *testing.T) {
	s, clk := opServer(t)
	clk.Set(opT0.Add(30 * time.Second)) // mid-minute, so buckets are not aligned with the range
	s.Push(opItem("billing.a", "", "a1", 1), opItem("billing.a", "", "a2", 2))
	clk.Advance(2 * time.Minute)
	s.Push(opItem("billing.b", "", "b1", 1))
	p := s.Pop("/api/v1/pop/queue/billing.a?batch=1")
	s.Ack(p.Messages[0], "completed", "")
	s.Pop("/api/v1/pop/queue/billing.a?batch=1") // a2 leased
	clk.Advance(time.Minute)

	st := opGet(t, s, "/api/v1/status")
	opKeys(t, "status", st, "timeRange", "bucketMinutes", "pointCount", "throughput", "queues", "messages", "leases",
		"deadLetterQueue", "workers", "errors", "statsAge")
	opKeys(t, "timeRange", st["timeRange"], "from", "to")
	opKeys(t, "leases", st["leases"], "active", "partitionsLeased", "messagesLeased")
	opKeys(t, "deadLetterQueue", st["deadLetterQueue"], "total", "inRange")
	if st["bucketMinutes"] != 1.0 || st["pointCount"] != 61.0 || st["timeRange"].(map[string]any)["to"] != "2026-07-30T08:03:30.000Z" {
		t.Errorf("status = %v", st)
	}
	points := st["throughput"].([]any)
	if len(points) != 61 {
		t.Fatalf("%d points", len(points))
	}
	opKeys(t, "point", points[0], "timestamp", "ingested", "processed", "ingestedPerSecond", "processedPerSecond")
	var ingested, processed float64
	for _, pt := range points {
		ingested += pt.(map[string]any)["ingested"].(float64)
		processed += pt.(map[string]any)["processed"].(float64)
	}
	if ingested != 3 || processed != 1 {
		t.Errorf("ingested %v processed %v, want 3 and 1", ingested, processed)
	}
	wantCounts(t, "status messages", opCounts(t, "messages", st["messages"]), 3, 1, 1, 1, 0)
	if l := st["leases"].(map[string]any); l["active"] != 1.0 || l["partitionsLeased"] != 1.0 || l["messagesLeased"] != 1.0 {
		t.Errorf("leases = %v", l)
	}
	if len(st["queues"].([]any)) != 2 {
		t.Errorf("queues = %v", st["queues"])
	}
	if st := opGet(t, s, "/api/v1/status?queue=billing.b"); len(st["queues"].([]any)) != 1 || st["messages"].(map[string]any)["total"] != 1.0 {
		t.Errorf("status of one queue = %v", st)
	}
	if st := opGet(t, s, "/api/v1/status?from=2026-07-30T00:00:00Z&to=2026-07-31T00:00:00Z"); st["bucketMinutes"] != 15.0 ||
		st["pointCount"] != 97.0 {
		t.Errorf("a day: bucket %v, %v points", st["bucketMinutes"], st["pointCount"])
	}
	opWantError(t, s.Do("GET", "/api/v1/status?from=2026-07-31&to=2026-07-30", nil), http.StatusBadRequest, "from must not be after to")
	opWantError(t, s.Do("GET", "/api/v1/status?to=later", nil), http.StatusBadRequest, "from and to")
	opWantError(t, s.Do("GET", "/api/v1/status?from=1990-01-01", nil), http.StatusBadRequest, "too large")
}

func TestStatusQueues(t *testing.T) {
	s, clk := opServer(t)
	for i := range 3 {
		s.Push(opItem(fmt.Sprintf("ns.q%d", i), "", "t", i))
		clk.Advance(time.Second)
	}
	r := opGet(t, s, "/api/v1/status/queues?limit=2")
	opKeys(t, "status queues", r, "queues", "pagination")
	opKeys(t, "pagination", r["pagination"], "limit", "offset")
	qs := r["queues"].([]any)
	if len(qs) != 2 || qs[0].(map[string]any)["name"] != "ns.q2" || r["pagination"].(map[string]any)["limit"] != 2.0 {
		t.Fatalf("status queues = %v", r)
	}
	opKeys(t, "queue", qs[0], "id", "name", "namespace", "task", "createdAt", "partitions", "messages")
	if r := opGet(t, s, "/api/v1/status/queues?limit=2&offset=2"); len(r["queues"].([]any)) != 1 {
		t.Errorf("page 2 = %v", r)
	}
	if r := opGet(t, s, "/api/v1/status/queues"); r["pagination"].(map[string]any)["limit"] != 100.0 {
		t.Errorf("default limit = %v", r["pagination"])
	}
}

func TestStatusQueueDetailAndMessages(t *testing.T) {
	s, clk := opServer(t)
	opConfigure(t, s, "sq", map[string]any{"leaseTime": 30, "retryLimit": 2, "maxSize": 9, "deadLetterQueue": true, "priority": 4})
	s.Push(opItem("sq", "", "m1", 1), opItem("sq", "", "m2", 2))
	clk.Advance(time.Minute)
	p := s.Pop("/api/v1/pop/queue/sq?batch=1")
	s.Ack(p.Messages[0], "completed", "")

	d := opGet(t, s, "/api/v1/status/queues/sq")
	opKeys(t, "status queue", d, "queue", "partitions", "totals")
	opKeys(t, "queue", d["queue"], "id", "name", "namespace", "task", "priority", "createdAt", "config")
	opKeys(t, "config", d["queue"].(map[string]any)["config"], "leaseTime", "retryLimit", "retryDelay", "ttl", "maxQueueSize", "deadLetterQueue")
	cfg := d["queue"].(map[string]any)["config"].(map[string]any)
	if cfg["leaseTime"] != 30.0 || cfg["maxQueueSize"] != 9.0 || cfg["deadLetterQueue"] != true || d["queue"].(map[string]any)["priority"] != 4.0 {
		t.Errorf("queue = %v", d["queue"])
	}
	part := d["partitions"].([]any)[0]
	opKeys(t, "partition", part, "id", "name", "createdAt", "messages", "stats", "cursor", "lastActivity", "oldestMessage", "newestMessage")
	pm := part.(map[string]any)
	opKeys(t, "cursor", pm["cursor"], "totalConsumed", "batchesConsumed")
	if pm["cursor"].(map[string]any)["totalConsumed"] != 1.0 || pm["lastActivity"] != "2026-07-30T08:01:00.000Z" {
		t.Errorf("partition = %v", pm)
	}
	wantCounts(t, "partition messages", opCounts(t, "partition messages", pm["messages"]), 2, 1, 0, 1, 0)
	// Queen sends the totals twice: at the top and under "messages".
	totals := d["totals"].(map[string]any)
	wantCounts(t, "totals.messages", opCounts(t, "totals.messages", totals["messages"]), 2, 1, 0, 1, 0)
	delete(totals, "messages")
	wantCounts(t, "totals", opCounts(t, "totals", totals), 2, 1, 0, 1, 0)
	opWantError(t, s.Do("GET", "/api/v1/status/queues/nope", nil), http.StatusNotFound, "Queue not found")

	r := s.Do("GET", "/api/v1/status/queues/sq/messages?limit=1", nil)
	var msgs []map[string]any
	r.JSON(t, &msgs)
	if r.Status != http.StatusOK || len(msgs) != 1 {
		t.Fatalf("messages = %d %s", r.Status, r.Body)
	}
	opKeys(t, "message", msgs[0], "id", "transactionId", "partitionId", "queuePath", "queue", "partition", "status", "createdAt")
	if msgs[0]["transactionId"] != "m2" || msgs[0]["status"] != "pending" {
		t.Errorf("newest = %v", msgs[0])
	}
	// Not bounded by the last hour: the whole log is listed.
	clk.Advance(3 * time.Hour)
	s.Do("GET", "/api/v1/status/queues/sq/messages", nil).JSON(t, &msgs)
	if len(msgs) != 2 {
		t.Errorf("%d messages after 3 h", len(msgs))
	}
	opWantError(t, s.Do("GET", "/api/v1/status/queues/nope/messages", nil), http.StatusNotFound, "Queue not found")
}

func TestStatusAnalytics(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("an", "", "1", 1), opItem("an", "", "2", 2))
	clk.Advance(90 * time.Second)
	s.Push(opItem("an", "", "3", 3), opItem("other", "", "4", 4))
	clk.Advance(time.Hour)

	r := opGet(t, s, "/api/v1/status/analytics?interval=minute&from=2026-07-30T08:00:00Z&to=2026-07-30T08:04:00Z")
	opKeys(t, "analytics", r, "dataPoints", "interval", "from", "to")
	pts := r["dataPoints"].([]any)
	var got []float64
	for _, p := range pts {
		opKeys(t, "point", p, "timestamp", "messages")
		got = append(got, p.(map[string]any)["messages"].(float64))
	}
	if fmt.Sprint(got) != "[2 2 0 0 0]" || r["interval"] != "minute" || pts[1].(map[string]any)["timestamp"] != "2026-07-30T08:01:00.000Z" {
		t.Errorf("per minute = %v (%v)", got, r)
	}
	r = opGet(t, s, "/api/v1/status/analytics?interval=minute&queue=an&from=2026-07-30T08:00:00Z&to=2026-07-30T08:02:00Z")
	if pts := r["dataPoints"].([]any); len(pts) != 3 || pts[1].(map[string]any)["messages"] != 1.0 {
		t.Errorf("one queue = %v", r)
	}
	// Default: hourly over the last day, buckets on whole hours.
	r = opGet(t, s, "/api/v1/status/analytics?interval=bogus")
	pts = r["dataPoints"].([]any)
	if r["interval"] != "hour" || len(pts) != 25 || pts[0].(map[string]any)["timestamp"] != "2026-07-29T09:00:00.000Z" {
		t.Errorf("default = %v points, interval %v, from %v", len(pts), r["interval"], r["from"])
	}
	var total float64
	for _, p := range pts {
		total += p.(map[string]any)["messages"].(float64)
	}
	if total != 4 {
		t.Errorf("hourly total = %v", total)
	}
	opWantError(t, s.Do("GET", "/api/v1/status/analytics?interval=minute&from=2020-01-01", nil), http.StatusBadRequest, "too large")
}

func TestStatusBuffersAnalyticsAndRefresh(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("x", "", "1", 1))
	p := s.Pop("/api/v1/pop/queue/x?consumerGroup=g")
	s.Ack(p.Messages[0], "completed", "g")

	b := opGet(t, s, "/api/v1/status/buffers")
	opKeys(t, "buffers", b, "pending", "failed", "dbHealthy", "worker")
	if b["dbHealthy"] != true || b["pending"] != 0.0 {
		t.Errorf("buffers = %v", b)
	}
	for kind, check := range map[string]func(map[string]any) bool{
		"system-metrics":        func(m map[string]any) bool { return m["goroutines"].(float64) > 0 },
		"worker-metrics":        func(m map[string]any) bool { return m["workers"].([]any)[0].(map[string]any)["commits"].(float64) > 0 },
		"queue-lag":             func(m map[string]any) bool { return len(m["groups"].([]any)) == 1 },
		"queue-ops":             func(m map[string]any) bool { return m["queues"].([]any)[0].(map[string]any)["pushed"] == 1.0 },
		"queue-parked-replicas": func(m map[string]any) bool { return len(m["replicas"].([]any)) == 1 },
		"retention":             func(m map[string]any) bool { return m["queues"].([]any)[0].(map[string]any)["stored"] == 1.0 },
		"postgres-stats":        func(m map[string]any) bool { return m["database"] == "sqlite" && m["pageCount"].(float64) > 0 },
	} {
		if m := opGet(t, s, "/api/v1/analytics/"+kind); !check(m) {
			t.Errorf("%s = %v", kind, m)
		}
	}
	opWantError(t, s.Do("GET", "/api/v1/analytics/nope", nil), http.StatusNotFound, "Not found")
	r := s.Do("POST", "/api/v1/stats/refresh", nil)
	if r.Status != http.StatusOK || r.Map(t)["success"] != true {
		t.Errorf("refresh = %d %s", r.Status, r.Body)
	}
}

// The lag analytics are a page of the (group, queue) pairs, as the
// consumer-group listing pages them, the retention analytics a page of
// the queues and the namespace listing a page of the namespaces: the
// whole lists grew with the groups and the queues.
func TestTheDashboardListingsArePaged(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("x", "", "1", 1))
	for _, g := range []string{"g1", "g2", "g3"} {
		s.Pop("/api/v1/pop/queue/x?consumerGroup=" + g)
	}
	s.Push(opItem("y", "", "1", 1))
	s.Push(opItem("z", "", "1", 1))
	for _, c := range []struct {
		path, list, name     string
		whole, first, second string // as fmt prints the names
	}{
		{"/api/v1/analytics/queue-lag", "groups", "consumerGroup", "[g1 g2 g3]", "[g1 g2]", "[g3]"},
		{"/api/v1/analytics/retention", "queues", "queue", "[z y x]", "[z y]", "[x]"},          // newest first
		{"/api/v1/resources/namespaces", "namespaces", "namespace", "[x y z]", "[x y]", "[z]"}, // a queue's name unless configured
	} {
		names := func(query string) string {
			var out []string
			for _, row := range opGet(t, s, c.path+query)[c.list].([]any) {
				out = append(out, row.(map[string]any)[c.name].(string))
			}
			return fmt.Sprint(out)
		}
		if got := names(""); got != c.whole {
			t.Errorf("%s, whole = %v, want %v", c.path, got, c.whole)
		}
		if got := names("?limit=2"); got != c.first {
			t.Errorf("%s, first page = %v, want %v", c.path, got, c.first)
		}
		if got := names("?limit=2&offset=2"); got != c.second {
			t.Errorf("%s, second page = %v, want %v", c.path, got, c.second)
		}
		opWantError(t, s.Do("GET", c.path+"?limit=1001", nil), http.StatusBadRequest, "limit must be between 1 and 1000")
	}
}

// The status listing of queues answers Queen's page of 100 by default and
// at most MaxPageLimit queues, whatever limit asks: a limit of 0 listed
// every queue in one reply.
func TestStatusQueuesAnswersABoundedPage(t *testing.T) {
	s, _ := opServer(t)
	var items []map[string]any
	for i := range 1005 {
		items = append(items, opItem(fmt.Sprintf("q%04d", i), "", "1", i))
	}
	s.Push(items...)
	for _, c := range []struct {
		query string
		want  int
	}{{"", 100}, {"?limit=3", 3}, {"?limit=0", 1000}, {"?limit=100000", 1000}, {"?limit=1000&offset=1000", 5}} {
		got := opGet(t, s, "/api/v1/status/queues"+c.query)
		if qs, _ := got["queues"].([]any); len(qs) != c.want {
			t.Errorf("status/queues%s: %d queues, want %d", c.query, len(qs), c.want)
		}
	}
}
