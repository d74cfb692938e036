package httpd_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// Offsets and counters another program set to the ends of int64 with
// sqlite3 are answered, not 500: SUM refused to add them ("integer
// overflow"), and an offset of 2^63-1 plus one came back from SQLite as
// a float that database/sql would not scan into an int64. Before, the
// consumer-group, queue, status and message listings and the pops of the
// edited queue answered 500 for as long as the values stayed.
func TestOffsetsAndCountersEditedToTheEndsOfInt64AreAnswered(t *testing.T) {
	for name, edit := range map[string]string{
		"counters":                          `UPDATE cursors SET total_consumed = 9223372036854775807, batches_consumed = 9223372036854775807`,
		"last offset":                       `UPDATE partitions SET last_offset = 9223372036854775807`,
		"log start":                         `UPDATE partitions SET log_start = -9223372036854775808`,
		"segment counts":                    `UPDATE segments SET frame_count = 1 << 62`,
		"segment counts at the end":         `UPDATE segments SET frame_count = 9223372036854775807`,
		"segment counts past the partition": `UPDATE segments SET frame_count = 1000000`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "comb.db")
			b := combtest.OpenBrokerAt(t, path, combtest.Options{})
			ts := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
			defer func() {
				b.Drain()
				ts.Close()
				if err := b.Close(); err != nil {
					t.Error(err)
				}
			}()
			c := &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}
			c.Push(map[string]any{"queue": "q", "partition": "p1", "payload": 1, "transactionId": "t1"}, map[string]any{"queue": "q", "partition": "p2", "payload": 2})
			for _, g := range []string{"g1", "g2"} {
				c.Pop("/api/v1/pop/queue/q?consumerGroup=" + g + "&batch=10&partitions=5&autoAck=true")
			}
			combtest.SQLite3Exec(t, path, edit)
			for _, route := range []string{"/api/v1/consumer-groups", "/api/v1/consumer-groups/g1",
				"/api/v1/consumer-groups/lagging?minLagSeconds=0", "/api/v1/resources/overview", "/api/v1/resources/queues",
				"/api/v1/resources/queues/q", "/api/v1/resources/namespaces", "/api/v1/status", "/api/v1/status/queues",
				"/api/v1/status/queues/q", "/api/v1/status/analytics", "/api/v1/messages", "/metrics", "/metrics/prometheus",
				"/api/v1/pop/queue/q?consumerGroup=g3&batch=5&partitions=5", "/api/v1/pop/queue/q?consumerGroup=g1&batch=5"} {
				if strings.HasPrefix(name, "segment counts") && route == "/api/v1/messages" {
					// store's TestAFrameCountEditedPastItsBytesIsDamageNotAWalk:
					// before, a walk of 2^62 offsets.
					continue
				}
				if r := c.Do("GET", route, nil); r.Status >= 500 {
					t.Errorf("GET %s: %d %s", route, r.Status, r.Body)
				}
			}
			// The writer too: a push of a transactionId stored in an edited
			// segment panicked it, taking the server down (a slice sized by
			// the frame count); a push past an offset at int64's end wrote
			// a negative offset, and a queue delete moved log_start past
			// last_offset: each answered 500.
			for _, item := range []map[string]any{{"queue": "q", "partition": "p1", "payload": 1, "transactionId": "t1"},
				{"queue": "q", "partition": "p1", "payload": 3}} {
				if r := c.Do("POST", "/api/v1/push", map[string]any{"items": []any{item}}); r.Status >= 500 {
					t.Errorf("push %v: %d %s", item, r.Status, r.Body)
				}
			}
			if r := c.Do("DELETE", "/api/v1/resources/queues/q", nil); r.Status >= 500 {
				t.Errorf("DELETE queue: %d %s", r.Status, r.Body)
			}
			if err := b.Ping(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}
