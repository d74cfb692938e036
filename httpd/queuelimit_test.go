package httpd_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/combtest"
)

// A write that would create a queue past the broker's bound is a 409
// with a JSON error (retrying does not help, so not a 5xx Queen's
// clients retry), and nothing of it is stored.
func TestAQueuePastTheBoundIsRefusedWith409(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{Broker: func(o *broker.Options) { o.MaxQueues = 2 }})
	s.Push(map[string]any{"queue": "q1", "payload": 1}, map[string]any{"queue": "q2", "payload": 1})
	const want = "Queue limit reached: the database holds as many queues as it may (comb serve --max-queues); nothing was written: delete a queue or raise the limit"
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/push", `{"items":[{"queue":"q1","payload":2},{"queue":"q3","payload":2}]}`},
		{"POST", "/api/v1/configure", `{"queue":"q3","options":{"leaseTime":30}}`},
		{"POST", "/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"q1","payload":3},{"queue":"q3","payload":3}]}]}`},
	} {
		r := s.Do(c.method, c.path, c.body)
		if r.Status != http.StatusConflict || r.Map(t)["error"] != want {
			t.Errorf("%s %s: %d %s; want 409 %q", c.method, c.path, r.Status, r.Body, want)
		}
	}
	r := s.Do("GET", "/api/v1/resources/queues/q3", nil)
	if r.Status != http.StatusNotFound {
		t.Errorf("q3 after the refusals: %d %s; want 404", r.Status, r.Body)
	}
	// q1 holds its first message only: the refused push and transaction
	// stored none of theirs.
	if got := s.Pop("/api/v1/pop/queue/q1?batch=10&autoAck=true"); len(got.Messages) != 1 || string(got.Messages[0].Data) != "1" {
		t.Errorf("q1 after the refusals: %+v; want its one message", got)
	}
	s.Push(map[string]any{"queue": "q2", "payload": 4})
	if r := s.Do("DELETE", "/api/v1/resources/queues/q2", nil); r.Status != http.StatusOK {
		t.Fatalf("delete q2: %d %s", r.Status, r.Body)
	}
	s.Push(map[string]any{"queue": "q3", "payload": 5})

	// A stream cycle whose sink push would create a queue fails whole, as
	// any refused cycle does: 200, success false, the bound named, its
	// state ops not applied.
	q := register(t, s.Client, "limited", "q1", "", streamsHash("l"), false)
	pid := newTxnID()
	out := cycle(t, s.Client, map[string]any{"query_id": q["query_id"], "partition_id": pid,
		"state_ops":  []any{map[string]any{"type": "upsert", "key": "k", "value": map[string]any{"n": 1}}},
		"push_items": []any{map[string]any{"queue": "sink-new", "payload": 1}}})
	if out["success"] != false || !strings.Contains(fmt.Sprint(out["error"]), "queue limit reached") {
		t.Errorf("cycle pushing to a new queue past the bound: %v; want success false naming the limit", out)
	}
	if rows := stateRows(t, s.Client, shard(q["query_id"].(string), pid)); len(rows) != 0 {
		t.Errorf("state after the refused cycle: %v; want none", rows)
	}
}

// Creating a forwarder past the broker's bound is a 409 with a JSON
// error, and starts nothing.
func TestAForwarderPastTheBoundIsRefusedWith409(t *testing.T) {
	s := forwarderServer(t, func(o *broker.Options) { o.MaxForwarders = 1 })
	create := func(name string) *combtest.Response {
		return s.Do("POST", "/api/v1/forwarders", map[string]any{"name": name, "queue": "q", "upstream": "http://127.0.0.1:9"})
	}
	if r := create("f1"); r.Status != http.StatusCreated {
		t.Fatalf("first forwarder: %d %s", r.Status, r.Body)
	}
	const want = "Forwarder limit reached: the database holds as many forwarders as it may (comb serve --max-forwarders); nothing was written: delete a forwarder or raise the limit"
	if r := create("f2"); r.Status != http.StatusConflict || r.Map(t)["error"] != want {
		t.Fatalf("second forwarder: %d %s; want 409 %q", r.Status, r.Body, want)
	}
	if r := s.Do("GET", "/api/v1/forwarders/f2", nil); r.Status != http.StatusNotFound {
		t.Fatalf("f2 after its refusal: %d %s; want 404", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/api/v1/forwarders/f1", nil); r.Status != http.StatusOK {
		t.Fatalf("delete f1: %d %s", r.Status, r.Body)
	}
	if r := create("f2"); r.Status != http.StatusCreated {
		t.Fatalf("a forwarder after the delete: %d %s", r.Status, r.Body)
	}
}

// A pop or seek that would subscribe a group past the broker's bound is a
// 409 with a JSON error, whether it would park or not, and subscribes
// nothing; subscribed groups are served, and a group's delete makes room.
func TestAGroupPastTheBoundIsRefusedWith409(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{Broker: func(o *broker.Options) { o.MaxGroups = 2 }})
	s.Push(map[string]any{"queue": "q", "payload": 1}, map[string]any{"queue": "q2", "payload": 1})
	for _, g := range []string{"g1", "g2"} {
		if r := s.Do("GET", "/api/v1/pop/queue/q?consumerGroup="+g+"&batch=1&wait=false", nil); r.Status != http.StatusOK {
			t.Fatalf("pop of %s: %d %s", g, r.Status, r.Body)
		}
	}
	const want = "Consumer group limit reached: the database holds as many group subscriptions as it may (comb serve --max-groups); nothing was written: delete a consumer group or raise the limit"
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/pop/queue/q?consumerGroup=g3&batch=1&wait=false", ""},
		{"GET", "/api/v1/pop/queue/q?consumerGroup=g3&batch=1&wait=true&timeout=30000", ""},
		{"GET", "/api/v1/pop/queue/q2?consumerGroup=g1&batch=1&wait=false", ""}, // a group on one more queue
		{"GET", "/api/v1/pop/queue/q2?batch=1&wait=false", ""},                  // queue mode is a subscription too
		{"POST", "/api/v1/consumer-groups/g3/queues/q/seek", `{"toEnd":true}`},
		{"POST", "/api/v1/consumer-groups/g3/queues/q/partitions/Default/seek", `{}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := s.Do(c.method, c.path, body)
		if r.Status != http.StatusConflict || r.Map(t)["error"] != want {
			t.Errorf("%s %s: %d %s; want 409 %q", c.method, c.path, r.Status, r.Body, want)
		}
	}
	r := s.Do("GET", "/api/v1/consumer-groups", nil)
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), "g3") || strings.Contains(string(r.Body), "QUEUE_MODE") {
		t.Errorf("groups after the refusals: %d %s; want g1 and g2 only", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/api/v1/consumer-groups/g2", nil); r.Status != http.StatusOK {
		t.Fatalf("delete g2: %d %s", r.Status, r.Body)
	}
	if got := s.Pop("/api/v1/pop/queue/q2?consumerGroup=g3&batch=1&wait=false"); len(got.Messages) != 1 {
		t.Errorf("pop of g3 after g2's delete: %+v; want the message", got)
	}
}

// A snapshot past --max-snapshots and a streaming query past
// --max-stream-queries are refused with 409 naming the flag, over both
// snapshot routes, and nothing is stored.
func TestSnapshotsAndStreamQueriesPastTheirBoundsAreRefusedWith409(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{Broker: func(o *broker.Options) { o.MaxSnapshots, o.MaxStreamQueries = 1, 1 }})
	newOpenAPICheck(t).attach(s)
	s.Push(map[string]any{"queue": "q", "payload": 1})
	if r := s.Do("POST", "/api/v1/snapshots", map[string]any{"name": "s1", "consumerGroup": "g", "queue": "q"}); r.Status != http.StatusOK && r.Status != http.StatusCreated {
		t.Fatalf("first snapshot: %d %s", r.Status, r.Body)
	}
	const wantSnap = "Snapshot limit reached: the database holds as many live snapshots as it may (comb serve --max-snapshots); nothing was written: delete a snapshot or raise the limit"
	for _, c := range []struct{ path, body string }{
		{"/api/v1/snapshots", `{"name":"s2","consumerGroup":"g","queue":"q"}`},
		{"/api/v1/consumer-groups/g/queues/q/snapshots", `{"name":"s2"}`},
	} {
		if r := s.Do("POST", c.path, c.body); r.Status != http.StatusConflict || r.Map(t)["error"] != wantSnap {
			t.Errorf("POST %s: %d %s; want 409 %q", c.path, r.Status, r.Body, wantSnap)
		}
	}
	if r := s.Do("GET", "/api/v1/snapshots/s2", nil); r.Status != http.StatusNotFound {
		t.Errorf("GET s2 after the refusals: %d %s; want 404", r.Status, r.Body)
	}

	reg := func(name string) *combtest.Response {
		return s.Do("POST", "/streams/v1/queries", map[string]any{"name": name, "source_queue": "q", "sink_queue": "out", "config_hash": "h"})
	}
	if r := reg("a"); r.Status != http.StatusOK {
		t.Fatalf("first query: %d %s", r.Status, r.Body)
	}
	const wantQuery = "Streaming query limit reached: the database holds as many streaming queries as it may (comb serve --max-stream-queries); nothing was written: delete a query (DELETE /api/v1/streams/queries/NAME) or raise the limit"
	if r := reg("b"); r.Status != http.StatusConflict || r.Map(t)["error"] != wantQuery {
		t.Errorf("second query: %d %s; want 409 %q", r.Status, r.Body, wantQuery)
	}
	if r := reg("a"); r.Status != http.StatusOK || r.Map(t)["fresh"] != false {
		t.Errorf("the first again at the bound: %d %s", r.Status, r.Body)
	}
	// The listing shows it, and its delete makes room without deleting
	// the queue it reads.
	r := s.Do("GET", "/api/v1/streams/queries", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"queries":[{"name":"a",`) {
		t.Errorf("listing: %d %s", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/api/v1/streams/queries/a", nil); r.Status != http.StatusOK || r.Map(t)["deleted"] != true {
		t.Errorf("delete a: %d %s", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/api/v1/streams/queries/a", nil); r.Status != http.StatusNotFound {
		t.Errorf("delete a again: %d %s; want 404", r.Status, r.Body)
	}
	if r := reg("b"); r.Status != http.StatusOK || r.Map(t)["fresh"] != true {
		t.Errorf("a query once a was deleted: %d %s", r.Status, r.Body)
	}
}
