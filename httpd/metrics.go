package httpd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/comb-broker/comb/broker"
)

// httpStats counts the requests a Server answered and holds its metrics
// registry.
type httpStats struct {
	clock   interface{ Now() time.Time }
	total   atomic.Int64
	byClass [6]atomic.Int64 // by status / 100; 0 = no status written
	rate    rateCounter
	reg     *prometheus.Registry
}

// begin counts a request and wraps w to learn the status it is answered
// with; done records it.
func (h *httpStats) begin(w http.ResponseWriter) (http.ResponseWriter, func()) {
	if h == nil {
		return w, func() {}
	}
	h.total.Add(1)
	h.rate.add(h.clock.Now())
	rec := &statusRecorder{ResponseWriter: w}
	return rec, func() { h.byClass[min(rec.status/100, 5)].Add(1) }
}

// statusRecorder remembers the status of the answer.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// rateCounter counts events per minute: the per-second rate reported is
// the previous complete minute's count over 60.
type rateCounter struct {
	mu       sync.Mutex
	minute   int64 // unix minute of cur
	cur      int64
	previous int64 // count of minute-1
}

func (c *rateCounter) add(t time.Time) {
	m := t.Unix() / 60
	c.mu.Lock()
	c.roll(m)
	c.cur++
	c.mu.Unlock()
}

// Lock should be held.
func (c *rateCounter) roll(m int64) {
	switch {
	case m == c.minute:
	case m == c.minute+1:
		c.minute, c.previous, c.cur = m, c.cur, 0
	default:
		c.minute, c.previous, c.cur = m, 0, 0
	}
}

func (c *rateCounter) perSecond(t time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll(t.Unix() / 60)
	return float64(c.previous) / 60
}

// newHTTPStats makes s's request counters and its own metrics registry:
// two Servers in one process (tests, or an embedding program) never share
// or collide in a global one.
func newHTTPStats(s *Handler) *httpStats {
	h := &httpStats{clock: s.b, reg: prometheus.NewRegistry()}
	h.reg.MustRegister(newPromCollector(s), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if s.cfg.Forwarders != nil {
		h.reg.MustRegister(&forwarderCollector{f: s.cfg.Forwarders})
	}
	return h
}

// rssBytes is the resident set size from /proc/self/statm, 0 where there
// is no such file.
func rssBytes() int64 {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Split(bufio.ScanWords)
	sc.Scan() // size
	if !sc.Scan() {
		return 0
	}
	pages, err := strconv.ParseInt(sc.Text(), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// metricsJSON answers Queen's JSON metrics. The shape is Node's: memory
// heapTotal/heapUsed are the Go heap's reserved and live bytes, external
// is what the runtime holds outside the heap, arrayBuffers has no Go
// counterpart and is 0. waitingRequests is the writes queued for the
// single writer.
func (s *Handler) metricsJSON(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	m := s.b.Metrics()
	now := s.b.Now()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pool := s.b.EngineStats().Readers
	user, system := cpuMicros()
	pushRate, _ := m.Rates()
	rss := rssBytes()
	if rss == 0 {
		rss = int64(ms.Sys)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"uptime":   m.Uptime().Seconds(),
		"requests": map[string]any{"total": s.stats.total.Load(), "rate": s.stats.rate.perSecond(now)},
		"messages": map[string]any{"total": m.Pushed.Load(), "rate": pushRate},
		"database": map[string]any{"poolSize": pool.MaxOpen, "idleConnections": pool.Idle,
			"waitingRequests": s.b.PendingWrites()},
		"memory": map[string]any{"rss": rss, "heapTotal": ms.HeapSys, "heapUsed": ms.HeapAlloc,
			"external": ms.Sys - ms.HeapSys, "arrayBuffers": 0},
		"cpu": map[string]any{"user": user, "system": system},
	})
}

// metricsPrometheus answers the text exposition format 0.0.4 whatever the
// Accept header says: SDKs send Accept: application/json and want text.
func (s *Handler) metricsPrometheus(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	visible, anyTenant := func(string) bool { return true }, true
	var tenant *string
	if s.cfg.Auth != nil {
		tenant = s.scrapeTenant(r)
		visible, anyTenant = func(t string) bool { return tenant != nil && t == *tenant }, tenant != nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	direct := s.directFamilies(ctx, visible, anyTenant)
	families, err := s.stats.reg.Gather()
	if err != nil {
		// Gather still returns what it could collect; a failed read
		// leaves its families out rather than the whole answer.
		s.log.Warn("metrics gather", "err", err)
	}
	if s.cfg.Auth != nil {
		families = tenantSeries(families, tenant)
	}
	// Both lists are sorted by name: merged, the families come in the
	// order the registry alone gave them.
	// Grown once to about its size: doubling up to 3.5 MB (10,000
	// queues) copied it over and over.
	size := 64 << 10
	for _, f := range direct {
		size += f.n * (len(f.name) + 48)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	for _, mf := range families {
		for len(direct) > 0 && direct[0].name < mf.GetName() {
			direct[0].writeTo(buf)
			direct = direct[1:]
		}
		if _, err := expfmt.MetricFamilyToText(buf, mf); err != nil {
			s.fail(w, r, fmt.Errorf("encode metrics: %w", err))
			return
		}
	}
	for i := range direct {
		direct[i].writeTo(buf)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// promCollector reads the broker's server-wide counters at scrape time;
// the queue and group series and the store's reads are directFamilies'
// (queueseries.go). Nothing is kept between scrapes.
//
// Every name starts with comb_: Queen's own dashboard reads Queen's JSON
// /metrics (kept as Queen shapes it), not these names, so none of them is
// kept for it (docs/operations.md). A server total and its per-queue
// series are two families (comb_messages_pushed_total and
// comb_queue_messages_pushed_total), so sum() over either counts each
// message once. Process and runtime figures (start time, memory, CPU,
// goroutines) are the process_ and go_ collectors' alone.
type promCollector struct {
	s                                 *Handler
	pushed, popped, acked, dlq        *prometheus.Desc
	commitOps, commitSeconds          *prometheus.Desc
	pendingWrites                     *prometheus.Desc
	readerInUse, readerOpen           *prometheus.Desc
	requests, parked                  *prometheus.Desc
	conns, connsRefused               *prometheus.Desc
	quarantined, evicted, lazyCommits *prometheus.Desc
}

func newPromCollector(s *Handler) *promCollector {
	// Queue series carry the queue's tenant: two tenants may each own a
	// queue of the same name.
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &promCollector{
		s:             s,
		pushed:        d("comb_messages_pushed_total", "Messages appended to the log by the whole server (duplicates excluded)."),
		popped:        d("comb_messages_popped_total", "Messages delivered by pops, whole server."),
		acked:         d("comb_messages_acked_total", "Messages completed by acks (autoAck pops included), whole server."),
		dlq:           d("comb_messages_dead_lettered_total", "Messages dead-lettered, whole server."),
		commitOps:     d("comb_commit_batch_size", "Writes fused into one commit."),
		commitSeconds: d("comb_commit_duration_seconds", "Time from begin to commit, durable unless lazy (comb_commits_unsynced_total)."),
		pendingWrites: d("comb_database_pending_writes", "Writes queued for the single writer."),
		readerInUse:   d("comb_database_readers_in_use", "Reader pool connections in use."),
		readerOpen:    d("comb_database_readers_open", "Reader pool connections open."),
		requests:      d("comb_http_requests_total", "HTTP requests answered, by status class.", "code"),
		parked:        d("comb_parked_pops", "Long-poll pops waiting for messages."),
		conns:         d("comb_http_connections", "Connections the server holds open, parked ones included."),
		connsRefused: d("comb_http_connections_refused_total",
			"Connections refused past the bound on open connections (serve --max-conns)."),
		quarantined: d("comb_segments_quarantined_total",
			"Segments put aside because they failed their checksum or did not decode (docs/limits.md)."),
		evicted: d("comb_frames_evicted_unconsumed_total",
			"Frames retention removed before a consumer group that needed them consumed them."),
		lazyCommits: d("comb_commits_unsynced_total",
			"Commits of lease-only pops made without a sync of their own; the next durable commit syncs them."),
	}
}

func (c *promCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pushed, c.popped, c.acked, c.dlq, c.commitOps, c.commitSeconds, c.pendingWrites,
		c.readerInUse, c.readerOpen, c.requests, c.parked, c.conns, c.connsRefused, c.quarantined, c.evicted, c.lazyCommits} {
		ch <- d
	}
}

func (c *promCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.s.b
	m := b.Metrics()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(c.pushed, m.Pushed.Load())
	counter(c.popped, m.Popped.Load())
	counter(c.acked, m.Acked.Load())
	counter(c.dlq, m.DeadLettered.Load())
	histogram := func(d *prometheus.Desc, h *broker.Histogram) {
		n, sum, buckets := h.Snapshot()
		ch <- prometheus.MustNewConstHistogram(d, n, sum, buckets)
	}
	histogram(c.commitOps, m.CommitOps)
	histogram(c.commitSeconds, m.CommitSeconds)
	es := b.EngineStats()
	counter(c.quarantined, es.Quarantined)
	counter(c.evicted, es.FramesEvicted)
	counter(c.lazyCommits, es.LazyCommits)
	// Read after the store's reads of directFamilies, as the scrape ends.
	gauge(c.pendingWrites, float64(es.PendingWrites))
	gauge(c.readerInUse, float64(es.Readers.InUse))
	gauge(c.readerOpen, float64(es.Readers.Open))
	gauge(c.parked, float64(b.Parked()))
	var open, refused int64
	if cc := c.s.conns; cc != nil {
		open, refused = cc.open.Load(), cc.refused.Load()
	}
	gauge(c.conns, float64(open))
	counter(c.connsRefused, refused)
	for class := 1; class <= 5; class++ {
		counter(c.requests, c.s.stats.byClass[class].Load(), strconv.Itoa(class)+"xx")
	}
}

// scrapeTenant is the tenant whose series a scrape may see when auth is on.
// The route is public, so a scrape without a valid token sees only the
// series that name no tenant (server totals, the database, the runtime).
func (s *Handler) scrapeTenant(r *http.Request) *string {
	if r.Header.Get("Authorization") == "" {
		return nil
	}
	id, err := s.cfg.Auth.Verify(r.Header.Get("Authorization"))
	if err != nil || id.Level < ReadOnly {
		return nil
	}
	return &id.Tenant
}

// tenantSeries keeps the series that belong to no tenant, and those of
// tenant when it is not nil: one tenant never learns another's queue or
// group names from the public scrape. Ownership is not the tenant label's
// value: the default tenant's queues carry tenant="", which an anonymous
// scrape must not see either.
func tenantSeries(families []*dto.MetricFamily, tenant *string) []*dto.MetricFamily {
	out := families[:0]
	for _, mf := range families {
		kept := mf.Metric[:0]
		for _, m := range mf.Metric {
			owner, owned := seriesTenant(m)
			if !owned || (tenant != nil && owner == *tenant) {
				kept = append(kept, m)
			}
		}
		if len(kept) > 0 {
			mf.Metric = kept
			out = append(out, mf)
		}
	}
	return out
}

// seriesTenant reports the tenant a series belongs to, and whether it
// belongs to one at all: it does when it names a queue (even the queue
// named "") or a consumer group.
func seriesTenant(m *dto.Metric) (tenant string, owned bool) {
	for _, lp := range m.GetLabel() {
		switch lp.GetName() {
		case "tenant":
			tenant = lp.GetValue()
		case "queue", "consumer_group":
			owned = true
		}
	}
	return tenant, owned
}
