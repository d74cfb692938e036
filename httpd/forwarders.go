package httpd

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// Forwarders runs the forwarders between this broker and upstream ones.
// The command passes its runner in; the HTTP layer only calls it.
type Forwarders interface {
	Create(ctx context.Context, f *combtype.Forwarder) (*broker.ForwarderStatus, error)
	Get(ctx context.Context, tenant, name string) (*broker.ForwarderStatus, error)
	List(ctx context.Context, tenant string) ([]broker.ForwarderStatus, error)
	All(ctx context.Context) ([]broker.ForwarderStatus, error)
	SetPaused(ctx context.Context, tenant, name string, paused bool) (*broker.ForwarderStatus, error)
	Delete(ctx context.Context, tenant, name string) error
}

// forwarderJSON is a forwarder as the admin routes show it; the token is
// never shown, only whether there is one.
func forwarderJSON(f *broker.ForwarderStatus) map[string]any {
	return map[string]any{
		"name": f.Name, "direction": f.Direction, "queue": f.Queue, "upstream": f.UpstreamURL,
		"upstreamQueue": f.UpstreamQueue, "consumerGroup": f.Group, "batch": f.Batch, "hasToken": f.HasToken,
		"idPrefix": f.IDPrefix, "paused": f.Paused, "state": f.State, "lag": f.Lag, "lagSeconds": f.LagSeconds,
		"oldestUnforwardedAt": optTime(f.OldestUnforwardedAt), "oldestUnforwardedAgeSeconds": f.OldestUnforwardedAge.Seconds(),
		"forwarded": f.Forwarded, "deadLettered": f.DeadLettered, "duplicates": f.Duplicates,
		"evicted": f.Evicted, "lastSuccessAt": optTime(f.LastSuccessAt), "lastError": optString(f.LastError),
		"lastErrorAt": optTime(f.LastErrorAt), "createdAt": optTime(f.CreatedAt), "updatedAt": optTime(f.UpdatedAt),
	}
}

func optString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// forwarderSummary is what the read-only status route shows of the
// tenant's forwarders: how far behind each is and its last success and
// error, not its definition (upstream, token), which the admin routes
// show. Only a server running forwarders adds it.
func (s *Handler) forwarderSummary(r *http.Request) []map[string]any {
	out := []map[string]any{}
	list, err := s.cfg.Forwarders.List(r.Context(), tenant(r.Context()))
	if err != nil {
		s.log.Warn("status: list forwarders", "err", err)
		return out
	}
	for _, f := range list {
		out = append(out, map[string]any{"name": f.Name, "direction": f.Direction, "queue": f.Queue, "state": f.State,
			"lag": f.Lag, "lagSeconds": f.LagSeconds, "oldestUnforwardedAgeSeconds": f.OldestUnforwardedAge.Seconds(),
			"evicted": f.Evicted, "deadLettered": f.DeadLettered, "lastSuccessAt": optTime(f.LastSuccessAt),
			"lastError": optString(f.LastError), "lastErrorAt": optTime(f.LastErrorAt), "failing": f.State == "backoff"})
	}
	return out
}

// forwarders answers 503 and returns nil when this server runs none.
func (s *Handler) forwarders(w http.ResponseWriter, r *http.Request) Forwarders {
	if s.cfg.Forwarders == nil {
		s.fail(w, r, errNoForwarding)
	}
	return s.cfg.Forwarders
}

func (s *Handler) listForwarders(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	fw := s.forwarders(w, r)
	if fw == nil {
		return
	}
	list, err := fw.List(r.Context(), tenant(r.Context()))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]map[string]any, len(list))
	for i := range list {
		out[i] = forwarderJSON(&list[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"forwarders": out})
}

func (s *Handler) getForwarder(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	fw := s.forwarders(w, r)
	if fw == nil {
		return
	}
	st, err := fw.Get(r.Context(), tenant(r.Context()), ps.ByName("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, forwarderJSON(st))
}

func (s *Handler) createForwarder(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	fw := s.forwarders(w, r)
	if fw == nil {
		return
	}
	var body struct {
		Name          string `json:"name"`
		Direction     string `json:"direction"`
		Queue         string `json:"queue"`
		Upstream      string `json:"upstream"`
		UpstreamQueue string `json:"upstreamQueue"`
		Token         string `json:"token"`
		ConsumerGroup string `json:"consumerGroup"`
		Batch         int    `json:"batch"`
		Paused        bool   `json:"paused"`
		IDPrefix      string `json:"idPrefix"`
	}
	if err := s.readJSON(w, r, &body); err != nil {
		if errors.Is(err, errEmptyBody) {
			err = &badRequest{"A JSON body naming the forwarder is required"}
		}
		s.fail(w, r, err)
		return
	}
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && upstreamIsHere(body.Upstream, addr) {
		s.fail(w, r, &badRequest{"upstream " + body.Upstream + " is this server: a forwarder to itself forwards what it forwarded, without end"})
		return
	}
	st, err := fw.Create(r.Context(), &combtype.Forwarder{Name: body.Name,
		Direction: body.Direction, Queue: body.Queue, UpstreamURL: body.Upstream, UpstreamQueue: body.UpstreamQueue,
		Token: body.Token, Group: body.ConsumerGroup, Batch: body.Batch, Paused: body.Paused, IDPrefix: body.IDPrefix})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, forwarderJSON(st))
}

func (s *Handler) pauseForwarder(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	fw := s.forwarders(w, r)
	if fw == nil {
		return
	}
	paused := strings.HasSuffix(r.URL.Path, "/pause")
	st, err := fw.SetPaused(r.Context(), tenant(r.Context()), ps.ByName("name"), paused)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, forwarderJSON(st))
}

func (s *Handler) deleteForwarder(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	fw := s.forwarders(w, r)
	if fw == nil {
		return
	}
	name := ps.ByName("name")
	if err := fw.Delete(r.Context(), tenant(r.Context()), name); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "name": name})
}

// forwarderCollector exposes each forwarder's lag, counters and state.
type forwarderCollector struct{ f Forwarders }

var (
	fwLabels      = []string{"tenant", "forwarder", "direction"}
	fwLag         = prometheus.NewDesc("comb_forwarder_lag", "Messages not yet forwarded (push: local messages not yet upstream; -1 unknown).", fwLabels, nil)
	fwForwarded   = prometheus.NewDesc("comb_forwarder_forwarded_total", "Messages forwarded since the server started.", fwLabels, nil)
	fwDead        = prometheus.NewDesc("comb_forwarder_dead_lettered_total", "Messages dead-lettered because the other side refused them for good, since the server started.", fwLabels, nil)
	fwEvicted     = prometheus.NewDesc("comb_forwarder_evicted_total", "Messages retention removed before they were forwarded.", fwLabels, nil)
	fwUp          = prometheus.NewDesc("comb_forwarder_up", "1 when the forwarder is running and its last attempt succeeded.", fwLabels, nil)
	fwLastSuccess = prometheus.NewDesc("comb_forwarder_last_success_timestamp_seconds", "Time of the last successful exchange with the upstream.", fwLabels, nil)
	fwLastError   = prometheus.NewDesc("comb_forwarder_last_error_timestamp_seconds", "Time of the forwarder's last error.", fwLabels, nil)
	fwLagSeconds  = prometheus.NewDesc("comb_forwarder_lag_seconds", "How long the last batch delivered had waited, from the commit of its newest message to its delivery (-1 before the first).", fwLabels, nil)
	fwOldestAge   = prometheus.NewDesc("comb_forwarder_oldest_unforwarded_age_seconds", "Age of the oldest local message not yet upstream (push; 0 when none).", fwLabels, nil)
	fwDuplicates  = prometheus.NewDesc("comb_forwarder_duplicates_total", "Items the upstream answered duplicate (already stored), since the server started.", fwLabels, nil)
)

func (c *forwarderCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{fwLag, fwForwarded, fwDead, fwEvicted, fwUp, fwLastSuccess, fwLastError, fwLagSeconds,
		fwOldestAge, fwDuplicates} {
		ch <- d
	}
}

func (c *forwarderCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, err := c.f.All(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(fwLag, err)
		return
	}
	for _, f := range all {
		l := []string{f.Tenant, f.Name, f.Direction}
		ch <- prometheus.MustNewConstMetric(fwLag, prometheus.GaugeValue, float64(f.Lag), l...)
		ch <- prometheus.MustNewConstMetric(fwForwarded, prometheus.CounterValue, float64(f.Forwarded), l...)
		ch <- prometheus.MustNewConstMetric(fwDead, prometheus.CounterValue, float64(f.DeadLettered), l...)
		ch <- prometheus.MustNewConstMetric(fwEvicted, prometheus.CounterValue, float64(f.Evicted), l...)
		up := 0.0
		if f.State == "running" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(fwUp, prometheus.GaugeValue, up, l...)
		if !f.LastSuccessAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(fwLastSuccess, prometheus.GaugeValue, float64(f.LastSuccessAt.UnixMilli())/1000, l...)
		}
		if !f.LastErrorAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(fwLastError, prometheus.GaugeValue, float64(f.LastErrorAt.UnixMilli())/1000, l...)
		}
		ch <- prometheus.MustNewConstMetric(fwLagSeconds, prometheus.GaugeValue, f.LagSeconds, l...)
		ch <- prometheus.MustNewConstMetric(fwOldestAge, prometheus.GaugeValue, f.OldestUnforwardedAge.Seconds(), l...)
		ch <- prometheus.MustNewConstMetric(fwDuplicates, prometheus.CounterValue, float64(f.Duplicates), l...)
	}
}

// upstreamIsHere reports whether upstream names the server that took the
// request on local: its port, on a loopback or unspecified address, the
// address itself, or localhost. A forwarder made so pushed every message
// back into its own queue, where it was forwarded again: 100 messages
// were 350,800 and 36 MB of file after 30 s, without end, since each
// round's transactionId was new (its prefix added again, then hashed).
// An upstream reached by another name of this machine is not told apart.
func upstreamIsHere(upstream string, local net.Addr) bool {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return false
	}
	tcp, ok := local.(*net.TCPAddr)
	if !ok {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != strconv.Itoa(tcp.Port) {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified() || ip.Equal(tcp.IP))
}
