package httpd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

// FuzzDLQPurgeQuery sends arbitrary query strings to DELETE /api/v1/dlq.
// The answer is never a 5xx, always JSON, and a refused purge deletes
// nothing.
func FuzzDLQPurgeQuery(f *testing.F) {
	for _, seed := range []string{"", "all=true", "all=1", "queue=q", "queue=q&limit=1", "limit=-1", "ids=", "ids=%zz",
		"from=2026-01-01&to=x", "consumerGroup=g&consumergroup=g", "queue=q&queue=r", "ids=a,b&ids=c", "all=true&all=false",
		"limit=99999999999999999999", "%", "&&==", "queue=%00"} {
		f.Add(seed)
	}
	srv := combtest.MustServer(f, combtest.Options{})
	h := srv.HTTP.Config.Handler
	n := 0
	total := func(t *testing.T) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/dlq?limit=1", nil))
		var out struct{ Total int }
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("dlq listing: %d %s", rec.Code, rec.Body.Bytes())
		}
		return out.Total
	}
	// refill dead-letters two fresh messages of queue q.
	refill := func(t *testing.T) {
		n++
		c := *srv.Client // F's helpers may not be called inside the fuzz function
		c.TB = t
		c.Push(map[string]any{"queue": "q", "transactionId": fmt.Sprintf("a%d", n), "payload": n},
			map[string]any{"queue": "q", "transactionId": fmt.Sprintf("b%d", n), "payload": n})
		for _, m := range c.Pop("/api/v1/pop/queue/q?batch=10").Messages {
			c.Do("POST", "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
				"leaseId": m.LeaseID, "status": "dlq"})
		}
	}
	f.Fuzz(func(t *testing.T, query string) {
		if total(t) < 2 {
			refill(t)
		}
		before := total(t)
		req := httptest.NewRequest(http.MethodDelete, "/api/v1/dlq", nil)
		req.URL.RawQuery = query
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("DELETE ?%s: %d %s", query, rec.Code, rec.Body.Bytes())
		}
		if rec.Code != http.StatusOK {
			if after := total(t); after != before {
				t.Fatalf("refused DELETE ?%s (%d) changed the DLQ from %d to %d rows", query, rec.Code, before, after)
			}
		}
	})
}
