package httpd_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// snapshot creates name of group on queue through the group route and
// returns the created snapshot.
func (r *replay) snapshot(group, queue, name string, extra map[string]any) map[string]any {
	r.t.Helper()
	body := map[string]any{"name": name}
	for k, v := range extra {
		body[k] = v
	}
	resp := r.Do("POST", "/api/v1/consumer-groups/"+group+"/queues/"+queue+"/snapshots", body)
	if resp.Status != http.StatusCreated {
		r.t.Fatalf("create snapshot %s: %d %s", name, resp.Status, resp.Body)
	}
	out := resp.Map(r.t)
	if out["success"] != true {
		r.t.Fatalf("create snapshot %s = %v", name, out)
	}
	return out["snapshot"].(map[string]any)
}

// consumeN pops exactly n messages of one partition for group and acks the last.
func (r *replay) consumeN(queue, partition, group string, n int) {
	r.t.Helper()
	p := r.Pop("/api/v1/pop/queue/" + queue + "/partition/" + partition + "?consumerGroup=" + group + "&batch=" + strconv.Itoa(n))
	if len(p.Messages) != n {
		r.t.Fatalf("consume %d of %s/%s: got %d", n, queue, partition, len(p.Messages))
	}
	if a := r.Ack(p.Messages[n-1], "completed", group); a["success"] != true {
		r.t.Fatalf("ack: %v", a)
	}
}

func sortedCopy(v []int) []int {
	out := append([]int(nil), v...)
	sort.Ints(out)
	return out
}

func TestSeekToASnapshotRedeliversWhatFollowedTheCapture(t *testing.T) {
	r := newReplay(t)
	r.segment("orders", "eu", 0, 6)
	r.segment("orders", "us", 100, 5)
	r.drain("orders", "audit")
	r.consumeN("orders", "eu", "billing", 3) // committed 2
	r.consumeN("orders", "us", "billing", 2) // committed 101
	snap := r.snapshot("billing", "orders", "before-deploy", map[string]any{"labels": map[string]any{"release": "v41"}})
	parts := snap["partitions"].([]any)
	if snap["name"] != "before-deploy" || snap["consumerGroup"] != "billing" || snap["queue"] != "orders" ||
		snap["labels"].(map[string]any)["release"] != "v41" || len(parts) != 2 ||
		parts[0].(map[string]any)["partition"] != "eu" || parts[0].(map[string]any)["committed"] != 2.0 ||
		parts[1].(map[string]any)["partition"] != "us" || parts[1].(map[string]any)["committed"] != 1.0 {
		t.Fatalf("snapshot = %v", snap)
	}
	created, _ := time.Parse(time.RFC3339, snap["createdAt"].(string))
	expires, _ := time.Parse(time.RFC3339, snap["expireTime"].(string))
	if expires.Sub(created) != 7*24*time.Hour {
		t.Fatalf("default expiry %v after creation, want 7 days", expires.Sub(created))
	}

	// The bad deploy consumes everything, a new partition included, and
	// leaves one batch in flight.
	r.clk.Advance(time.Minute)
	r.segment("orders", "ap", 200, 2)
	r.segment("orders", "eu", 6, 2)
	r.drain("orders", "billing")
	r.segment("orders", "us", 105, 1)
	held := r.popGroup("orders", "billing", 10)

	body := r.seek("billing", "orders", map[string]any{"snapshot": "before-deploy"}, http.StatusOK)
	if body["snapshot"] != "before-deploy" || body["partitionsUpdated"] != 3.0 || body["seekToEnd"] != false ||
		body["targetTimestamp"] != nil || body["clamped"] != false {
		t.Fatalf("seek to snapshot = %v", body)
	}
	got := map[string]float64{}
	for _, p := range body["partitions"].([]any) {
		pm := p.(map[string]any)
		got[pm["partition"].(string)] = pm["to"].(float64)
	}
	if got["eu"] != 2 || got["us"] != 1 || got["ap"] != -1 {
		t.Fatalf("positions = %v", got)
	}
	// The abandoned batch's lease is gone.
	if a := r.Ack(held.Messages[0], "completed", "billing"); a["error"] != "Invalid or expired lease" {
		t.Fatalf("ack with the pre-seek lease = %v", a)
	}
	// Exactly the messages after the captured cursors, per partition in
	// order; the partition created after the snapshot replays whole.
	perPartition := map[string][]int{}
	for {
		p := r.popGroup("orders", "billing", 100)
		if p.Status == http.StatusNoContent {
			break
		}
		for _, m := range p.Messages {
			perPartition[m.Partition] = append(perPartition[m.Partition], payloadN(t, m))
		}
		// One partition per pop: acking the last message completes the batch.
		r.Ack(p.Messages[len(p.Messages)-1], "completed", "billing")
	}
	if !sameInts(perPartition["eu"], ints(3, 7)) || !sameInts(perPartition["us"], ints(102, 105)) ||
		!sameInts(perPartition["ap"], []int{200, 201}) {
		t.Fatalf("redelivered %v", perPartition)
	}
	// Another group on the same queue is untouched.
	if got := sortedCopy(r.drain("orders", "audit")); !sameInts(got, []int{6, 7, 105, 200, 201}) {
		t.Fatalf("audit sees %v, want only the 5 pushed after its drain", got)
	}
}

func TestSnapshotOfAGroupWithoutCursorsCapturesTheStart(t *testing.T) {
	r := newReplay(t)
	r.segment("q", "Default", 0, 4)
	snap := r.snapshot("cold", "q", "cold-start", nil)
	if p := snap["partitions"].([]any)[0].(map[string]any); p["committed"] != -1.0 {
		t.Fatalf("captured %v, want -1 (log_start - 1)", p)
	}
	r.drain("q", "cold")
	r.seek("cold", "q", map[string]any{"snapshot": "cold-start"}, http.StatusOK)
	if got := r.drain("q", "cold"); !sameInts(got, ints(0, 3)) {
		t.Fatalf("replay from the start = %v", got)
	}
}

func TestAnotherGroupMaySeekToASnapshotOfTheSameQueue(t *testing.T) {
	r := newReplay(t)
	r.segment("q", "Default", 0, 6)
	r.consumeN("q", "Default", "a", 4)
	r.snapshot("a", "q", "a-at-3", nil)
	r.drain("q", "b")
	body := r.seek("b", "q", map[string]any{"snapshot": "a-at-3"}, http.StatusOK)
	if p := body["partitions"].([]any)[0].(map[string]any); p["from"] != 5.0 || p["to"] != 3.0 || p["redeliver"] != 2.0 {
		t.Fatalf("b to a's snapshot = %v", body)
	}
	if got := r.drain("q", "b"); !sameInts(got, []int{4, 5}) {
		t.Fatalf("b replayed %v", got)
	}
	if got := r.drain("q", "a"); !sameInts(got, []int{4, 5}) {
		t.Fatalf("a moved: it now gets %v", got)
	}
	// A snapshot of another queue is refused, nothing moves.
	r.segment("other", "Default", 0, 1)
	resp := r.Do("POST", r.seekPath("b", "other"), map[string]any{"snapshot": "a-at-3"})
	if resp.Status != 400 || resp.Map(t)["error"] != `snapshot "a-at-3" was taken on queue "q", not "other"` {
		t.Fatalf("seek of another queue to the snapshot = %d %s", resp.Status, resp.Body)
	}
}

func TestSnapshotSeekClampsToRetention(t *testing.T) {
	r := newReplay(t)
	r.segment("q", "Default", 0, 3)
	r.segment("q", "Default", 3, 3)
	r.segment("q", "Default", 6, 3)
	r.consumeN("q", "Default", "g", 2) // committed 1
	r.snapshot("g", "q", "early", nil)
	r.drain("q", "g")
	r.evictBelow("q", "Default", 6) // the frames the snapshot needed (2..5) are gone
	dry := r.seek("g", "q", map[string]any{"snapshot": "early", "dryRun": true}, http.StatusOK)
	p := dry["partitions"].([]any)[0].(map[string]any)
	if dry["dryRun"] != true || p["to"] != 5.0 || p["clamped"] != true || p["framesEvicted"] != 4.0 || p["redeliver"] != 3.0 {
		t.Fatalf("dry run = %v", dry)
	}
	body := r.seek("g", "q", map[string]any{"snapshot": "early"}, http.StatusOK)
	if body["clamped"] != true || body["framesEvicted"] != 4.0 {
		t.Fatalf("seek = %v", body)
	}
	if got := r.drain("q", "g"); !sameInts(got, ints(6, 8)) {
		t.Fatalf("replay = %v", got)
	}
}

func TestSnapshotRoutes(t *testing.T) {
	r := newReplay(t)
	r.segment("orders", "Default", 0, 3)
	r.segment("audit", "Default", 0, 3)
	r.drain("orders", "billing")

	resp := r.Do("POST", "/api/v1/snapshots", map[string]any{"name": "s1", "consumerGroup": "billing", "queue": "orders",
		"labels": map[string]any{"team": "billing"}, "ttlSeconds": 3600})
	if resp.Status != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.Status, resp.Body)
	}
	s1 := resp.Map(t)["snapshot"].(map[string]any)
	if s1["expireTime"] != "2026-07-30T11:00:00.000Z" || s1["createdAt"] != "2026-07-30T10:00:00.000Z" ||
		s1["partitions"].([]any)[0].(map[string]any)["committed"] != 2.0 {
		t.Fatalf("s1 = %v", s1)
	}
	// No consumerGroup: the queue-mode group.
	resp = r.Do("POST", "/api/v1/snapshots", map[string]any{"name": "s2", "queue": "audit", "expireTime": "2026-08-01T00:00:00Z"})
	if resp.Status != http.StatusCreated || resp.Map(t)["snapshot"].(map[string]any)["consumerGroup"] != "__QUEUE_MODE__" {
		t.Fatalf("create s2 = %d %s", resp.Status, resp.Body)
	}
	r.snapshot("billing", "audit", "s3", nil)

	list := func(query string) []string {
		t.Helper()
		var out struct {
			Snapshots []map[string]any `json:"snapshots"`
		}
		r.Do("GET", "/api/v1/snapshots"+query, nil).JSON(t, &out)
		var names []string
		for _, s := range out.Snapshots {
			if _, ok := s["partitions"]; ok {
				t.Fatalf("listing carries cursors: %v", s)
			}
			names = append(names, s["name"].(string))
		}
		return names
	}
	if got := strings.Join(list(""), ","); got != "s1,s2,s3" {
		t.Fatalf("list = %s", got)
	}
	if got := strings.Join(list("?consumerGroup=billing"), ","); got != "s1,s3" {
		t.Fatalf("list by group = %s", got)
	}
	if got := strings.Join(list("?queue=audit"), ","); got != "s2,s3" {
		t.Fatalf("list by queue = %s", got)
	}
	if got := strings.Join(list("?consumerGroup=billing&queue=audit"), ","); got != "s3" {
		t.Fatalf("list by both = %s", got)
	}

	resp = r.Do("GET", "/api/v1/snapshots/s1", nil)
	if resp.Status != 200 || resp.Map(t)["labels"].(map[string]any)["team"] != "billing" {
		t.Fatalf("get = %d %s", resp.Status, resp.Body)
	}

	// Update: labels and expireTime only.
	resp = r.Do("PUT", "/api/v1/snapshots/s1", map[string]any{"labels": map[string]any{"team": "ops", "ticket": "42"}})
	if out := resp.Map(t); resp.Status != 200 || out["labels"].(map[string]any)["team"] != "ops" || out["expireTime"] != s1["expireTime"] {
		t.Fatalf("update labels = %d %v", resp.Status, out)
	}
	resp = r.Do("PUT", "/api/v1/snapshots/s1", map[string]any{"expireTime": "2026-07-31T10:00:00Z"})
	if out := resp.Map(t); resp.Status != 200 || out["expireTime"] != "2026-07-31T10:00:00.000Z" ||
		out["labels"].(map[string]any)["ticket"] != "42" {
		t.Fatalf("update expiry = %d %v", resp.Status, out)
	}
	wantError(t, r.Do("PUT", "/api/v1/snapshots/s1", map[string]any{"labels": map[string]any{}, "queue": "audit"}), 400,
		`unknown field "queue": accepted fields are labels, expireTime`)
	wantError(t, r.Do("PUT", "/api/v1/snapshots/s1", "{}"), 400, "nothing to update: give labels and/or expireTime")
	wantError(t, r.Do("PUT", "/api/v1/snapshots/s1", map[string]any{"expireTime": "2026-07-30T09:00:00Z"}), 400,
		"expireTime 2026-07-30T09:00:00Z is not in the future")
	wantError(t, r.Do("PUT", "/api/v1/snapshots/s1", map[string]any{"labels": map[string]any{"n": 1}}), 400,
		"labels must be an object of string values")
	// The zero time was read as no expiry given (the 7-day default), and
	// an expiry past what ttlSeconds may set was kept.
	for _, zero := range []string{"0001-01-01T00:00:00Z", "0001-01-01"} {
		wantError(t, r.Do("POST", "/api/v1/snapshots", map[string]any{"name": "z", "queue": "audit", "expireTime": zero}), 400,
			fmt.Sprintf("expireTime %q is not in the future", zero))
	}
	wantError(t, r.Do("POST", "/api/v1/snapshots", map[string]any{"name": "z", "queue": "audit", "expireTime": "9999-12-31T23:59:59Z"}), 400,
		"expireTime 9999-12-31T23:59:59Z is more than 315360000 seconds (ten years) away")
	wantError(t, r.Do("PUT", "/api/v1/snapshots/s1", map[string]any{"expireTime": "9999-12-31T23:59:59Z"}), 400,
		"expireTime 9999-12-31T23:59:59Z is more than 315360000 seconds (ten years) away")
	wantError(t, r.Do("PUT", "/api/v1/snapshots/nope", map[string]any{"labels": map[string]any{}}), 404,
		`Snapshot "nope" not found (unknown or expired)`)

	resp = r.Do("DELETE", "/api/v1/snapshots/s1", nil)
	if out := resp.Map(t); resp.Status != 200 || out["success"] != true || out["deleted"] != true || out["name"] != "s1" {
		t.Fatalf("delete = %d %v", resp.Status, out)
	}
	wantError(t, r.Do("GET", "/api/v1/snapshots/s1", nil), 404, `Snapshot "s1" not found (unknown or expired)`)
	wantError(t, r.Do("DELETE", "/api/v1/snapshots/s1", nil), 404, `Snapshot "s1" not found (unknown or expired)`)
	wantError(t, r.Do("POST", r.seekPath("billing", "orders"), map[string]any{"snapshot": "s1"}), 404,
		`Snapshot "s1" not found (unknown or expired)`)
	// The name is free again.
	r.snapshot("billing", "orders", "s1", nil)
}

func TestSnapshotCreateRefusals(t *testing.T) {
	r := newReplay(t)
	r.segment("orders", "Default", 0, 1)
	r.snapshot("g", "orders", "taken", nil)
	path := "/api/v1/consumer-groups/g/queues/orders/snapshots"
	cases := []struct {
		name   string
		path   string
		body   any
		status int
		err    string
	}{
		{"existing name", path, map[string]any{"name": "taken"}, 409, `Snapshot "taken" already exists`},
		{"missing queue", "/api/v1/consumer-groups/g/queues/gone/snapshots", map[string]any{"name": "x"}, 409,
			`queue "gone" does not exist, so there is nothing to snapshot`},
		{"missing queue, flat route", "/api/v1/snapshots", map[string]any{"name": "x", "queue": "gone"}, 409,
			`queue "gone" does not exist, so there is nothing to snapshot`},
		{"no queue on the flat route", "/api/v1/snapshots", map[string]any{"name": "x"}, 400, "queue is required"},
		{"no name", path, map[string]any{"labels": map[string]any{}}, 400, "name is required"},
		{"empty body", path, nil, 400, "Request body is required"},
		{"name not a string", path, map[string]any{"name": 5}, 400, "name must be a string"},
		{"name with a slash", path, map[string]any{"name": "a/b"}, 400,
			"name must be 1 to 255 characters from A-Z, a-z, 0-9, '_', '.' and '-'"},
		{"labels not strings", path, map[string]any{"name": "x", "labels": []any{"a"}}, 400, "labels must be an object of string values"},
		{"expiry in the past", path, map[string]any{"name": "x", "expireTime": "2026-07-29T00:00:00Z"}, 400,
			"expireTime 2026-07-29T00:00:00Z is not in the future"},
		{"unparsable expiry", path, map[string]any{"name": "x", "expireTime": "soon"}, 400, `expireTime "soon" is not a valid time (RFC 3339)`},
		{"ttl and expiry", path, map[string]any{"name": "x", "expireTime": "2026-08-29T00:00:00Z", "ttlSeconds": 60}, 400,
			"give expireTime or ttlSeconds, not both"},
		{"zero ttl", path, map[string]any{"name": "x", "ttlSeconds": 0}, 400, "ttlSeconds must be a positive integer"},
		{"ttl past ten years", path, map[string]any{"name": "x", "ttlSeconds": 1e13}, 400,
			"ttlSeconds must be between 1 and 315360000 (got 10000000000000)"},
		{"ttl that would wrap a duration", path, map[string]any{"name": "x", "ttlSeconds": int64(1) << 40}, 400,
			"ttlSeconds must be between 1 and 315360000 (got 1099511627776)"},
		{"unknown field", path, map[string]any{"name": "x", "ttl": 60}, 400,
			`unknown field "ttl": accepted fields are name, labels, expireTime, ttlSeconds`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, r.Do("POST", c.path, c.body), c.status, c.err)
		})
	}
	var out struct {
		Snapshots []any `json:"snapshots"`
	}
	r.Do("GET", "/api/v1/snapshots", nil).JSON(t, &out)
	if len(out.Snapshots) != 1 {
		t.Fatalf("refused creates left snapshots: %v", out.Snapshots)
	}
	wantError(t, r.Do("POST", r.seekPath("g", "orders"), map[string]any{"snapshot": "nope"}), 404,
		`Snapshot "nope" not found (unknown or expired)`)
	wantError(t, r.Do("POST", r.seekPath("g", "orders"), map[string]any{"snapshot": "taken", "toEnd": true}), 400,
		"Specify only one of toEnd, timestamp, offset or snapshot")
	wantError(t, r.Do("POST", r.seekPath("g", "orders"), map[string]any{"snapshot": 3}), 400, "snapshot must be a string")
}

func TestSnapshotsExpire(t *testing.T) {
	r := newReplay(t)
	r.segment("q", "Default", 0, 3)
	r.drain("q", "g")
	r.snapshot("g", "q", "weekly", nil)
	r.snapshot("g", "q", "hourly", map[string]any{"ttlSeconds": 3600})

	r.clk.Advance(7*24*time.Hour - time.Second)
	if resp := r.Do("GET", "/api/v1/snapshots/weekly", nil); resp.Status != 200 {
		t.Fatalf("weekly a second before expiry = %d", resp.Status)
	}
	// hourly expired long ago but is not swept yet: already invisible.
	wantError(t, r.Do("GET", "/api/v1/snapshots/hourly", nil), 404, `Snapshot "hourly" not found (unknown or expired)`)
	r.clk.Advance(time.Second)
	wantError(t, r.Do("GET", "/api/v1/snapshots/weekly", nil), 404, `Snapshot "weekly" not found (unknown or expired)`)
	wantError(t, r.Do("POST", r.seekPath("g", "q"), map[string]any{"snapshot": "weekly"}), 404,
		`Snapshot "weekly" not found (unknown or expired)`)
	// An expired name can be taken again before the sweep.
	r.snapshot("g", "q", "hourly", map[string]any{"ttlSeconds": 60})

	swept, err := r.Broker.RetentionSweep(context.Background())
	if n := swept.Snapshots; err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1 (weekly)", n, err)
	}
	var rows int
	if err := r.db().QueryRow(`SELECT (SELECT COUNT(*) FROM snapshots) + (SELECT COUNT(*) FROM snapshot_cursors)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Fatalf("rows left after the sweep = %d, want the new hourly and its cursor", rows)
	}
}
