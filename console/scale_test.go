package console_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

// Scale of the walk an operator's console must stay quick at.
const (
	scaleQueues     = 10000
	scalePartitions = 1000
)

// seedScale makes scaleQueues queues of one message each, and a queue
// "wide" of scalePartitions partitions on which the group "fleet" has a
// cursor in every partition, half of them behind.
func seedScale(t *testing.T, srv *combtest.Server) {
	t.Helper()
	start := time.Now()
	const batch = 1000
	for i := 0; i < scaleQueues-1; i += batch {
		var items []map[string]any
		for j := i; j < min(i+batch, scaleQueues-1); j++ {
			items = append(items, map[string]any{"queue": fmt.Sprintf("q%05d", j), "transactionId": "t",
				"payload": map[string]any{"n": j}})
		}
		srv.Push(items...)
	}
	var items []map[string]any
	for i := range scalePartitions {
		for k := range 2 {
			items = append(items, map[string]any{"queue": "wide", "partition": fmt.Sprintf("part-%04d", i),
				"transactionId": fmt.Sprintf("w%d-%d", i, k), "payload": map[string]any{"k": k}})
		}
	}
	srv.Push(items...)
	// A whole-group seek gives fleet a cursor on every partition; then half
	// are moved to the end so that the rest lag.
	if r := srv.Do("POST", "/api/v1/consumer-groups/fleet/queues/wide/seek", map[string]any{"offset": 0}); r.Status != http.StatusOK {
		t.Fatalf("seek fleet: %d %s", r.Status, r.Body)
	}
	for i := 0; i < scalePartitions; i += 2 {
		if r := srv.Do("POST", fmt.Sprintf("/api/v1/consumer-groups/fleet/queues/wide/partitions/part-%04d/seek", i),
			map[string]any{"toEnd": true}); r.Status != http.StatusOK {
			t.Fatalf("seek part-%04d: %d %s", i, r.Status, r.Body)
		}
	}
	t.Logf("seeded %d queues and a group over %d partitions in %v", scaleQueues, scalePartitions, time.Since(start).Round(time.Millisecond))
}

func TestScaleAPITimes(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	seedScale(t, srv)
	for _, p := range []string{"/api/v1/resources/queues", "/api/v1/resources/overview", "/api/v1/status", "/api/v1/resources/queues", "/api/v1/consumer-groups", "/api/v1/consumer-groups/lagging?minLagSeconds=0",
		"/api/v1/consumer-groups/fleet", "/api/v1/resources/overview", "/api/v1/status", "/api/v1/status/queues/wide", "/metrics/prometheus", "/metrics/prometheus"} {
		st := time.Now()
		r := srv.Do("GET", p, nil)
		t.Logf("%s: %d, %d bytes, %v", p, r.Status, len(r.Body), time.Since(st))
	}
	r := srv.Do("POST", "/api/v1/consumer-groups/fleet/queues/wide/seek", map[string]any{"toEnd": true, "dryRun": true})
	t.Logf("preview %d bytes %.300s", len(r.Body), r.Body)
	r = srv.Do("GET", "/api/v1/status", nil)
	t.Logf("status %.600s", r.Body)
}
