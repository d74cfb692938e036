package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// streamsHash is a config hash as the SDKs send it: lowercase hex SHA-256.
func streamsHash(seed string) string {
	return strings.Repeat(fmt.Sprintf("%02x", len(seed)%256), 2) + strings.Repeat("ab", 30)
}

func register(t testing.TB, c *combtest.Client, name, source, sink, hash string, reset bool) map[string]any {
	t.Helper()
	body := map[string]any{"name": name, "source_queue": source, "config_hash": hash, "reset": reset}
	if sink != "" {
		body["sink_queue"] = sink
	}
	r := c.Do("POST", "/streams/v1/queries", body)
	if r.Status != http.StatusOK {
		t.Fatalf("register %s: %d %s", name, r.Status, r.Body)
	}
	return r.Map(t)
}

// stateRows reads a shard and returns key -> compact value JSON.
func stateRows(t testing.TB, c *combtest.Client, body map[string]any) map[string]string {
	t.Helper()
	r := c.Do("POST", "/streams/v1/state/get", body)
	if r.Status != http.StatusOK {
		t.Fatalf("state/get: %d %s", r.Status, r.Body)
	}
	var out struct {
		Success bool `json:"success"`
		Rows    []struct {
			Key       string          `json:"key"`
			Value     json.RawMessage `json:"value"`
			UpdatedAt string          `json:"updated_at"`
		} `json:"rows"`
	}
	r.JSON(t, &out)
	if !out.Success || out.Rows == nil {
		t.Fatalf("state/get: %s", r.Body)
	}
	m := map[string]string{}
	var keys []string
	for _, row := range out.Rows {
		if _, err := time.Parse(time.RFC3339Nano, row.UpdatedAt); err != nil || !strings.HasSuffix(row.UpdatedAt, "Z") {
			t.Errorf("updated_at %q is not RFC 3339 UTC", row.UpdatedAt)
		}
		m[row.Key] = string(row.Value)
		keys = append(keys, row.Key)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("rows not in key order: %q", keys)
	}
	return m
}

func shard(queryID, partitionID string) map[string]any {
	return map[string]any{"query_id": queryID, "partition_id": partitionID}
}

func cycle(t testing.TB, c *combtest.Client, body map[string]any) map[string]any {
	t.Helper()
	r := c.Do("POST", "/streams/v1/cycle", body)
	if r.Status != http.StatusOK {
		t.Fatalf("cycle: %d %s", r.Status, r.Body)
	}
	return r.Map(t)
}

// queueDepth counts the messages a fresh group can read from queue.
func queueDepth(t testing.TB, c *combtest.Client, queue string) int {
	t.Helper()
	group := "depth-" + newTxnID()
	return len(c.Pop("/api/v1/pop/queue/" + queue + "?batch=10000&wait=false&autoAck=true&partitions=1000&consumerGroup=" + group).Messages)
}

func TestStreamsRoutesRefuseBadBodiesWithTheirErrors(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	q := register(t, s.Client, "q", "src", "", streamsHash("a"), false)
	qid := q["query_id"].(string)
	pid := newTxnID()
	for _, path := range []string{"/streams/v1/queries", "/streams/v1/state/get", "/streams/v1/cycle"} {
		for _, c := range []struct{ body, want string }{
			{"", "Empty request body"},
			{"  ", "Empty request body"},
			{"{", "Invalid JSON: "},
			{`{"a":1}{}`, "Invalid JSON: "},
			{"[1]", "request body must be a JSON object"},
			{`"x"`, "request body must be a JSON object"},
			{"null", "request body must be a JSON object"},
		} {
			r := s.Do("POST", path, c.body)
			if r.Status != http.StatusBadRequest || !strings.HasPrefix(errorOf(t, r), c.want) {
				t.Errorf("POST %s %q: %d %s, want 400 %q", path, c.body, r.Status, r.Body, c.want)
			}
		}
	}
	for _, c := range []struct {
		path string
		body map[string]any
		want string
	}{
		{"/streams/v1/queries", map[string]any{"source_queue": "s", "config_hash": "h"}, "name is required"},
		{"/streams/v1/queries", map[string]any{"name": "", "source_queue": "s", "config_hash": "h"}, "name is required"},
		{"/streams/v1/queries", map[string]any{"name": 5, "source_queue": "s", "config_hash": "h"}, "name is required"},
		{"/streams/v1/queries", map[string]any{"name": "n", "config_hash": "h"}, "source_queue is required"},
		{"/streams/v1/queries", map[string]any{"name": "n", "source_queue": "s"}, "config_hash is required"},
		{"/streams/v1/queries", map[string]any{"name": "n", "source_queue": "s", "config_hash": "h", "reset": "yes"}, "reset must be a boolean"},
		{"/streams/v1/queries", map[string]any{"name": "n", "source_queue": "s", "config_hash": "h", "reset": 1}, "reset must be a boolean"},
		{"/streams/v1/queries", map[string]any{"name": "n", "source_queue": "s", "config_hash": "h", "sink_queue": 3}, "sink_queue must be a string"},
		{"/streams/v1/state/get", map[string]any{"partition_id": pid}, "query_id is required"},
		{"/streams/v1/state/get", map[string]any{"query_id": qid}, "partition_id is required"},
		{"/streams/v1/state/get", map[string]any{"query_id": "nope", "partition_id": pid}, "query_id must be a UUID"},
		{"/streams/v1/state/get", map[string]any{"query_id": qid, "partition_id": "nope"}, "partition_id must be a UUID"},
		{"/streams/v1/state/get", map[string]any{"query_id": qid, "partition_id": pid, "keys": []any{1}}, "keys must be an array of strings"},
		{"/streams/v1/state/get", map[string]any{"query_id": qid, "partition_id": pid, "key_prefix": 7}, "key_prefix must be a string"},
		{"/streams/v1/cycle", map[string]any{"partition_id": pid}, "query_id is required"},
		{"/streams/v1/cycle", map[string]any{"query_id": qid, "partition_id": ""}, "partition_id is required"},
	} {
		r := s.Do("POST", c.path, c.body)
		if r.Status != http.StatusBadRequest || errorOf(t, r) != c.want {
			t.Errorf("POST %s %v: %d %s, want 400 %q", c.path, c.body, r.Status, r.Body, c.want)
		}
	}
	// None of it registered anything.
	if got := register(t, s.Client, "n", "s", "", "h", false); got["fresh"] != true {
		t.Errorf("a refused registration left a row: %v", got)
	}
	// Lenient fields: keys not an array, a non-numeric ripe filter.
	for _, body := range []map[string]any{
		{"query_id": qid, "partition_id": pid, "keys": "x"},
		{"query_id": qid, "partition_id": pid, "keys": nil, "ripe_at_or_before": "soon"},
	} {
		if rows := stateRows(t, s.Client, body); len(rows) != 0 {
			t.Errorf("state/get %v = %v", body, rows)
		}
	}
}

func TestStreamsRegisterKeepsResetsOrRefusesByHash(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	h1, h2 := streamsHash("one"), streamsHash("three")
	first := register(t, s.Client, "orders.per_customer", "orders", "orders.totals", h1, false)
	if first["success"] != true || first["fresh"] != true || first["reset"] != false || first["name"] != "orders.per_customer" ||
		first["config_hash"] != h1 {
		t.Fatalf("fresh registration = %v", first)
	}
	qid := first["query_id"].(string)
	pid := newTxnID()
	put := func(key string) {
		res := cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": pid,
			"state_ops": []any{map[string]any{"type": "upsert", "key": key, "value": map[string]any{"n": 1}}}})
		if res["success"] != true {
			t.Fatalf("cycle: %v", res)
		}
	}
	put("k1")

	again := register(t, s.Client, "orders.per_customer", "orders", "", h1, false)
	if again["query_id"] != qid || again["fresh"] != false || again["reset"] != false {
		t.Fatalf("same hash = %v", again)
	}
	if rows := stateRows(t, s.Client, shard(qid, pid)); len(rows) != 1 {
		t.Fatalf("same hash lost state: %v", rows)
	}
	// Equal hash with reset: nothing wiped, reset false.
	if r := register(t, s.Client, "orders.per_customer", "orders", "", h1, true); r["reset"] != false {
		t.Fatalf("reset with an equal hash = %v", r)
	}
	if rows := stateRows(t, s.Client, shard(qid, pid)); len(rows) != 1 {
		t.Fatalf("reset with an equal hash wiped state: %v", rows)
	}

	r := s.Do("POST", "/streams/v1/queries", map[string]any{"name": "orders.per_customer", "source_queue": "orders",
		"sink_queue": "never", "config_hash": h2, "reset": false})
	m := r.Map(t)
	if r.Status != http.StatusConflict || m["success"] != false || m["query_id"] != qid ||
		!strings.Contains(m["error"].(string), "config_hash mismatch") || !strings.Contains(m["error"].(string), "'orders.per_customer'") {
		t.Fatalf("changed hash without reset: %d %s", r.Status, r.Body)
	}
	if rows := stateRows(t, s.Client, shard(qid, pid)); len(rows) != 1 {
		t.Fatalf("a refused registration touched state: %v", rows)
	}

	reset := register(t, s.Client, "orders.per_customer", "orders", "never", h2, true)
	if reset["query_id"] != qid || reset["fresh"] != false || reset["reset"] != true || reset["config_hash"] != h2 {
		t.Fatalf("reset = %v", reset)
	}
	if rows := stateRows(t, s.Client, shard(qid, pid)); len(rows) != 0 {
		t.Fatalf("reset kept state: %v", rows)
	}
	// The new hash is the stored one now.
	if r := register(t, s.Client, "orders.per_customer", "orders", "", h2, false); r["fresh"] != false {
		t.Fatalf("after reset: %v", r)
	}

	// Workers registering at once all get one id.
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := map[string]any{"name": "together", "source_queue": "orders", "config_hash": h1, "reset": false}
			r := s.Do("POST", "/streams/v1/queries", body)
			var m struct {
				QueryID string `json:"query_id"`
			}
			json.Unmarshal(r.Body, &m)
			ids[i] = m.QueryID
		}()
	}
	wg.Wait()
	if ids[0] == "" || slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
		t.Fatalf("concurrent registrations got ids %v", ids)
	}
}

// TestStreamsCycleCommitsStatePushesAndAckTogether drives one cycle the
// way the runners do and checks every part of it and of its reply.
func TestStreamsCycleCommitsStatePushesAndAckTogether(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	qid := register(t, s.Client, "sums", "readings", "sums.out", streamsHash("x"), false)["query_id"].(string)
	for i := range 3 {
		s.Push(map[string]any{"queue": "readings", "partition": "dev-1", "payload": map[string]any{"v": i + 1}})
	}
	const group = "streams.sums"
	pop := s.Pop("/api/v1/pop/queue/readings?batch=3&wait=false&consumerGroup=" + group)
	if len(pop.Messages) != 3 {
		t.Fatalf("popped %d", len(pop.Messages))
	}
	last := pop.Messages[2]
	pid := last.PartitionID
	body := map[string]any{
		"query_id": qid, "partition_id": pid, "consumer_group": group,
		"state_ops": []any{
			map[string]any{"type": "upsert", "key": "tumb:60\u001f2026-01-01T10:00:00.000Z\u001fdev-1",
				"value": map[string]any{"acc": map[string]any{"sum": 6}, "windowStart": 1767261600000, "windowEnd": 1767261660000}},
			map[string]any{"type": "upsert", "key": "gate"},
			map[string]any{"type": "upsert", "key": "nothing", "value": nil},
			map[string]any{"type": "upsert", "key": "later", "value": 1},
			map[string]any{"type": "upsert", "key": "later", "value": 2},
			map[string]any{"type": "delete", "key": "absent"},
		},
		"push_items": []any{
			map[string]any{"queue": "sums.out", "partition": "dev-1", "payload": map[string]any{"sum": 6}},
			map[string]any{"queue": "sums.out", "partition": "dev-1", "payload": map[string]any{"sum": 7}, "transactionId": "t-1"},
			map[string]any{"queue": "sums.out", "partition": "dev-1", "payload": map[string]any{"sum": 8}, "transactionId": "t-1"},
			map[string]any{"queue": "sums.out"},
		},
		"ack":           map[string]any{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "status": "completed", "count": 3},
		"release_lease": true,
	}
	res := cycle(t, s.Client, body)
	if res["success"] != true || res["query_id"] != qid || res["partition_id"] != pid || res["queueName"] != "readings" ||
		res["state_ops_applied"] != float64(6) {
		t.Fatalf("cycle = %v", res)
	}
	mustJSONEqual(t, "ack_result", res["ack_result"], `{"success":true,"count":3,"lease_released":true,"dlq":false}`)
	pushes := res["push_results"].([]any)
	if len(pushes) != 4 {
		t.Fatalf("push_results = %v", pushes)
	}
	p1, p2 := pushes[1].(map[string]any), pushes[2].(map[string]any)
	if p1["status"] != "queued" || p2["status"] != "duplicate" || p2["message_id"] != p1["message_id"] ||
		p1["transactionId"] != "t-1" || p1["queueName"] != "sums.out" {
		t.Fatalf("push_results = %v", pushes)
	}

	rows := stateRows(t, s.Client, map[string]any{"query_id": qid, "partition_id": pid, "keys": nil})
	want := map[string]string{
		"tumb:60\u001f2026-01-01T10:00:00.000Z\u001fdev-1": `{"acc":{"sum":6},"windowEnd":1767261660000,"windowStart":1767261600000}`,
		"gate": `{}`, "nothing": `null`, "later": `2`,
	}
	for k, v := range want {
		var a, b any
		json.Unmarshal([]byte(rows[k]), &a)
		json.Unmarshal([]byte(v), &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("state %q = %s, want %s", k, rows[k], v)
		}
	}
	if len(rows) != len(want) {
		t.Errorf("state = %v", rows)
	}

	// The sink holds three new messages in array order, poppable at once.
	out := s.Pop("/api/v1/pop/queue/sums.out?batch=10&wait=false&autoAck=true&partitions=10")
	byPart := map[string][]string{}
	for _, m := range out.Messages {
		byPart[m.Partition] = append(byPart[m.Partition], string(m.Data))
	}
	if got := fmt.Sprint(byPart); got != `map[Default:[{}] dev-1:[{"sum":6} {"sum":7}]]` {
		t.Fatalf("sink holds %s", got)
	}

	// The lease is released and the cursor is past the batch: the next pop
	// of the group gets only what comes next.
	s.Push(map[string]any{"queue": "readings", "partition": "dev-1", "payload": map[string]any{"v": 4}})
	next := s.Pop("/api/v1/pop/queue/readings?batch=10&wait=false&consumerGroup=" + group)
	if len(next.Messages) != 1 || string(next.Messages[0].Data) != `{"v":4}` {
		t.Fatalf("after the cycle the group got %+v", next.Messages)
	}

	// The same cycle sent again (a client retry) is refused whole: its lease
	// is gone, so nothing applies twice.
	again := cycle(t, s.Client, body)
	if again["success"] != false || again["error"] != "Invalid or expired lease" {
		t.Fatalf("retried cycle = %v", again)
	}
	mustJSONEqual(t, "retried cycle", again, fmt.Sprintf(`{"success":false,"query_id":%q,"partition_id":%q,
		"error":"Invalid or expired lease","state_ops_applied":0,"push_results":[],"ack_result":null}`, qid, pid))
	if n := queueDepth(t, s.Client, "sums.out"); n != 3 {
		t.Fatalf("after the retry the sink holds %d messages, want 3", n)
	}
}

// TestStreamsFailedCycleLeavesNoTrace: every refusal past the route checks
// is a 200 success:false that writes no state, no sink message and no
// cursor move.
func TestStreamsFailedCycleLeavesNoTrace(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	qid := register(t, s.Client, "atomic", "src", "sink", streamsHash("a"), false)["query_id"].(string)
	s.Do("POST", "/api/v1/configure", map[string]any{"queue": "src", "options": map[string]any{"leaseTime": 30}})
	for i := range 2 {
		s.Push(map[string]any{"queue": "src", "payload": map[string]any{"i": i}})
	}
	const group = "streams.atomic"
	pop := s.Pop("/api/v1/pop/queue/src?batch=2&wait=false&consumerGroup=" + group)
	if len(pop.Messages) != 2 {
		t.Fatalf("popped %d", len(pop.Messages))
	}
	m := pop.Messages[1]
	good := func() map[string]any {
		return map[string]any{"query_id": qid, "partition_id": m.PartitionID, "consumer_group": group,
			"state_ops":  []any{map[string]any{"type": "upsert", "key": "k", "value": map[string]any{"sum": 1}}},
			"push_items": []any{map[string]any{"queue": "sink", "payload": map[string]any{"sum": 1}}},
			"ack":        map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID, "status": "completed", "count": 2}}
	}
	with := func(edit func(map[string]any)) map[string]any {
		b := good()
		edit(b)
		return b
	}
	cases := []struct {
		name string
		body map[string]any
		want string
	}{
		{"wrong lease", with(func(b map[string]any) { b["ack"].(map[string]any)["leaseId"] = newTxnID() }), "Invalid or expired lease"},
		{"other group", with(func(b map[string]any) { b["consumer_group"] = "streams.other" }), "Invalid or expired lease"},
		{"unknown message", with(func(b map[string]any) { b["ack"].(map[string]any)["transactionId"] = "nope" }), "Message not found"},
		{"unknown partition", with(func(b map[string]any) { b["partition_id"] = newTxnID() }), "Message not found"},
		{"unknown query", with(func(b map[string]any) { b["query_id"] = newTxnID() }), "Query not found"},
		{"malformed query id", with(func(b map[string]any) { b["query_id"] = "q-1" }), "Query not found"},
		{"no ack transactionId", with(func(b map[string]any) { delete(b["ack"].(map[string]any), "transactionId") }), "ack.transactionId is required"},
		{"unknown ack status", with(func(b map[string]any) { b["ack"].(map[string]any)["status"] = "maybe" }), "Unknown ack.status: maybe"},
		{"bad ack count", with(func(b map[string]any) { b["ack"].(map[string]any)["count"] = "many" }), "ack.count must be a non-negative integer"},
		{"ack not an object", with(func(b map[string]any) { b["ack"] = "yes" }), "ack must be an object"},
		{"unknown op type", with(func(b map[string]any) {
			b["state_ops"] = append(b["state_ops"].([]any), map[string]any{"type": "merge", "key": "k"})
		}), "Unknown state_op type: merge"},
		{"op without key", with(func(b map[string]any) {
			b["state_ops"] = append(b["state_ops"].([]any), map[string]any{"type": "delete"})
		}), "state_ops[1].key is required"},
		{"state_ops not an array", with(func(b map[string]any) { b["state_ops"] = map[string]any{} }), "state_ops must be an array of objects"},
		{"push_items not an array", with(func(b map[string]any) { b["push_items"] = 1 }), "push_items must be an array of objects"},
		{"push without queue", with(func(b map[string]any) {
			b["push_items"] = append(b["push_items"].([]any), map[string]any{"payload": 1})
		}), "Queue must be a string"},
		{"bad traceId", with(func(b map[string]any) {
			b["push_items"] = []any{map[string]any{"queue": "sink", "traceId": "not-a-uuid"}}
		}), "TraceId must be a valid UUID (items[0].traceId)"},
		{"bad release_lease", with(func(b map[string]any) { b["release_lease"] = "no" }), "release_lease must be a boolean"},
		{"bad consumer_group", with(func(b map[string]any) { b["consumer_group"] = 3 }), "consumer_group must be a string"},
	}
	for _, c := range cases {
		res := cycle(t, s.Client, c.body)
		if res["success"] != false || res["error"] != c.want || res["state_ops_applied"] != float64(0) || res["ack_result"] != nil ||
			len(res["push_results"].([]any)) != 0 {
			t.Errorf("%s: %v, want failure %q", c.name, res, c.want)
		}
	}
	// A lease that expired is refused even though nobody took the partition.
	c0.Advance(31 * time.Second)
	if res := cycle(t, s.Client, good()); res["error"] != "Invalid or expired lease" {
		t.Errorf("ack after expiry: %v", res)
	}
	if rows := stateRows(t, s.Client, shard(qid, m.PartitionID)); len(rows) != 0 {
		t.Fatalf("failed cycles left state %v", rows)
	}
	if r := s.Do("GET", "/api/v1/resources/queues/sink", nil); r.Status != http.StatusNotFound {
		t.Fatalf("failed cycles created the sink queue: %d %s", r.Status, r.Body)
	}
	// The cursor did not move: the expired batch comes back whole.
	again := s.Pop("/api/v1/pop/queue/src?batch=10&wait=false&consumerGroup=" + group)
	if len(again.Messages) != 2 {
		t.Fatalf("after failed cycles the group got %d messages, want the 2 of the batch", len(again.Messages))
	}
}

// TestStreamsCycleWhoseAckFailsWritesNeitherStateNorSink is the exactly-once
// guard: a cycle whose ack is refused writes none of its state or pushes,
// and the cycle under the new lease then applies once.
func TestStreamsCycleWhoseAckFailsWritesNeitherStateNorSink(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	s.Do("POST", "/api/v1/configure", map[string]any{"queue": "src", "options": map[string]any{"leaseTime": 10}})
	qid := register(t, s.Client, "guard", "src", "out", streamsHash("g"), false)["query_id"].(string)
	s.Push(map[string]any{"queue": "src", "payload": map[string]any{"v": 5}})
	const group = "streams.guard"
	first := s.Pop("/api/v1/pop/queue/src?batch=1&wait=false&consumerGroup=" + group).Messages[0]
	c0.Advance(11 * time.Second)
	second := s.Pop("/api/v1/pop/queue/src?batch=1&wait=false&consumerGroup=" + group).Messages[0]
	if second.LeaseID == first.LeaseID {
		t.Fatal("redelivery kept the lease id")
	}
	body := func(m combtest.PopMessage) map[string]any {
		return map[string]any{"query_id": qid, "partition_id": m.PartitionID, "consumer_group": group,
			"state_ops":     []any{map[string]any{"type": "upsert", "key": "total", "value": map[string]any{"sum": 5}}},
			"push_items":    []any{map[string]any{"queue": "out", "partition": m.Partition, "payload": map[string]any{"sum": 5}}},
			"ack":           map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID, "status": "completed", "count": 1},
			"release_lease": true}
	}
	if res := cycle(t, s.Client, body(first)); res["success"] != false || res["error"] != "Invalid or expired lease" {
		t.Fatalf("cycle under the stale lease = %v", res)
	}
	if rows := stateRows(t, s.Client, shard(qid, first.PartitionID)); len(rows) != 0 {
		t.Fatalf("refused cycle wrote state %v", rows)
	}
	if r := s.Do("GET", "/api/v1/resources/queues/out", nil); r.Status != http.StatusNotFound {
		t.Fatalf("refused cycle created its sink: %d", r.Status)
	}
	if res := cycle(t, s.Client, body(second)); res["success"] != true {
		t.Fatalf("cycle under the live lease = %v", res)
	}
	if rows := stateRows(t, s.Client, shard(qid, first.PartitionID)); rows["total"] != `{"sum":5}` {
		t.Fatalf("state = %v", rows)
	}
	if n := queueDepth(t, s.Client, "out"); n != 1 {
		t.Fatalf("sink holds %d, want 1", n)
	}
}

// TestStreamsPartialAckKeepsTheLeaseAndNeverReplays is the gate's cycle:
// release_lease false acks a prefix and keeps the lease; the same cycle
// sent again applies nothing; at expiry the tail comes back in order.
func TestStreamsPartialAckKeepsTheLeaseAndNeverReplays(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	s.Do("POST", "/api/v1/configure", map[string]any{"queue": "src", "options": map[string]any{"leaseTime": 2, "retryLimit": 100}})
	qid := register(t, s.Client, "gate", "src", "ok", streamsHash("gate"), false)["query_id"].(string)
	for i := range 5 {
		s.Push(map[string]any{"queue": "src", "partition": "tenant-a", "payload": map[string]any{"seq": i}})
	}
	const group = "streams.gate"
	msgs := s.Pop("/api/v1/pop/queue/src?batch=5&wait=false&consumerGroup=" + group).Messages
	allowed := msgs[1]
	body := map[string]any{"query_id": qid, "partition_id": allowed.PartitionID, "consumer_group": group,
		"state_ops":     []any{map[string]any{"type": "upsert", "key": "tenant-a", "value": map[string]any{"tokens": 0}}},
		"push_items":    []any{map[string]any{"queue": "ok", "partition": "tenant-a", "payload": map[string]any{"seq": 0}}, map[string]any{"queue": "ok", "partition": "tenant-a", "payload": map[string]any{"seq": 1}}},
		"ack":           map[string]any{"transactionId": allowed.TransactionID, "leaseId": allowed.LeaseID, "status": "completed", "count": 2},
		"release_lease": false}
	res := cycle(t, s.Client, body)
	mustJSONEqual(t, "partial ack", res["ack_result"], `{"success":true,"count":2,"lease_released":false,"dlq":false}`)
	if more := s.Pop("/api/v1/pop/queue/src?batch=5&wait=false&consumerGroup=" + group); len(more.Messages) != 0 {
		t.Fatalf("the kept lease let %d messages through", len(more.Messages))
	}
	if again := cycle(t, s.Client, body); again["success"] != false || again["error"] != "Message already acknowledged" {
		t.Fatalf("replayed partial cycle = %v", again)
	}
	if n := queueDepth(t, s.Client, "ok"); n != 2 {
		t.Fatalf("sink holds %d after the replay, want 2", n)
	}
	c0.Advance(3 * time.Second)
	tail := s.Pop("/api/v1/pop/queue/src?batch=5&wait=false&consumerGroup=" + group).Messages
	var seqs []string
	for _, m := range tail {
		seqs = append(seqs, string(m.Data))
		if m.RetryCount != 0 {
			t.Errorf("tail message %s charged a retry", m.Data)
		}
	}
	if strings.Join(seqs, ",") != `{"seq":2},{"seq":3},{"seq":4}` {
		t.Fatalf("after expiry the tail is %v", seqs)
	}
}

func TestStreamsStateGetFilters(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	qid := register(t, s.Client, "f", "src", "", streamsHash("f"), false)["query_id"].(string)
	pid := newTxnID()
	ops := []any{
		map[string]any{"type": "upsert", "key": "tumb:60\u001fa", "value": map[string]any{"windowEnd": 1000}},
		map[string]any{"type": "upsert", "key": "tumb:60\u001fb", "value": map[string]any{"windowEnd": 2000.5}},
		map[string]any{"type": "upsert", "key": "tumb:60\u001fc", "value": map[string]any{"windowEnd": "1000"}},
		map[string]any{"type": "upsert", "key": "tumb:60\u001fd", "value": []any{1000}},
		map[string]any{"type": "upsert", "key": "TUMB:60\u001fe", "value": map[string]any{"windowEnd": 1}},
		map[string]any{"type": "upsert", "key": "tumb:600", "value": map[string]any{"windowEnd": 1}},
		map[string]any{"type": "upsert", "key": "tumb_60\u001ff", "value": map[string]any{"windowEnd": 1}},
		map[string]any{"type": "upsert", "key": "__wm__", "value": map[string]any{"eventTimeMs": 5}},
		map[string]any{"type": "upsert", "key": "tumb:60\u001fg", "value": map[string]any{"WindowEnd": 1, "acc": map[string]any{"windowEnd": 1}}},
		map[string]any{"type": "upsert", "key": "tumb:60\u001fh", "value": json.RawMessage(strings.Repeat("[", 2000) + strings.Repeat("]", 2000))},
	}
	if res := cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": pid, "state_ops": ops}); res["success"] != true {
		t.Fatalf("cycle = %v", res)
	}
	keys := func(body map[string]any) string {
		rows := stateRows(t, s.Client, body)
		var ks []string
		for k := range rows {
			ks = append(ks, strings.ReplaceAll(k, "\u001f", "|"))
		}
		slices.Sort(ks)
		return strings.Join(ks, " ")
	}
	with := func(kv ...any) map[string]any {
		b := shard(qid, pid)
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{with("keys", []any{}), "TUMB:60|e __wm__ tumb:600 tumb:60|a tumb:60|b tumb:60|c tumb:60|d tumb:60|g tumb:60|h tumb_60|f"},
		{with("keys", []any{"__wm__", "missing", "__wm__"}), "__wm__"},
		{with("key_prefix", "tumb:60\u001f"), "tumb:60|a tumb:60|b tumb:60|c tumb:60|d tumb:60|g tumb:60|h"},
		{with("key_prefix", ""), "TUMB:60|e __wm__ tumb:600 tumb:60|a tumb:60|b tumb:60|c tumb:60|d tumb:60|g tumb:60|h tumb_60|f"},
		{with("key_prefix", "tumb:60\u001f", "ripe_at_or_before", 1000), "tumb:60|a"},
		{with("key_prefix", "tumb:60\u001f", "ripe_at_or_before", 2000.5), "tumb:60|a tumb:60|b"},
		{with("key_prefix", "tumb:60\u001f", "ripe_at_or_before", 999), ""},
		{with("ripe_at_or_before", 1), "TUMB:60|e tumb:600 tumb_60|f"},
		{with("key_prefix", "tumb:60\u001f", "keys", []any{"tumb:60\u001fb", "__wm__"}), "tumb:60|b"},
		{with("key_prefix", "tumb:60\u001f", "ripe_at_or_before", "2000"), "tumb:60|a tumb:60|b tumb:60|c tumb:60|d tumb:60|g tumb:60|h"},
	} {
		if got := keys(c.body); got != c.want {
			t.Errorf("state/get %v = %q, want %q", c.body, got, c.want)
		}
	}
	// Another query on the same partition id shares nothing.
	other := register(t, s.Client, "g", "src", "", streamsHash("g"), false)["query_id"].(string)
	if rows := stateRows(t, s.Client, shard(other, pid)); len(rows) != 0 {
		t.Fatalf("another query reads %v", rows)
	}
}

// TestStreamsStateAndQueriesAreTenantScoped: another tenant's query_id
// acts as unknown on every route, and names are unique per tenant.
func TestStreamsStateAndQueriesAreTenantScoped(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	A := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("alice", "read-write", "acme"))))
	B := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("bob", "read-write", "globex"))))
	reader := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("rita", "read-only", "acme"))))
	qa := register(t, A, "same", "src", "", streamsHash("a"), false)
	qb := register(t, B, "same", "src", "", streamsHash("b"), false)
	if qa["query_id"] == qb["query_id"] || qb["fresh"] != true {
		t.Fatalf("tenants share a query: %v %v", qa, qb)
	}
	qid := qa["query_id"].(string)
	pid := newTxnID()
	if res := cycle(t, A, map[string]any{"query_id": qid, "partition_id": pid,
		"state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": 1}}}); res["success"] != true {
		t.Fatalf("cycle as A = %v", res)
	}
	if res := cycle(t, B, map[string]any{"query_id": qid, "partition_id": pid,
		"state_ops": []any{map[string]any{"type": "delete", "key": "k"}}}); res["error"] != "Query not found" {
		t.Fatalf("cycle on A's query as B = %v", res)
	}
	if rows := stateRows(t, B, shard(qid, pid)); len(rows) != 0 {
		t.Fatalf("B reads A's state: %v", rows)
	}
	if rows := stateRows(t, reader, shard(qid, pid)); rows["k"] != "1" {
		t.Fatalf("a read-only token of A reads %v", rows)
	}
	for _, path := range []string{"/streams/v1/queries", "/streams/v1/cycle"} {
		if r := reader.Do("POST", path, map[string]any{}); r.Status != http.StatusForbidden {
			t.Errorf("read-only POST %s: %d, want 403", path, r.Status)
		}
	}
}

// TestStreamsDeletingTheSourceQueueRemovesItsQueries: the query and all
// its state go with the queue; a query on another queue stays.
func TestStreamsDeletingTheSourceQueueRemovesItsQueries(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(map[string]any{"queue": "gone", "payload": 1})
	s.Push(map[string]any{"queue": "kept", "payload": 1})
	gone := register(t, s.Client, "on-gone", "gone", "", streamsHash("1"), false)["query_id"].(string)
	kept := register(t, s.Client, "on-kept", "kept", "", streamsHash("1"), false)["query_id"].(string)
	pid := newTxnID()
	for _, qid := range []string{gone, kept} {
		cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": pid,
			"state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": 1}}})
	}
	if r := s.Do("DELETE", "/api/v1/resources/queues/gone", nil); r.Status != http.StatusOK {
		t.Fatalf("delete queue: %d %s", r.Status, r.Body)
	}
	if rows := stateRows(t, s.Client, shard(gone, pid)); len(rows) != 0 {
		t.Fatalf("state of the deleted source survives: %v", rows)
	}
	if res := cycle(t, s.Client, map[string]any{"query_id": gone, "partition_id": pid}); res["error"] != "Query not found" {
		t.Fatalf("cycle of a removed query = %v", res)
	}
	if again := register(t, s.Client, "on-gone", "gone", "", streamsHash("22"), false); again["fresh"] != true || again["query_id"] == gone {
		t.Fatalf("re-registering after the delete = %v", again)
	}
	if rows := stateRows(t, s.Client, shard(kept, pid)); rows["k"] != "1" {
		t.Fatalf("a query on another queue lost its state: %v", rows)
	}
}

// TestStreamsMessageIDsSortInOffsetOrder: the runners sort a batch by
// (createdAt, id), and one push shares one createdAt, so ids must be
// lowercase, fixed width and increasing with the offset.
func TestStreamsMessageIDsSortInOffsetOrder(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	items := make([]map[string]any, 600)
	for i := range items {
		items[i] = map[string]any{"queue": "ids", "partition": "p", "payload": map[string]any{"i": i}}
	}
	s.Push(items...)
	msgs := s.Pop("/api/v1/pop/queue/ids?batch=1000&wait=false&autoAck=true").Messages
	if len(msgs) != 600 {
		t.Fatalf("popped %d", len(msgs))
	}
	for i, m := range msgs {
		if m.ID != strings.ToLower(m.ID) || len(m.ID) != len(msgs[0].ID) {
			t.Fatalf("id %q is not lowercase fixed width", m.ID)
		}
		if i > 0 && m.ID <= msgs[i-1].ID {
			t.Fatalf("id of offset %d (%s) does not sort after offset %d (%s)", i, m.ID, i-1, msgs[i-1].ID)
		}
	}
}

// runner is a tumbling-window sum run the way the SDK runners drive the
// server: pop with the query's group, group by partition, sort by
// (createdAt, id), read the shard, fold, and commit one cycle per
// partition; an idle flush closes ripe windows with a prefix and ripe
// filter and an ack-less cycle.
type runner struct {
	t       testing.TB
	c       *combtest.Client
	clock   *clock.Manual
	queryID string
	source  string
	sink    string
	group   string
	window  int64 // ms
}

const windowTag = "tumb:60\u001f"

type windowState struct {
	Acc         struct{ Count, Sum int64 } `json:"acc"`
	WindowStart int64                      `json:"windowStart"`
	WindowEnd   int64                      `json:"windowEnd"`
}

// step pops one batch and commits it; it reports the messages consumed.
func (r *runner) step(batch int) int {
	r.t.Helper()
	pop := r.c.Pop(fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&wait=false&consumerGroup=%s&partitions=4", r.source, batch, r.group))
	byPart := map[string][]combtest.PopMessage{}
	for _, m := range pop.Messages {
		byPart[m.PartitionID] = append(byPart[m.PartitionID], m)
	}
	for pid, msgs := range byPart {
		slices.SortFunc(msgs, func(a, b combtest.PopMessage) int {
			return strings.Compare(a.CreatedAt+a.ID, b.CreatedAt+b.ID)
		})
		state := r.state(map[string]any{"query_id": r.queryID, "partition_id": pid, "keys": []any{}})
		for _, m := range msgs {
			at, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
			if err != nil {
				r.t.Fatal(err)
			}
			start := at.UnixMilli() / r.window * r.window
			key := windowTag + time.UnixMilli(start).UTC().Format("2006-01-02T15:04:05.000Z") + "\u001f" + m.Partition
			ws := state[key]
			if ws == nil {
				ws = &windowState{WindowStart: start, WindowEnd: start + r.window}
				state[key] = ws
			}
			var d struct{ V int64 }
			json.Unmarshal(m.Data, &d)
			ws.Acc.Count++
			ws.Acc.Sum += d.V
		}
		var ops, pushes []any
		for key, ws := range state {
			if ws.WindowEnd <= r.clock.Now().UnixMilli() {
				ops = append(ops, map[string]any{"type": "delete", "key": key})
				pushes = append(pushes, r.emit(key, ws))
			} else {
				ops = append(ops, map[string]any{"type": "upsert", "key": key, "value": ws})
			}
		}
		last := msgs[len(msgs)-1]
		res := cycle(r.t, r.c, map[string]any{"query_id": r.queryID, "partition_id": pid, "consumer_group": r.group,
			"state_ops": ops, "push_items": pushes,
			"ack":           map[string]any{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "status": "completed", "count": len(msgs)},
			"release_lease": true})
		if res["success"] != true {
			r.t.Fatalf("cycle: %v", res)
		}
	}
	return len(pop.Messages)
}

func (r *runner) emit(key string, ws *windowState) map[string]any {
	partition := key[strings.LastIndexByte(key, '\u001f')+1:]
	return map[string]any{"queue": r.sink, "partition": partition,
		"payload": map[string]any{"count": ws.Acc.Count, "sum": ws.Acc.Sum, "windowStart": ws.WindowStart}}
}

func (r *runner) state(body map[string]any) map[string]*windowState {
	r.t.Helper()
	out := map[string]*windowState{}
	for k, v := range stateRows(r.t, r.c, body) {
		var ws windowState
		if err := json.Unmarshal([]byte(v), &ws); err != nil {
			r.t.Fatalf("state %q = %s: %v", k, v, err)
		}
		out[k] = &ws
	}
	return out
}

// flush closes the ripe windows of partition pid.
func (r *runner) flush(pid string) {
	r.t.Helper()
	ripe := r.state(map[string]any{"query_id": r.queryID, "partition_id": pid, "keys": []any{},
		"key_prefix": windowTag, "ripe_at_or_before": r.clock.Now().UnixMilli()})
	if len(ripe) == 0 {
		return
	}
	var ops, pushes []any
	for key, ws := range ripe {
		ops = append(ops, map[string]any{"type": "delete", "key": key})
		pushes = append(pushes, r.emit(key, ws))
	}
	if res := cycle(r.t, r.c, map[string]any{"query_id": r.queryID, "partition_id": pid, "consumer_group": r.group,
		"state_ops": ops, "push_items": pushes, "ack": nil, "release_lease": true}); res["success"] != true {
		r.t.Fatalf("flush cycle: %v", res)
	}
}

// startAt opens a broker on path behind a real HTTP server; stop closes
// both, as a process exit would after its last answered request.
func startAt(t *testing.T, path string, c clock.Clock) (*combtest.Client, func()) {
	t.Helper()
	b := combtest.OpenBrokerAt(t, path, combtest.Options{Clock: c})
	ts := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		b.Drain()
		ts.Close()
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	}
	t.Cleanup(stop)
	return &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}, stop
}

// TestStreamsWindowedSumSurvivesARestart runs a per-minute sum of two
// devices' readings over three minutes, closes and reopens the database in
// the middle, and checks that every window is emitted once with the right
// count and sum.
func TestStreamsWindowedSumSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	c, stop := startAt(t, path, clk)
	qid := register(t, c, "per-minute", "readings", "per-minute.out", streamsHash("pm"), false)["query_id"].(string)
	r := &runner{t: t, c: c, clock: clk, queryID: qid, source: "readings", sink: "per-minute.out",
		group: "streams.per-minute", window: 60_000}

	type key struct {
		dev   string
		start int64
	}
	want := map[key][2]int64{} // count, sum
	v := int64(0)
	pushMinute := func(minute int) {
		for sec := 0; sec < 60; sec += 20 {
			clk.Set(t0.Add(time.Duration(minute)*time.Minute + time.Duration(sec)*time.Second))
			for _, dev := range []string{"dev-a", "dev-b"} {
				v++
				r.c.Push(map[string]any{"queue": "readings", "partition": dev, "payload": map[string]any{"v": v}})
				k := key{dev, t0.Add(time.Duration(minute) * time.Minute).UnixMilli()}
				w := want[k]
				want[k] = [2]int64{w[0] + 1, w[1] + v}
			}
		}
	}
	drain := func() {
		for r.step(4) > 0 {
		}
	}

	pushMinute(0)
	drain()
	pushMinute(1)
	r.step(4) // part of minute 1 folded, the rest still queued
	stop()

	// A new process on the same file: same registration, same state.
	c, stop = startAt(t, path, clk)
	r.c = c
	if again := register(t, c, "per-minute", "readings", "per-minute.out", streamsHash("pm"), false); again["query_id"] != qid || again["fresh"] != false {
		t.Fatalf("after the restart the query is %v", again)
	}
	drain()
	pushMinute(2)
	drain()
	// The last window closes by the idle flush.
	clk.Set(t0.Add(3*time.Minute + time.Second))
	pids := map[string]bool{}
	for _, m := range c.Pop("/api/v1/pop/queue/readings?batch=100&wait=false&autoAck=true&partitions=4&consumerGroup=ids").Messages {
		pids[m.PartitionID] = true
	}
	if len(pids) != 2 {
		t.Fatalf("source partitions: %v", pids)
	}
	for pid := range pids {
		r.flush(pid)
		if left := r.state(shard(qid, pid)); len(left) != 0 {
			t.Errorf("partition %s keeps %d windows after the flush", pid, len(left))
		}
	}

	got := map[key][2]int64{}
	for _, m := range c.Pop("/api/v1/pop/queue/per-minute.out?batch=1000&wait=false&autoAck=true&partitions=4&consumerGroup=check").Messages {
		var e struct{ Count, Sum, WindowStart int64 }
		json.Unmarshal(m.Data, &e)
		k := key{m.Partition, e.WindowStart}
		if _, dup := got[k]; dup {
			t.Errorf("window %v emitted twice", k)
		}
		got[k] = [2]int64{e.Count, e.Sum}
	}
	if len(got) != len(want) {
		t.Errorf("%d windows emitted, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("window %s %s: count, sum = %v, want %v", k.dev, time.UnixMilli(k.start).UTC().Format("15:04"), got[k], w)
		}
	}
}

// TestStreamsSinkPushesGoThroughThePushPath: a cycle's sink messages are
// sealed on an encrypted queue like any push, and read back in clear.
func TestStreamsSinkPushesGoThroughThePushPath(t *testing.T) {
	key := bytes.Repeat([]byte{9}, 32)
	s := combtest.MustServer(t, combtest.Options{Broker: func(o *broker.Options) { o.EncryptionKey = key }})
	s.Do("POST", "/api/v1/configure", map[string]any{"queue": "vault.out", "options": map[string]any{"encryptionEnabled": true}})
	qid := register(t, s.Client, "sealed", "src", "vault.out", streamsHash("s"), false)["query_id"].(string)
	res := cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": newTxnID(),
		"push_items": []any{map[string]any{"queue": "vault.out", "payload": map[string]any{"pin": "CYCLE-SECRET-1234"}}}})
	if res["success"] != true {
		t.Fatalf("cycle = %v", res)
	}
	p := s.Pop("/api/v1/pop/queue/vault.out?wait=false&autoAck=true")
	if len(p.Messages) != 1 || string(p.Messages[0].Data) != `{"pin":"CYCLE-SECRET-1234"}` {
		t.Fatalf("pop: %+v", p.Messages)
	}
	path := s.Broker.DatabasePath()
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("CYCLE-SECRET")) {
			t.Fatalf("%s holds the sink payload in clear", f)
		}
	}
}

// TestStreamsFailedAckDeadLettersTheMessage: status dlq (or failed)
// dead-letters that one message at once, moves the cursor past it and
// drops the lease even with release_lease false.
func TestStreamsFailedAckDeadLettersTheMessage(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	qid := register(t, s.Client, "dl", "src", "", streamsHash("d"), false)["query_id"].(string)
	s.Push(map[string]any{"queue": "src", "payload": map[string]any{"bad": true}},
		map[string]any{"queue": "src", "payload": map[string]any{"ok": true}})
	const group = "streams.dl"
	m := s.Pop("/api/v1/pop/queue/src?batch=1&wait=false&consumerGroup=" + group).Messages[0]
	res := cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": m.PartitionID, "consumer_group": group,
		"ack":           map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID, "status": "dlq", "error": "poison"},
		"release_lease": false})
	mustJSONEqual(t, "dlq ack", res["ack_result"], `{"success":true,"count":1,"lease_released":true,"dlq":true}`)
	r := s.Do("GET", "/api/v1/dlq?queue=src", nil)
	var dlq struct {
		Messages []struct {
			Data         map[string]any `json:"data"`
			ErrorMessage string         `json:"errorMessage"`
		} `json:"messages"`
	}
	r.JSON(t, &dlq)
	if len(dlq.Messages) != 1 || dlq.Messages[0].Data["bad"] != true || dlq.Messages[0].ErrorMessage != "poison" {
		t.Fatalf("dlq: %s", r.Body)
	}
	next := s.Pop("/api/v1/pop/queue/src?batch=10&wait=false&consumerGroup=" + group).Messages
	if len(next) != 1 || string(next[0].Data) != `{"ok":true}` {
		t.Fatalf("after the dead letter the group got %+v", next)
	}
}

// FuzzStreamRoutes sends arbitrary bodies to the streaming routes, against
// a registered query: whatever a client sends, the answer is never a 5xx
// and always JSON.
func FuzzStreamRoutes(f *testing.F) {
	b := combtest.MustOpenBroker(f, combtest.Options{})
	reg, err := b.StreamRegister(context.Background(), combtype.StreamRegisterRequest{Name: "fuzz", SourceQueue: "src", ConfigHash: "h"})
	if err != nil {
		f.Fatal(err)
	}
	qid, pid := reg.Query.ID, newTxnID()
	for _, seed := range []string{
		`{"name":"fuzz","source_queue":"src","config_hash":"h2","reset":true}`,
		`{"name":"n","source_queue":"s","config_hash":"h","reset":"x","sink_queue":null}`,
		`{"query_id":"` + qid + `","partition_id":"` + pid + `","keys":null,"key_prefix":"tumb:60\u001f","ripe_at_or_before":1e400}`,
		`{"query_id":"` + qid + `","partition_id":"` + pid + `","keys":[1,null],"ripe_at_or_before":-0}`,
		`{"query_id":"` + qid + `","partition_id":"` + pid + `","state_ops":[{"type":"upsert","key":"k","value":{"windowEnd":1e308}}],"push_items":[{"queue":"out","payload":1}]}`,
		`{"query_id":"` + qid + `","partition_id":"` + pid + `","state_ops":[{"type":"upsert","key":"k","value":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}]}`,
		`{"query_id":"` + qid + `","partition_id":"` + pid + `","state_ops":[{"type":"delete","key":""}],"ack":{"transactionId":"t","leaseId":"l","count":1e30}}`,
		`{"query_id":"` + qid + `","partition_id":"` + pid + `","push_items":[{"queue":""}],"ack":[],"release_lease":null}`,
		`[]`, `null`, `"x"`, `{`, ``, `{"query_id":1}`,
	} {
		for route := range 3 {
			f.Add(uint8(route), []byte(seed))
		}
	}
	h := httpd.NewHandler(b, httpd.Config{MaxBodyBytes: 1 << 20})
	routes := []string{"/streams/v1/queries", "/streams/v1/state/get", "/streams/v1/cycle"}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := routes[int(route)%len(routes)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: body is not JSON: %s", path, body, rec.Body.Bytes())
		}
	})
}

// TestStreamsCycleWakesParkedPops: a parked pop of the sink wakes on the
// cycle's pushes, and a parked pop of the source group wakes when the
// cycle releases the lease, each long before its timeout.
func TestStreamsCycleWakesParkedPops(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	qid := register(t, s.Client, "wake", "src", "out", streamsHash("w"), false)["query_id"].(string)
	s.Push(map[string]any{"queue": "src", "payload": 1}, map[string]any{"queue": "src", "payload": 2})
	const group = "streams.wake"
	m := s.Pop("/api/v1/pop/queue/src?batch=1&wait=false&consumerGroup=" + group).Messages[0]
	s.Push(map[string]any{"queue": "out", "payload": 0}) // the sink exists, empty for group "reader"
	s.Pop("/api/v1/pop/queue/out?wait=false&autoAck=true&consumerGroup=reader")

	parked := func(path string) chan int {
		done := make(chan int, 1)
		go func() {
			r := s.Do("GET", path, nil)
			var body struct{ Messages []any }
			json.Unmarshal(r.Body, &body)
			done <- len(body.Messages)
		}()
		return done
	}
	sink := parked("/api/v1/pop/queue/out?wait=true&timeout=20000&autoAck=true&consumerGroup=reader")
	source := parked("/api/v1/pop/queue/src?wait=true&timeout=20000&consumerGroup=" + group)
	combtest.CheckFor(t, 5*time.Second, func() error {
		if n := s.Broker.Parked(); n != 2 {
			return fmt.Errorf("%d pops parked", n)
		}
		return nil
	})
	res := cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": m.PartitionID, "consumer_group": group,
		"push_items":    []any{map[string]any{"queue": "out", "payload": map[string]any{"sum": 1}}},
		"ack":           map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID},
		"release_lease": true})
	if res["success"] != true {
		t.Fatalf("cycle = %v", res)
	}
	for name, ch := range map[string]chan int{"sink": sink, "source": source} {
		select {
		case n := <-ch:
			if n != 1 {
				t.Errorf("parked %s pop got %d messages, want 1", name, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("parked %s pop did not wake on the cycle", name)
		}
	}
}

// A cycle's ack follows the ack rule of /api/v1/ack (docs/wire.md, "The
// ack rule"): it never moves the cursor past the batch the lease covers,
// with or without a leaseId, and one without a leaseId completes messages
// inside the batch without ending the holder's lease.
func TestACycleAcksOnlyInsideTheBatchItsLeaseCovers(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	qid := register(t, s.Client, "scan", "src", "", streamsHash("x"), false)["query_id"].(string)
	for i := range 10 {
		s.Push(map[string]any{"queue": "src", "transactionId": fmt.Sprintf("s-%d", i), "payload": map[string]any{"i": i}})
	}
	const group = "streams.scan"
	pop := s.Pop("/api/v1/pop/queue/src?batch=2&wait=false&consumerGroup=" + group)
	if len(pop.Messages) != 2 {
		t.Fatalf("popped %d", len(pop.Messages))
	}
	lease, pid := pop.LeaseID, pop.Messages[0].PartitionID
	cyc := func(txn, leaseID string) map[string]any {
		ack := map[string]any{"transactionId": txn, "status": "completed", "count": 1}
		if leaseID != "" {
			ack["leaseId"] = leaseID
		}
		return cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": pid, "consumer_group": group,
			"state_ops": []any{}, "push_items": []any{}, "ack": ack, "release_lease": true})
	}
	for _, leaseID := range []string{lease, ""} {
		if res := cyc("s-7", leaseID); res["success"] != false || res["error"] != "Invalid or expired lease" {
			t.Fatalf("a cycle (leaseId %q) acked s-7 past its batch s-0..s-1: %v", leaseID, res)
		}
	}
	r := s.Do("POST", "/api/v1/ack", map[string]any{"transactionId": "s-7", "partitionId": pid, "leaseId": lease,
		"consumerGroup": group, "status": "completed"})
	var acked []map[string]any
	if err := json.Unmarshal(r.Body, &acked); err != nil || len(acked) != 1 || acked[0]["success"] != false ||
		acked[0]["error"] != "Invalid or expired lease" {
		t.Fatalf("/api/v1/ack of s-7 = %s", r.Body)
	}
	// Without a leaseId, inside the batch: s-0 is completed, the lease and
	// s-1 stay with the holder, whatever release_lease says.
	res := cyc("s-0", "")
	if res["success"] != true {
		t.Fatalf("a cycle without a leaseId acking s-0 = %v", res)
	}
	mustJSONEqual(t, "ack_result", res["ack_result"], `{"success":true,"count":1,"lease_released":false,"dlq":false}`)
	if again := s.Pop("/api/v1/pop/queue/src?batch=2&wait=false&consumerGroup=" + group); len(again.Messages) != 0 {
		t.Fatalf("another consumer got %d messages while the batch is leased", len(again.Messages))
	}
	if res := cyc("s-1", lease); res["success"] != true {
		t.Fatalf("the holder's cycle = %v", res)
	}
	next := s.Pop("/api/v1/pop/queue/src?batch=2&wait=false&consumerGroup=" + group)
	if len(next.Messages) != 2 || next.Messages[0].TransactionID != "s-2" {
		t.Fatalf("after the batch the group got %+v, want s-2 and s-3", next.Messages)
	}
}

// A client that asks for a large state shard and reads nothing holds no
// reader connection while its reply waits: the rows are read a page at a
// time, and each page's read is over before it is written. Before, four
// such clients of a 16 MB shard took the four reader connections for as
// long as they stayed, and every read of the server (/health, pops, the
// message listing) waited on them.
func TestAStateReadNobodyReadsHoldsNoReaderConnection(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	qid := register(t, s.Client, "big", "src", "", streamsHash("big"), false)["query_id"].(string)
	pid := newTxnID()
	value := map[string]any{"pad": strings.Repeat("x", 10_000)}
	for c := range 16 {
		ops := make([]any, 100)
		for i := range ops {
			ops[i] = map[string]any{"type": "upsert", "key": fmt.Sprintf("k%02d-%03d", c, i), "value": value}
		}
		if res := cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": pid, "state_ops": ops}); res["success"] != true {
			t.Fatalf("cycle = %v", res)
		}
	}
	body, err := json.Marshal(shard(qid, pid))
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(s.HTTP.URL, "http://")
	for range 4 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, "POST /streams/v1/state/get HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			addr, len(body), body)
	}
	time.Sleep(500 * time.Millisecond) // the four replies under way, stalled
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/health", "/api/v1/pop/queue/src?wait=false", "/api/v1/messages?queue=src"} {
		resp, err := hc.Get(s.HTTP.URL + path)
		if err != nil {
			t.Fatalf("GET %s beside four stalled state reads: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Errorf("GET %s beside four stalled state reads: %d", path, resp.StatusCode)
		}
	}
}

// A shard's ids are UUIDs, kept in their canonical form: a cycle naming a
// partition_id that is not one fails with nothing stored (state/get
// refuses such ids, so its state could never be read again), and one in
// upper case stores the state a get of the lower-case id reads, as
// Queen's uuid columns fold it.
func TestAStreamShardIsTheCanonicalFormOfItsUUIDs(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	qid := register(t, s.Client, "canon", "src", "", streamsHash("canon"), false)["query_id"].(string)
	up := func(key string) []any {
		return []any{map[string]any{"type": "upsert", "key": key, "value": map[string]any{"n": 1}}}
	}
	res := cycle(t, s.Client, map[string]any{"query_id": qid, "partition_id": "not-a-uuid", "state_ops": up("a")})
	if res["success"] != false || res["error"] != "partition_id must be a UUID" || res["state_ops_applied"] != 0.0 {
		t.Fatalf("cycle of partition_id not-a-uuid = %v, want success false and nothing applied", res)
	}
	pid := newTxnID()
	res = cycle(t, s.Client, map[string]any{"query_id": strings.ToUpper(qid), "partition_id": strings.ToUpper(pid), "state_ops": up("b")})
	if res["success"] != true || res["partition_id"] != pid || res["query_id"] != qid {
		t.Fatalf("cycle of upper-case ids = %v, want success, the ids in lower case", res)
	}
	for _, ids := range [][2]string{{qid, pid}, {strings.ToUpper(qid), strings.ToUpper(pid)}} {
		if rows := stateRows(t, s.Client, shard(ids[0], ids[1])); len(rows) != 1 || rows["b"] == "" {
			t.Errorf("state/get %v = %v, want the row b", ids, rows)
		}
	}
}
