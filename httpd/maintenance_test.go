package httpd_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

func TestMaintenanceBuffersPushesAndDrainsThemOnceInOrder(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	status := func() map[string]any {
		t.Helper()
		r := s.Do("GET", "/api/v1/system/maintenance", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("get maintenance: %d %s", r.Status, r.Body)
		}
		return r.Map(t)
	}
	if m := status(); m["maintenanceMode"] != false || m["popMaintenanceMode"] != false || m["bufferedMessages"] != 0.0 ||
		m["bufferHealthy"] != true || m["bufferStats"] == nil {
		t.Fatalf("initial status %v", m)
	}
	for _, bad := range []any{"", "{}", `{"enabled":"true"}`, `{"enabled":1}`, `{"enabled":null}`} {
		r := s.Do("POST", "/api/v1/system/maintenance", bad)
		if r.Status != http.StatusBadRequest || r.Map(t)["error"] != "enabled (boolean) is required" {
			t.Fatalf("POST %q: %d %s", bad, r.Status, r.Body)
		}
	}
	if r := s.Do("POST", "/api/v1/system/maintenance", `{"enabled":`); r.Status != http.StatusBadRequest {
		t.Fatalf("malformed JSON: %d %s", r.Status, r.Body)
	}
	s.Push(map[string]any{"queue": "q", "payload": map[string]any{"i": 0}, "transactionId": "before"})

	r := s.Do("POST", "/api/v1/system/maintenance", map[string]any{"enabled": true})
	if m := r.Map(t); r.Status != http.StatusOK || m["maintenanceMode"] != true || m["message"] == "" {
		t.Fatalf("enable: %d %s", r.Status, r.Body)
	}
	var items []map[string]any
	for i := 1; i <= 5; i++ {
		items = append(items, map[string]any{"queue": "q", "payload": map[string]any{"i": i}, "transactionId": fmt.Sprint("t", i)})
	}
	items = append(items, map[string]any{"queue": "q", "payload": map[string]any{"i": "dup"}, "transactionId": "t2"})
	items = append(items, map[string]any{"queue": "q", "payload": map[string]any{"i": "dup"}, "transactionId": "before"})
	items = append(items, map[string]any{"queue": "q", "payload": map[string]any{"i": 6}})
	out := s.Push(items...)
	for i, o := range out {
		if o["status"] != "buffered" || o["transactionId"] == "" {
			t.Fatalf("item %d answered %v, want buffered with a transactionId", i, o)
		}
	}
	// Parked pushes are invisible: only the message pushed before shows.
	if p := s.Pop("/api/v1/pop/queue/q?batch=100&wait=false&consumerGroup=peek"); len(p.Messages) != 1 {
		t.Fatalf("during maintenance a pop saw %d messages, want 1", len(p.Messages))
	}
	if m := status(); m["maintenanceMode"] != true || m["bufferedMessages"] != 8.0 {
		t.Fatalf("status while buffering %v", m)
	}

	r = s.Do("POST", "/api/v1/system/maintenance", map[string]any{"enabled": false})
	if m := r.Map(t); r.Status != http.StatusOK || m["maintenanceMode"] != false || m["bufferedMessages"] != 0.0 {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	p := s.Pop("/api/v1/pop/queue/q?batch=100&wait=false")
	var got []string
	for _, m := range p.Messages {
		got = append(got, string(m.Data))
	}
	want := []string{`{"i":0}`, `{"i":1}`, `{"i":2}`, `{"i":3}`, `{"i":4}`, `{"i":5}`, `{"i":6}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the drain popped %v, want %v (each once, in order)", got, want)
	}
	if p := s.Pop("/api/v1/pop/queue/q?batch=100&wait=false&consumerGroup=other"); len(p.Messages) != 7 {
		t.Fatalf("a second group sees %d messages, want 7", len(p.Messages))
	}
	// Drained ids are dedup keys like any pushed id.
	if o := s.Push(map[string]any{"queue": "q", "payload": 1, "transactionId": "t3"}); o[0]["status"] != "duplicate" {
		t.Fatalf("re-push of a drained id: %v", o[0])
	}
}

func TestPopMaintenanceAnswersEveryPopAtOnce(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(map[string]any{"queue": "q", "payload": 1})
	parked := make(chan int, 1)
	go func() {
		r := s.Do("GET", "/api/v1/pop/queue/q?wait=true&timeout=60000&consumerGroup=g&subscriptionMode=new", nil)
		parked <- r.Status
	}()
	combtest.CheckFor(t, 5*time.Second, func() error {
		if n := s.Broker.Parked(); n != 1 {
			return fmt.Errorf("%d pops parked", n)
		}
		return nil
	})
	r := s.Do("POST", "/api/v1/system/maintenance/pop", map[string]any{"enabled": true})
	if m := r.Map(t); r.Status != http.StatusOK || m["popMaintenanceMode"] != true || m["message"] == "" {
		t.Fatalf("enable pop maintenance: %d %s", r.Status, r.Body)
	}
	select {
	case code := <-parked:
		if code != http.StatusNoContent {
			t.Fatalf("parked pop answered %d, want 204", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the parked pop was not answered when pop maintenance started")
	}
	start := time.Now()
	if p := s.Pop("/api/v1/pop/queue/q?wait=true&timeout=20000"); p.Status != http.StatusNoContent {
		t.Fatalf("pop during pop maintenance: %d with %d messages", p.Status, len(p.Messages))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("pop during pop maintenance took %v, want at once", d)
	}
	if m := s.Do("GET", "/api/v1/system/maintenance/pop", nil).Map(t); m["popMaintenanceMode"] != true {
		t.Fatalf("pop maintenance status %v", m)
	}
	if m := s.Do("GET", "/api/v1/system/maintenance", nil).Map(t); m["popMaintenanceMode"] != true || m["maintenanceMode"] != false {
		t.Fatalf("maintenance status %v", m)
	}
	if r := s.Do("POST", "/api/v1/system/maintenance/pop", `{}`); r.Status != http.StatusBadRequest {
		t.Fatalf("POST pop without enabled: %d %s", r.Status, r.Body)
	}
	s.Do("POST", "/api/v1/system/maintenance/pop", map[string]any{"enabled": false})
	if p := s.Pop("/api/v1/pop/queue/q?wait=false"); len(p.Messages) != 1 {
		t.Fatalf("after pop maintenance popped %d, want 1", len(p.Messages))
	}
}

func TestSharedStateSaysNoCluster(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	r := s.Do("GET", "/api/v1/system/shared-state", nil)
	if r.Status != http.StatusOK || string(r.Body) != `{"enabled":false}` {
		t.Fatalf("shared-state: %d %s", r.Status, r.Body)
	}
}
