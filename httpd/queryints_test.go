package httpd_test

import (
	"net/http"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

func TestMalformedIntegerQueryParametersAnswer400NamingThemAndClaimNothing(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	if r := s.Do("POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": "q", "payload": 1}}}); r.Status != http.StatusCreated {
		t.Fatalf("push = %d %s", r.Status, r.Body)
	}
	for _, c := range []struct{ path, want string }{
		{"/api/v1/pop/queue/q?wait=false&timeout=1e13", `timeout must be an integer (got "1e13")`},
		{"/api/v1/pop/queue/q?wait=false&timeout=99999999999999999999999", `timeout must be an integer (got "99999999999999999999999")`},
		{"/api/v1/pop/queue/q?wait=false&batch=1.5", `batch must be an integer (got "1.5")`},
		{"/api/v1/pop/queue/q?wait=false&partitions=abc", `partitions must be an integer (got "abc")`},
		{"/api/v1/messages?queue=q&limit=1e13", `limit must be a non-negative integer (got "1e13")`},
		{"/api/v1/messages?queue=q&offset=-1", `offset must be a non-negative integer (got "-1")`},
		{"/api/v1/dlq?queue=q&limit=1.5", `limit must be a non-negative integer (got "1.5")`},
		{"/api/v1/status/queues/q/messages?limit=-1", `limit must be a non-negative integer (got "-1")`},
		{"/api/v1/resources/queues?offset=abc", `offset must be a non-negative integer (got "abc")`},
		// A pair url.Values cannot decode was dropped: the pop waited its
		// default timeout and limit was the default.
		{"/api/v1/pop/queue/q?wait=false&timeout=%ZZ", `the query string is malformed: invalid URL escape "%ZZ"`},
		{"/api/v1/messages?queue=q&limit=%ZZ", `the query string is malformed: invalid URL escape "%ZZ"`},
	} {
		r := s.Do("GET", c.path, nil)
		if r.Status != http.StatusBadRequest || r.Map(t)["error"] != c.want {
			t.Errorf("GET %s = %d %s, want 400 %q", c.path, r.Status, r.Body, c.want)
		}
	}
	// None of the refused pops leased the message.
	r := s.Do("GET", "/api/v1/pop/queue/q?wait=false&batch=1", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("pop after refusals = %d %s", r.Status, r.Body)
	}
	msgs := r.Map(t)["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["retryCount"] != float64(0) {
		t.Fatalf("pop after refusals = %s", r.Body)
	}
}
