package httpd_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// brokenWriter is a connection that dies before the reply gets out.
type brokenWriter struct{ *httptest.ResponseRecorder }

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

func TestAPopWhoseReplyCannotBeWrittenGivesItsLeaseBack(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{})
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", Payload: []byte(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	h := httpd.NewHandler(b, httpd.Config{})
	h.ServeHTTP(brokenWriter{httptest.NewRecorder()}, httptest.NewRequest("GET", "/api/v1/pop/queue/q?batch=1", nil))
	// The partition is not held for leaseTime by a reply nobody received.
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Batch: 1})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].RetryCount != 0 {
		t.Fatalf("pop after an undelivered reply = %+v, %v", res, err)
	}
}

func TestAnAutoAckPopWhoseReplyCannotBeWrittenLosesNothing(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{})
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", Payload: []byte(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	h := httpd.NewHandler(b, httpd.Config{})
	h.ServeHTTP(brokenWriter{httptest.NewRecorder()}, httptest.NewRequest("GET", "/api/v1/pop/queue/q?batch=1&autoAck=true", nil))
	// The client never saw the message, so it was not acknowledged.
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Batch: 1})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("pop after an undelivered autoAck reply = %+v, %v", res, err)
	}
}

func TestAnAutoAckPopThatWasDeliveredIsAcknowledged(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Do("POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": "q", "payload": 1}, map[string]any{"queue": "q", "payload": 2}}})
	r := s.Do("GET", "/api/v1/pop/queue/q?batch=1&autoAck=true&wait=false", nil)
	if r.Status != http.StatusOK || r.Map(t)["leaseId"] != "" {
		t.Fatalf("autoAck pop = %d %s", r.Status, r.Body)
	}
	// Not leased: the next pop gets the second message at once, and
	// after it nothing is left.
	r = s.Do("GET", "/api/v1/pop/queue/q?batch=10&wait=false", nil)
	if msgs, _ := r.Map(t)["messages"].([]any); r.Status != http.StatusOK || len(msgs) != 1 || msgs[0].(map[string]any)["data"] != float64(2) {
		t.Fatalf("pop after an autoAck pop = %d %s", r.Status, r.Body)
	}
}

func TestOutOfRangeOptionsAnswer400AndWriteNothing(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	for _, c := range []struct{ body, want string }{
		{`{"queue":"q","options":{"retentionSeconds":1e13}}`, "options.retentionSeconds must be between 0 and 315360000 (got 10000000000000)"},
		{`{"queue":"q","options":{"leaseTime":1e10}}`, "options.leaseTime must be between 0 and 31536000 (got 10000000000)"},
	} {
		r := s.Do("POST", "/api/v1/configure", c.body)
		if r.Status != http.StatusBadRequest || r.Map(t)["error"] != c.want {
			t.Fatalf("configure %s = %d %s", c.body, r.Status, r.Body)
		}
	}
	if q, err := s.Broker.QueueStats(context.Background(), "q"); err == nil {
		t.Fatalf("a refused configure created %+v", q)
	}
	r := s.Do("POST", "/api/v1/lease/00000000-0000-0000-0000-000000000000/extend", `{"seconds":10000000000}`)
	if r.Status != http.StatusBadRequest || r.Map(t)["error"] != "seconds must be between 1 and 31536000 (got 10000000000)" {
		t.Fatalf("extend = %d %s", r.Status, r.Body)
	}
	r = s.Do("GET", "/api/v1/pop/queue/q?timeout=9223372036854775807", nil)
	if r.Status != http.StatusBadRequest || r.Map(t)["error"] != "timeout must be between 0 and 3600000 (got 9223372036854775807)" {
		t.Fatalf("pop = %d %s", r.Status, r.Body)
	}
}

func TestPushesPastTheInFlightBoundAnswer503WithRetryAfter(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{Broker: func(o *broker.Options) { o.MaxPushBytesInFlight = 1 << 20 }})
	body := `{"items":[{"queue":"q","payload":"` + strings.Repeat("x", 512<<10) + `"}]}`
	type answer struct {
		status     int
		retryAfter string
		body       string
	}
	answers := make(chan answer, 32)
	for range cap(answers) {
		go func() {
			r, err := http.Post(s.HTTP.URL+"/api/v1/push", "application/json", strings.NewReader(body))
			if err != nil {
				answers <- answer{status: -1, body: err.Error()}
				return
			}
			defer r.Body.Close()
			b, _ := io.ReadAll(r.Body)
			answers <- answer{r.StatusCode, r.Header.Get("Retry-After"), string(b)}
		}()
	}
	var busy, created int
	for range cap(answers) {
		a := <-answers
		switch {
		case a.status == http.StatusCreated:
			created++
		case a.status == http.StatusServiceUnavailable && a.retryAfter != "" &&
			a.body == `{"error":"Too many pushes in flight, retry shortly"}`:
			busy++
		default:
			t.Fatalf("push answered %d %q %s", a.status, a.retryAfter, a.body)
		}
	}
	if busy == 0 || created == 0 {
		t.Fatalf("%d created, %d busy: 32 concurrent pushes of 512 KiB under a 1 MiB bound", created, busy)
	}
}
