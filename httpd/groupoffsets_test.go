package httpd_test

import (
	"net/http"
	"testing"
	"time"
)

// TestAGroupsPartitionsCarryTheirOffsets: GET /consumer-groups/:group (a
// read-only route) says per partition the committed offset, the last offset
// written and the first one retention keeps, as the cursor rows hold them.
func TestAGroupsPartitionsCarryTheirOffsets(t *testing.T) {
	r := newReplay(t)
	r.segment("orders", "eu-1", 0, 3)
	r.clk.Advance(time.Minute)
	r.segment("orders", "eu-1", 3, 2)
	r.segment("orders", "us", 0, 2)
	p := r.Pop("/api/v1/pop/queue/orders/partition/eu-1?consumerGroup=invoicer&batch=2")
	if len(p.Messages) != 2 {
		t.Fatalf("popped %d, want 2", len(p.Messages))
	}
	for _, m := range p.Messages {
		r.Ack(m, "completed", "invoicer")
	}
	if resp := r.Do("POST", "/api/v1/consumer-groups/invoicer/queues/orders/partitions/us/seek", map[string]any{"offset": 0}); resp.Status != http.StatusOK {
		t.Fatalf("seek us: %d %s", resp.Status, resp.Body)
	}

	offsets := func() map[string][3]any {
		var got map[string]struct {
			Partitions []map[string]any `json:"partitions"`
		}
		r.Do("GET", "/api/v1/consumer-groups/invoicer", nil).JSON(t, &got)
		out := map[string][3]any{}
		for _, p := range got["orders"].Partitions {
			out[p["partition"].(string)] = [3]any{p["committedOffset"], p["lastOffset"], p["logStart"]}
		}
		return out
	}
	want := map[string][3]any{"eu-1": {1.0, 4.0, 0.0}, "us": {0.0, 1.0, 0.0}}
	if got := offsets(); len(got) != 2 || got["eu-1"] != want["eu-1"] || got["us"] != want["us"] {
		t.Fatalf("offsets = %v, want %v", got, want)
	}
	if c := r.committed("orders", "eu-1", "invoicer"); c != 1 {
		t.Fatalf("cursor row says committed %d", c)
	}
	// Retention moves logStart; the cursor left behind keeps its offset.
	r.evictBelow("orders", "eu-1", 3)
	r.segment("orders", "eu-1", 5, 1)
	if got := offsets()["eu-1"]; got != [3]any{1.0, 5.0, 3.0} {
		t.Fatalf("eu-1 after eviction and a push = %v, want committed 1, last 5, logStart 3", got)
	}
	// Seeking to the end moves the committed offset to the last one.
	r.Do("POST", "/api/v1/consumer-groups/invoicer/queues/orders/seek", map[string]any{"toEnd": true})
	if got := offsets(); got["eu-1"][0] != 5.0 || got["us"][0] != 1.0 {
		t.Fatalf("after seek to end = %v", got)
	}
}
