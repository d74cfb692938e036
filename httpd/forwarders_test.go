package httpd_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/forward"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// forwarderServer is a server whose forwarder routes run a real runner;
// edit, if given, edits the broker's options.
func forwarderServer(t *testing.T, edit ...func(*broker.Options)) *combtest.Server {
	t.Helper()
	var runner *forward.Runner
	opts := combtest.Options{HTTP: func(c *httpd.Config) {
		c.Forwarders = lazyRunner{&runner}
	}}
	if len(edit) > 0 {
		opts.Broker = edit[0]
	}
	s := combtest.MustServer(t, opts)
	runner = forward.New(s.Broker, forward.Options{MaxBackoff: 10 * time.Millisecond, Poll: 100 * time.Millisecond})
	if err := runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runner.Stop)
	return s
}

// lazyRunner lets the server be built before the runner over its broker.
type lazyRunner struct{ r **forward.Runner }

func (l lazyRunner) Create(ctx context.Context, f *combtype.Forwarder) (*broker.ForwarderStatus, error) {
	return (*l.r).Create(ctx, f)
}
func (l lazyRunner) Get(ctx context.Context, tenant, name string) (*broker.ForwarderStatus, error) {
	return (*l.r).Get(ctx, tenant, name)
}
func (l lazyRunner) List(ctx context.Context, tenant string) ([]broker.ForwarderStatus, error) {
	return (*l.r).List(ctx, tenant)
}
func (l lazyRunner) All(ctx context.Context) ([]broker.ForwarderStatus, error) {
	return (*l.r).All(ctx)
}
func (l lazyRunner) SetPaused(ctx context.Context, tenant, name string, paused bool) (*broker.ForwarderStatus, error) {
	return (*l.r).SetPaused(ctx, tenant, name, paused)
}
func (l lazyRunner) Delete(ctx context.Context, tenant, name string) error {
	return (*l.r).Delete(ctx, tenant, name)
}

func TestForwarderRoutesCreateListPauseResumeAndDeleteWithoutShowingTheToken(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	s := forwarderServer(t)
	s.Push(map[string]any{"queue": "q", "transactionId": "a", "payload": 1})

	r := s.Do("POST", "/api/v1/forwarders", map[string]any{"name": "up", "queue": "q", "upstream": up.URL, "token": "s3cret"})
	if r.Status != http.StatusCreated || strings.Contains(string(r.Body), "s3cret") {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if m := r.Map(t); m["hasToken"] != true || m["direction"] != "push" || m["consumerGroup"] != "comb-forward.up" ||
		m["batch"] != float64(combtype.ForwarderDefaultBatch) || m["paused"] != false {
		t.Errorf("create answered %v", m)
	}
	combtest.CheckFor(t, 10*time.Second, func() error {
		r := s.Do("GET", "/api/v1/forwarders/up", nil)
		if m := r.Map(t); m["lag"] != 0.0 || m["forwarded"] != 1.0 || m["lastSuccessAt"] == nil {
			return &statusErr{r}
		}
		return nil
	})
	if r := s.Do("POST", "/api/v1/forwarders", map[string]any{"name": "up", "queue": "q", "upstream": up.URL}); r.Status != http.StatusConflict {
		t.Errorf("second create of one name: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/api/v1/forwarders/up/pause", nil); r.Status != http.StatusOK || r.Map(t)["state"] != "paused" {
		t.Errorf("pause: %d %s", r.Status, r.Body)
	}
	s.Push(map[string]any{"queue": "q", "transactionId": "b", "payload": 2})
	r = s.Do("GET", "/api/v1/forwarders", nil)
	var list struct {
		Forwarders []map[string]any `json:"forwarders"`
	}
	r.JSON(t, &list)
	if len(list.Forwarders) != 1 || list.Forwarders[0]["lag"] != 1.0 || list.Forwarders[0]["state"] != "paused" {
		t.Errorf("list while paused: %s", r.Body)
	}
	r = s.Do("GET", "/api/v1/status", nil)
	var status struct {
		Forwarders []map[string]any `json:"forwarders"`
	}
	r.JSON(t, &status)
	if len(status.Forwarders) != 1 || status.Forwarders[0]["name"] != "up" || status.Forwarders[0]["lag"] != 1.0 ||
		status.Forwarders[0]["state"] != "paused" {
		t.Errorf("status route forwarders: %s", r.Body)
	}
	if r := s.Do("POST", "/api/v1/forwarders/up/resume", nil); r.Status != http.StatusOK || r.Map(t)["paused"] != false {
		t.Errorf("resume: %d %s", r.Status, r.Body)
	}
	combtest.CheckFor(t, 10*time.Second, func() error {
		if r := s.Do("GET", "/api/v1/forwarders/up", nil); r.Map(t)["lag"] != 0.0 {
			return &statusErr{r}
		}
		return nil
	})
	if r := s.Do("DELETE", "/api/v1/forwarders/up", nil); r.Status != http.StatusOK {
		t.Errorf("delete: %d %s", r.Status, r.Body)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/forwarders/up"}, {"DELETE", "/api/v1/forwarders/up"}, {"POST", "/api/v1/forwarders/up/pause"},
	} {
		if r := s.Do(c.method, c.path, nil); r.Status != http.StatusNotFound || r.Map(t)["error"] != "Forwarder not found" {
			t.Errorf("%s %s after delete: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	if got := popAllHTTP(t, up, "q"); len(got) != 2 {
		t.Errorf("upstream holds %d messages, want 2", len(got))
	}
}

func TestBadForwarderDefinitionsAre400AndStoreNothing(t *testing.T) {
	s := forwarderServer(t)
	for _, body := range []any{
		"", `{"name":`, `[]`,
		map[string]any{"queue": "q", "upstream": "http://h"},
		map[string]any{"name": "n", "upstream": "http://h"},
		map[string]any{"name": "n", "queue": "q"},
		map[string]any{"name": "n", "queue": "q", "upstream": "not a url"},
		map[string]any{"name": "n", "queue": "q", "upstream": "http://h", "direction": "both"},
		map[string]any{"name": "n", "queue": "q", "upstream": "http://h", "batch": -1},
		map[string]any{"name": "n", "queue": "q", "upstream": "http://h", "batch": "ten"},
		// What an upstream could never take, and what would fail every
		// round: names past 255 characters (a long name's default group
		// too), a URL or token past their bounds, a token that is no
		// header value.
		map[string]any{"name": "n", "queue": strings.Repeat("q", 256), "upstream": "http://h"},
		map[string]any{"name": "n", "queue": "q", "upstreamQueue": strings.Repeat("q", 256), "upstream": "http://h"},
		map[string]any{"name": "n", "queue": "q", "consumerGroup": strings.Repeat("g", 256), "upstream": "http://h"},
		map[string]any{"name": strings.Repeat("n", 243), "queue": "q", "upstream": "http://h"},
		map[string]any{"name": "n", "queue": "q", "upstream": "http://h/" + strings.Repeat("p", 2048)},
		map[string]any{"name": "n", "queue": "q", "upstream": "http://h", "token": strings.Repeat("t", 4097)},
		map[string]any{"name": "n", "queue": "q", "upstream": "http://h", "token": "abc\r\nX-Injected:1"},
		map[string]any{"name": "n", "queue": "q", "upstream": "http://h", "token": "two words"},
	} {
		if r := s.Do("POST", "/api/v1/forwarders", body); r.Status != http.StatusBadRequest || r.Map(t)["error"] == nil {
			t.Errorf("POST %v: %d %s", body, r.Status, r.Body)
		}
	}
	if r := s.Do("GET", "/api/v1/forwarders", nil); r.Status != http.StatusOK || string(r.Body) != `{"forwarders":[]}` {
		t.Errorf("after refused creates: %d %s", r.Status, r.Body)
	}
	// At the bounds a definition is stored, and a long name with a group
	// of its own is.
	for _, body := range []map[string]any{
		{"name": strings.Repeat("n", 242), "queue": strings.Repeat("q", 255), "upstreamQueue": strings.Repeat("u", 255),
			"upstream": "http://h/" + strings.Repeat("p", 2048-len("http://h/")), "token": strings.Repeat("t", 4096)},
		{"name": strings.Repeat("m", 255), "queue": "q", "consumerGroup": strings.Repeat("g", 255), "upstream": "http://h"},
	} {
		if r := s.Do("POST", "/api/v1/forwarders", body); r.Status != http.StatusCreated {
			t.Errorf("POST at the bounds: %d %.300s", r.Status, r.Body)
		}
	}
}

func TestForwarderRoutesAnswer503WhenTheServerRunsNoForwarders(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	if r := s.Do("GET", "/api/v1/forwarders", nil); r.Status != http.StatusServiceUnavailable || r.Map(t)["error"] == nil {
		t.Errorf("GET: %d %s", r.Status, r.Body)
	}
}

func TestForwarderMetricsAreScraped(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	s := forwarderServer(t)
	if r := s.Do("POST", "/api/v1/forwarders", map[string]any{"name": "up", "queue": "q", "upstream": up.URL, "paused": true}); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	s.Push(map[string]any{"queue": "q", "transactionId": "a", "payload": 1})
	r := s.Do("GET", "/metrics/prometheus", nil)
	for _, want := range []string{
		`comb_forwarder_lag{direction="push",forwarder="up",tenant=""} 1`,
		`comb_forwarder_up{direction="push",forwarder="up",tenant=""} 0`,
		`comb_forwarder_evicted_total{direction="push",forwarder="up",tenant=""} 0`,
	} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

type statusErr struct{ r *combtest.Response }

func (e *statusErr) Error() string { return string(e.r.Body) }

func popAllHTTP(t *testing.T, s *combtest.Server, queue string) []combtest.PopMessage {
	t.Helper()
	var out []combtest.PopMessage
	for {
		p := s.Pop("/api/v1/pop/queue/" + queue + "?batch=1000&consumerGroup=check")
		if len(p.Messages) == 0 {
			return out
		}
		for _, m := range p.Messages {
			s.Ack(m, "completed", "check")
		}
		out = append(out, p.Messages...)
	}
}

// A forwarder whose upstream is the server itself is refused: it pushed
// every message back into its own queue, where it was forwarded again,
// without end (100 messages were 350,800 after 30 s). Another port of
// this machine is an upstream like any other.
func TestAForwarderToTheServerItselfIsRefused(t *testing.T) {
	s := forwarderServer(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	for _, up := range []string{s.URL, "http://localhost:" + port, "http://127.0.0.1:" + port + "/", "http://0.0.0.0:" + port,
		"http://[::1]:" + port} {
		body := map[string]any{"name": "self", "queue": "q", "upstream": up}
		if r := s.Do("POST", "/api/v1/forwarders", body); r.Status != http.StatusBadRequest ||
			!strings.Contains(fmt.Sprint(r.Map(t)["error"]), "is this server") {
			t.Errorf("POST with upstream %s: %d %s", up, r.Status, r.Body)
		}
	}
	other, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"name": "elsewhere", "queue": "q", "upstream": fmt.Sprintf("http://127.0.0.1:%d", other+1), "paused": true}
	if r := s.Do("POST", "/api/v1/forwarders", body); r.Status != http.StatusCreated {
		t.Errorf("POST with another port: %d %s", r.Status, r.Body)
	}
}
