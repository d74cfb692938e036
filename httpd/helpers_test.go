package httpd_test

// Helpers shared by the httpd tests: clients of a test server, reading and
// checking JSON answers and errors, and the operator routes' fixtures.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// as returns a client of srv that sends header on every request.
func as(srv *combtest.Server, header http.Header) *combtest.Client {
	c := *srv.Client
	c.Header = header
	return &c
}

// errorOf is the "error" text of a JSON error answer.
func errorOf(t testing.TB, r *combtest.Response) string {
	t.Helper()
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("error body %q: %v", r.Body, err)
	}
	return body.Error
}

// wantError fails unless resp is status with exactly the error msg.
func wantError(t *testing.T, resp *combtest.Response, status int, msg string) {
	t.Helper()
	if resp.Status != status {
		t.Fatalf("status %d %s, want %d", resp.Status, resp.Body, status)
	}
	if got := resp.Map(t)["error"]; got != msg {
		t.Fatalf("error %q, want %q", got, msg)
	}
}

// opT0 is where the operator tests' manual clocks start.
var opT0 = time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC)

// opServer is a server on a manual clock started at opT0.
func opServer(t *testing.T) (*combtest.Server, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(opT0)
	return combtest.MustServer(t, combtest.Options{Clock: clk}), clk
}

// opItem is a push item; partition "" is the default one.
func opItem(queue, partition, txn string, payload any) map[string]any {
	m := map[string]any{"queue": queue, "payload": payload, "transactionId": txn}
	if partition != "" {
		m["partition"] = partition
	}
	return m
}

// opConfigure configures queue with options or fails the test.
func opConfigure(t *testing.T, s *combtest.Server, queue string, options map[string]any) {
	t.Helper()
	if r := s.Do("POST", "/api/v1/configure", map[string]any{"queue": queue, "options": options}); r.Status != http.StatusOK {
		t.Fatalf("configure %s: %d %s", queue, r.Status, r.Body)
	}
}

// opGet GETs path and decodes a 200 object.
func opGet(t *testing.T, s *combtest.Server, path string) map[string]any {
	t.Helper()
	r := s.Do("GET", path, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	return r.Map(t)
}

// opKeys fails unless m has exactly the keys want.
func opKeys(t *testing.T, what string, m any, want ...string) {
	t.Helper()
	obj, ok := m.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, want an object", what, m)
	}
	var got []string
	for k := range obj {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s keys = %v, want %v", what, got, want)
	}
}

// opWantError fails unless r is status with a JSON {"error": ...} body
// containing text.
func opWantError(t *testing.T, r *combtest.Response, status int, text string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d %s, want %d", r.Status, r.Body, status)
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || !strings.Contains(body.Error, text) {
		t.Fatalf("body %s, want an error containing %q", r.Body, text)
	}
}

// opDeadLetter pops every message of queue for group (one batch) and acks
// each with status dlq, one call each, the clock moving a second between
// calls so failure times differ. It returns the popped messages.
func opDeadLetter(t *testing.T, s *combtest.Server, clk *clock.Manual, queue, partition, group string) []combtest.PopMessage {
	t.Helper()
	path := "/api/v1/pop/queue/" + queue
	if partition != "" {
		path += "/partition/" + partition
	}
	path += "?batch=100"
	if group != "" {
		path += "&consumerGroup=" + group
	}
	pop := s.Pop(path)
	if pop.Status != http.StatusOK {
		t.Fatalf("pop %s: %d", path, pop.Status)
	}
	for _, m := range pop.Messages {
		clk.Advance(time.Second)
		body := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID,
			"status": "dlq", "error": "boom " + m.TransactionID}
		if group != "" {
			body["consumerGroup"] = group
		}
		r := s.Do("POST", "/api/v1/ack", body)
		var out []map[string]any
		r.JSON(t, &out)
		if r.Status != http.StatusOK || len(out) != 1 || out[0]["dlq"] != true {
			t.Fatalf("dlq ack: %d %s", r.Status, r.Body)
		}
	}
	return pop.Messages
}

// dlqReply is the answer of GET /api/v1/dlq.
type dlqReply struct {
	Messages []map[string]any `json:"messages"`
	Total    int              `json:"total"`
	Limit    int              `json:"limit"`
	Offset   int              `json:"offset"`
}

// opDLQ lists the DLQ with query and checks the reply's keys.
func opDLQ(t *testing.T, s *combtest.Server, query string) dlqReply {
	t.Helper()
	r := s.Do("GET", "/api/v1/dlq?"+query, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("dlq %s: %d %s", query, r.Status, r.Body)
	}
	var out dlqReply
	r.JSON(t, &out)
	opKeys(t, "dlq reply", r.Map(t), "messages", "total", "limit", "offset", "pagination")
	return out
}
