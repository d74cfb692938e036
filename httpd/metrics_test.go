package httpd_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

func TestMetricsJSON(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("mj", "", "1", 1), opItem("mj", "", "2", 2), opItem("mj", "", "2", 2)) // one duplicate
	clk.Advance(90 * time.Second)

	m := opGet(t, s, "/metrics")
	opKeys(t, "metrics", m, "uptime", "requests", "messages", "database", "memory", "cpu")
	opKeys(t, "requests", m["requests"], "total", "rate")
	opKeys(t, "messages", m["messages"], "total", "rate")
	opKeys(t, "database", m["database"], "poolSize", "idleConnections", "waitingRequests")
	opKeys(t, "memory", m["memory"], "rss", "heapTotal", "heapUsed", "external", "arrayBuffers")
	opKeys(t, "cpu", m["cpu"], "user", "system")
	if m["uptime"] != 90.0 {
		t.Errorf("uptime = %v, want 90 (the broker's clock)", m["uptime"])
	}
	if msgs := m["messages"].(map[string]any); msgs["total"] != 2.0 || msgs["rate"] != 2.0/60 {
		t.Errorf("messages = %v (2 pushed in the previous minute)", msgs)
	}
	if req := m["requests"].(map[string]any); req["total"] != 2.0 || req["rate"] != 1.0/60 {
		t.Errorf("requests = %v (one push, then this request)", req)
	}
	if db := m["database"].(map[string]any); db["poolSize"].(float64) < 1 {
		t.Errorf("database = %v", db)
	}
	mem, cpu := m["memory"].(map[string]any), m["cpu"].(map[string]any)
	if mem["rss"].(float64) <= 0 || mem["heapUsed"].(float64) <= 0 || mem["heapTotal"].(float64) < mem["heapUsed"].(float64) ||
		cpu["user"].(float64) <= 0 {
		t.Errorf("memory %v cpu %v", mem, cpu)
	}
}

// scrape fetches /metrics/prometheus and parses it with Prometheus's own
// text parser.
func scrape(t *testing.T, s *combtest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+"/metrics/prometheus", nil)
	req.Header.Set("Accept", "application/json") // what the Go SDK sends
	resp, err := s.HTTP.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("scrape: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, buf.String())
	}
	return families
}

// sample returns the value of the sample of family name whose labels
// include want, failing when there is none.
func sample(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mf := families[name]
	if mf == nil {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range mf.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no sample labelled %v", name, want)
	return nil
}

func TestMetricsPrometheus(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("pa", "", "1", 1), opItem("pa", "", "2", 2), opItem("pa", "", "3", 3), opItem("pb", "", "4", 4))
	p := s.Pop("/api/v1/pop/queue/pa?batch=3")
	s.Ack(p.Messages[0], "completed", "")
	s.Do("POST", "/api/v1/ack", map[string]any{"transactionId": p.Messages[1].TransactionID,
		"partitionId": p.Messages[1].PartitionID, "leaseId": p.Messages[1].LeaseID, "status": "dlq"})
	g := s.Pop("/api/v1/pop/queue/pb?consumerGroup=g&autoAck=true")
	if len(g.Messages) != 1 {
		t.Fatalf("group pop = %+v", g)
	}

	f := scrape(t, s)
	counter := func(name string, labels map[string]string) float64 {
		return sample(t, f, name, labels).GetCounter().GetValue()
	}
	gauge := func(name string, labels map[string]string) float64 {
		return sample(t, f, name, labels).GetGauge().GetValue()
	}
	for _, c := range []struct {
		name            string
		server, pa, pbV float64
	}{
		{"messages_pushed_total", 4, 3, 1},
		{"messages_popped_total", 4, 3, 1},
		{"messages_acked_total", 2, 1, 1},
		{"messages_dead_lettered_total", 1, 1, 0},
	} {
		// The server total and the queues' series are two families: a
		// sum() over either counts each message once.
		total := f["comb_"+c.name]
		if total == nil || len(total.Metric) != 1 || len(total.Metric[0].Label) != 0 || total.Metric[0].GetCounter().GetValue() != c.server {
			t.Errorf("comb_%s = %v, want one unlabelled sample %v", c.name, total, c.server)
		}
		var sum float64
		for _, m := range f["comb_queue_"+c.name].GetMetric() {
			sum += m.GetCounter().GetValue()
		}
		if sum != c.server {
			t.Errorf("sum(comb_queue_%s) = %v, want the server total %v", c.name, sum, c.server)
		}
		if got := counter("comb_queue_"+c.name, map[string]string{"queue": "pa"}); got != c.pa {
			t.Errorf("%s pa = %v, want %v", c.name, got, c.pa)
		}
		if got := counter("comb_queue_"+c.name, map[string]string{"queue": "pb"}); got != c.pbV {
			t.Errorf("%s pb = %v, want %v", c.name, got, c.pbV)
		}
	}
	// pa: 3 stored, m1 and m2 completed, m3 leased; pb: its only group passed it.
	if got := gauge("comb_queue_depth", map[string]string{"queue": "pa"}); got != 1 {
		t.Errorf("pa depth = %v", got)
	}
	if got := gauge("comb_queue_stored_messages", map[string]string{"queue": "pa"}); got != 3 {
		t.Errorf("pa stored = %v", got)
	}
	if got := gauge("comb_queue_depth", map[string]string{"queue": "pb"}); got != 0 {
		t.Errorf("pb depth = %v", got)
	}
	if got := gauge("comb_consumer_group_lag", map[string]string{"queue": "pa", "consumer_group": "__QUEUE_MODE__"}); got != 1 {
		t.Errorf("pa lag = %v", got)
	}
	if got := gauge("comb_consumer_group_lag", map[string]string{"queue": "pb", "consumer_group": "g"}); got != 0 {
		t.Errorf("pb lag = %v", got)
	}
	for _, name := range []string{"comb_commit_batch_size", "comb_commit_duration_seconds"} {
		h := sample(t, f, name, nil).GetHistogram()
		if h.GetSampleCount() == 0 || len(h.GetBucket()) == 0 {
			t.Errorf("%s = %v", name, h)
		}
	}
	if got := gauge("comb_database_size_bytes", nil); got <= 0 {
		t.Errorf("database size = %v", got)
	}
	if got := counter("comb_http_requests_total", map[string]string{"code": "2xx"}); got < 5 {
		t.Errorf("2xx requests = %v", got)
	}
	for _, name := range []string{"comb_parked_pops", "comb_commits_unsynced_total", "go_goroutines",
		"process_cpu_seconds_total", "process_start_time_seconds"} {
		if f[name] == nil {
			t.Errorf("no family %s", name)
		}
	}
	// One prefix, and nothing that repeats the process and Go collectors.
	for name := range f {
		if !strings.HasPrefix(name, "comb_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("family %s: want the comb_ prefix", name)
		}
		if strings.Contains(name, "uptime") {
			t.Errorf("family %s repeats process_start_time_seconds", name)
		}
	}

	// Each server has its own registry: another broker starts from zero.
	other := combtest.MustServer(t, combtest.Options{})
	if got := sample(t, scrape(t, other), "comb_messages_pushed_total", nil).GetCounter().GetValue(); got != 0 {
		t.Errorf("second server's pushed = %v", got)
	}
	// A deleted queue's series go away.
	s.Do("DELETE", "/api/v1/resources/queues/pb", nil)
	for _, m := range scrape(t, s)["comb_queue_messages_pushed_total"].Metric {
		for _, l := range m.Label {
			if l.GetValue() == "pb" {
				t.Errorf("pb still exported after its deletion")
			}
		}
	}
}

// A queue no group reads has its stored messages for its depth, and no
// lag series; beside it, a queue a group has read keeps its figures.
func TestMetricsOfAQueueNobodyReads(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("idle", "", "1", 1), opItem("idle", "", "2", 2), opItem("idle", "p2", "3", 3), opItem("read", "", "4", 4),
		opItem("read", "", "5", 5))
	if p := s.Pop("/api/v1/pop/queue/read?consumerGroup=g&autoAck=true"); len(p.Messages) != 1 {
		t.Fatalf("pop = %+v", p)
	}
	f := scrape(t, s)
	for _, c := range []struct {
		name, queue string
		want        float64
	}{
		{"comb_queue_depth", "idle", 3},
		{"comb_queue_stored_messages", "idle", 3},
		{"comb_queue_depth", "read", 1},
		{"comb_queue_stored_messages", "read", 2},
	} {
		if got := sample(t, f, c.name, map[string]string{"queue": c.queue}).GetGauge().GetValue(); got != c.want {
			t.Errorf("%s{queue=%q} = %v, want %v", c.name, c.queue, got, c.want)
		}
	}
	for _, m := range f["comb_consumer_group_lag"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "queue" && l.GetValue() == "idle" {
				t.Errorf("a lag series for the queue nobody reads: %v", m)
			}
		}
	}
}

// A scrape writes per-queue series for at most Config.MetricsQueues
// queues, the first by name, and as many group lags; two gauges count the
// rest, and the server's totals still count every queue.
func TestAScrapeWritesSeriesForABoundedNumberOfQueues(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.MetricsQueues = 3 }})
	var items []map[string]any
	for i := range 5 {
		items = append(items, opItem(fmt.Sprintf("q%d", i), "", fmt.Sprint(i), i))
	}
	s.Push(items...)
	for _, g := range []string{"a", "b"} {
		for i := range 3 {
			if p := s.Pop(fmt.Sprintf("/api/v1/pop/queue/q%d?consumerGroup=%s", i, g)); len(p.Messages) != 1 {
				t.Fatalf("pop q%d as %s = %+v", i, g, p)
			}
		}
	}
	f := scrape(t, s)
	queues := func(family string) []string {
		var out []string
		for _, m := range f[family].GetMetric() {
			var q, g string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "queue":
					q = l.GetValue()
				case "consumer_group":
					g = l.GetValue()
				}
			}
			out = append(out, strings.TrimPrefix(g+"/"+q, "/"))
		}
		return out
	}
	first := []string{"q0", "q1", "q2"}
	for _, family := range []string{"comb_queue_messages_pushed_total", "comb_queue_depth", "comb_queue_stored_messages"} {
		if got := queues(family); !slices.Equal(got, first) {
			t.Errorf("%s: series of %v, want %v", family, got, first)
		}
	}
	if got, want := queues("comb_consumer_group_lag"), []string{"a/q0", "a/q1", "a/q2"}; !slices.Equal(got, want) {
		t.Errorf("lag series of %v, want %v", got, want)
	}
	for name, want := range map[string]float64{"comb_queue_series_omitted": 2, "comb_consumer_group_lag_omitted": 3,
		"comb_messages_pushed_total": 5} {
		ms := f[name].GetMetric()
		if len(ms) != 1 || ms[0].GetGauge().GetValue()+ms[0].GetCounter().GetValue() != want {
			t.Errorf("%s = %v, want %v", name, ms, want)
		}
	}
}
