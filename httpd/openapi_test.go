package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

type openAPIDoc struct {
	OpenAPI string                                 `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

type openAPIOperation struct {
	Access string `json:"x-comb-access"`
}

var pathParam = regexp.MustCompile(`\{(\w+)\}`)

// documentedRoutes lists the document's operations as "METHOD /path/:param",
// the route table's spelling, with each one's access level.
func documentedRoutes(t *testing.T) map[string]string {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(httpd.OpenAPI(), &doc); err != nil {
		t.Fatalf("decode openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	out := map[string]string{}
	for p, item := range doc.Paths {
		for method, op := range item {
			out[strings.ToUpper(method)+" "+pathParam.ReplaceAllString(p, ":$1")] = op.Access
		}
	}
	return out
}

// TestOpenAPIMatchesRouteTable: every route the server registers is in the
// document with its access level, and the document has nothing else.
func TestOpenAPIMatchesRouteTable(t *testing.T) {
	doc := documentedRoutes(t)
	srv := combtest.MustServer(t, combtest.Options{})
	registered := httpd.NewHandler(srv.Broker, httpd.Config{}).Routes()
	levels := httpd.RouteLevels()
	if len(registered) != len(levels) {
		t.Fatalf("%d routes registered, %d in the table", len(registered), len(levels))
	}
	for _, rt := range registered {
		access, ok := doc[rt]
		if !ok {
			t.Errorf("route %s is not in openapi.json", rt)
			continue
		}
		if want := levels[rt].String(); access != want {
			t.Errorf("%s: x-comb-access %q, want %q", rt, access, want)
		}
	}
	for op := range doc {
		if !slices.Contains(registered, op) {
			t.Errorf("openapi.json documents %s, which the server does not serve", op)
		}
	}
}

// TestOpenAPIDocument: the document is a valid OpenAPI 3.1 document, the
// server serves it, and docs/openapi.json is the same bytes.
func TestOpenAPIDocument(t *testing.T) {
	doc, err := libopenapi.NewDocument(httpd.OpenAPI())
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("version %q", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("document: %s: %s", e.Message, e.Reason)
		}
	}
	copyInDocs, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(copyInDocs, httpd.OpenAPI()) {
		t.Fatal("docs/openapi.json differs from httpd/openapi.json: cp httpd/openapi.json docs/openapi.json")
	}
	srv := combtest.MustServer(t, combtest.Options{})
	r := srv.Do("GET", "/openapi.json", nil)
	if r.Status != http.StatusOK || !bytes.Equal(r.Body, httpd.OpenAPI()) {
		t.Fatalf("GET /openapi.json: %d, %d bytes", r.Status, len(r.Body))
	}
}

// openAPICheck validates requests and replies against the document and
// records, per route of the table, what was seen.
type openAPICheck struct {
	t    *testing.T
	v    validator.Validator
	mu   sync.Mutex
	seen map[string]bool // route, any reply
	ok   map[string]bool // route, a 2xx reply
}

func newOpenAPICheck(t *testing.T) *openAPICheck {
	t.Helper()
	doc, err := libopenapi.NewDocument(httpd.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	// The servers under test run without auth: the security schemes are
	// checked by the auth tests and TestOpenAPIMatchesRouteTable. Formats
	// (date-time, uuid) are asserted, not just annotations.
	v, errs := validator.NewValidator(doc, config.WithoutSecurityValidation(), config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return &openAPICheck{t: t, v: v, seen: map[string]bool{}, ok: map[string]bool{}}
}

// attach routes srv's client through the check.
func (c *openAPICheck) attach(srv *combtest.Server) {
	srv.Client.HTTP = &http.Client{Transport: &validating{check: c, next: srv.HTTP.Client().Transport}}
}

// validating is a transport that checks every reply against the document
// and, when the server accepted the request (2xx), the request too: what
// the server takes, the document must allow.
type validating struct {
	check *openAPICheck
	next  http.RoundTripper
}

func (vt *validating) RoundTrip(req *http.Request) (*http.Response, error) {
	var sent []byte
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		if sent, err = io.ReadAll(rc); err != nil {
			return nil, err
		}
	}
	resp, err := vt.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	check := *resp
	check.Body = io.NopCloser(bytes.NewReader(body))
	c := vt.check
	c.mu.Lock()
	defer c.mu.Unlock()
	rt := matchRoute(req.Method, req.URL.Path)
	if _, served := httpd.RouteLevels()[rt]; !served {
		// Not a route: the document does not describe what is not served.
		return resp, nil
	}
	c.seen[rt] = true
	if ok, errs := c.v.ValidateHttpResponse(req, &check); !ok {
		for _, e := range errs {
			c.t.Errorf("reply: %s %s -> %d %.300s: %s: %s %v", req.Method, req.URL.Path, resp.StatusCode, body, e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}
	// A 200 whose body says success: false (a refused stream cycle) is a
	// refusal too: only what the server took must fit the document.
	if resp.StatusCode/100 == 2 && !bytes.Contains(body, []byte(`"success":false`)) {
		c.ok[rt] = true
		again := req.Clone(req.Context())
		again.Body = io.NopCloser(bytes.NewReader(sent))
		if ok, errs := c.v.ValidateHttpRequest(again); !ok {
			for _, e := range errs {
				c.t.Errorf("request the server accepted: %s %s %.300s: %s: %s %v", req.Method, req.URL.RequestURI(), sent, e.Message, e.Reason, e.SchemaValidationErrors)
			}
		}
	}
	return resp, nil
}

// matchRoute maps a request onto its row of the route table.
func matchRoute(method, p string) string {
	for rt := range httpd.RouteLevels() {
		m, pattern, _ := strings.Cut(rt, " ")
		if m != method {
			continue
		}
		ps, rs := strings.Split(pattern, "/"), strings.Split(p, "/")
		if len(ps) != len(rs) {
			continue
		}
		match := true
		for i := range ps {
			if !strings.HasPrefix(ps[i], ":") && ps[i] != rs[i] {
				match = false
				break
			}
		}
		if match {
			return rt
		}
	}
	return method + " " + p
}

// TestOpenAPIRepliesValidate calls every route of a real server, with good
// and bad input, and checks each reply, error bodies included, against the
// document, and each request the server accepted as well. Every route must
// have been answered, and with a 2xx, but restoring a quarantined segment,
// which needs a damaged file: TestOpenAPIQuarantineRestoreValidates.
func TestOpenAPIRepliesValidate(t *testing.T) {
	check := newOpenAPICheck(t)
	srv := combtest.MustServer(t, combtest.Options{})
	check.attach(srv)
	var c *combtest.Client = srv.Client
	do := func(method, path string, body any, want ...int) *combtest.Response {
		t.Helper()
		r := c.Do(method, path, body)
		if len(want) > 0 && !slices.Contains(want, r.Status) {
			t.Errorf("%s %s: %d %.300s, want %v", method, path, r.Status, r.Body, want)
		}
		return r
	}

	do("GET", "/health", nil, 200)
	do("GET", "/openapi.json", nil, 200)
	do("POST", "/api/v1/configure", map[string]any{"queue": "orders", "namespace": "billing", "task": "invoice", "options": map[string]any{"leaseTime": 60}}, 200)
	do("POST", "/api/v1/configure", "{", 400)
	do("POST", "/api/v1/push", map[string]any{"items": []any{
		opItem("orders", "", "t1", map[string]any{"a": 1}), opItem("orders", "", "t2", nil),
		opItem("orders", "eu", "t3", "x"), opItem("orders", "", "t4", 4), opItem("orders", "", "t5", 5)}}, 201)
	do("POST", "/api/v1/push", map[string]any{"items": []any{opItem("orders", "", "t1", 1)}}, 201)
	do("POST", "/api/v1/push", map[string]any{}, 400)
	do("GET", "/api/v1/pop/queue/nothing?wait=false", nil, 204)
	pop := srv.Pop("/api/v1/pop/queue/orders/partition/Default?batch=1")
	if len(pop.Messages) != 1 {
		t.Fatalf("pop: %+v", pop)
	}
	m := pop.Messages[0]
	do("POST", "/api/v1/lease/"+m.LeaseID+"/extend", map[string]any{"seconds": 30}, 200)
	do("POST", "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID, "status": "completed"}, 200)
	do("POST", "/api/v1/ack", map[string]any{}, 400)
	pop = srv.Pop("/api/v1/pop/queue/orders?batch=2")
	acks := []any{}
	for _, m := range pop.Messages {
		acks = append(acks, map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID, "status": "completed"})
	}
	do("POST", "/api/v1/ack/batch", map[string]any{"acknowledgments": acks}, 200)
	pop = srv.Pop("/api/v1/pop?namespace=billing&batch=1")
	if len(pop.Messages) != 1 {
		t.Fatalf("pop by namespace: %+v", pop)
	}
	m = pop.Messages[0]
	do("POST", "/api/v1/transaction", map[string]any{"operations": []any{
		map[string]any{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": "failed"},
		map[string]any{"type": "push", "items": []any{opItem("next", "", "n1", 1)}}}}, 200)
	do("POST", "/api/v1/transaction", map[string]any{"operations": []any{}}, 400)
	do("POST", "/api/v1/traces", map[string]any{"transactionId": "t4", "partitionId": m.PartitionID, "eventType": "info", "data": map[string]any{"x": 1}, "traceNames": []string{"n"}})
	do("POST", "/api/v1/traces", map[string]any{}, 400)
	do("GET", "/api/v1/traces/names", nil, 200)
	do("GET", "/api/v1/traces/by-name/n", nil, 200)
	do("GET", "/api/v1/traces/"+m.PartitionID+"/t4", nil, 200)

	g := srv.Pop("/api/v1/pop/queue/orders?consumerGroup=workers&batch=1")
	if len(g.Messages) != 1 {
		t.Fatalf("group pop: %+v", g)
	}
	do("GET", "/api/v1/consumer-groups", nil, 200)
	do("GET", "/api/v1/consumer-groups/workers", nil, 200)
	do("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=0", nil, 200)
	do("GET", "/api/v1/consumer-groups?limit=1&offset=0", nil, 200)
	do("GET", "/api/v1/consumer-groups/workers?limit=1", nil, 200)
	do("GET", "/api/v1/consumer-groups?limit=0", nil, 400)
	do("POST", "/api/v1/consumer-groups/workers/subscription", map[string]any{"subscriptionTimestamp": "2026-01-01T00:00:00Z"}, 200)
	do("POST", "/api/v1/consumer-groups/workers/subscription", map[string]any{}, 400)
	do("POST", "/api/v1/consumer-groups/workers/subscription", map[string]any{"subscriptionTimestamp": "soon"}, 400)

	do("POST", "/api/v1/consumer-groups/workers/queues/orders/snapshots", map[string]any{"name": "snap1", "labels": map[string]string{"k": "v"}}, 201)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/snapshots", map[string]any{"name": "snap1"}, 409)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/snapshots", map[string]any{"name": "bad name"}, 400)
	do("POST", "/api/v1/snapshots", map[string]any{"name": "snap2", "consumerGroup": "workers", "queue": "orders", "ttlSeconds": 3600}, 201)
	do("POST", "/api/v1/snapshots", map[string]any{"name": "snap3", "group": "workers", "queue": "orders"}, 400)
	do("POST", "/api/v1/snapshots", map[string]any{"name": "snap3", "consumerGroup": "workers", "queue": "nope"}, 409)
	do("POST", "/api/v1/snapshots", "{", 400)
	do("GET", "/api/v1/snapshots", nil, 200)
	do("GET", "/api/v1/snapshots?consumerGroup=workers&queue=orders", nil, 200)
	do("GET", "/api/v1/snapshots/snap2", nil, 200)
	do("GET", "/api/v1/snapshots/none", nil, 404)
	do("PUT", "/api/v1/snapshots/snap2", map[string]any{"labels": map[string]string{"env": "test"}, "expireTime": "2030-01-01T00:00:00Z"}, 200)
	do("PUT", "/api/v1/snapshots/snap2", map[string]any{"description": "d"}, 400)
	do("PUT", "/api/v1/snapshots/none", map[string]any{"labels": map[string]string{}}, 404)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", map[string]any{"snapshot": "snap2", "dryRun": true}, 200)
	do("DELETE", "/api/v1/snapshots/snap2", nil, 200)
	do("DELETE", "/api/v1/snapshots/snap2", nil, 404)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", map[string]any{"toEnd": true}, 200)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", map[string]any{"timestamp": "2026-01-01"}, 200)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", map[string]any{}, 400)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", map[string]any{"toEnd": "yes"}, 400)
	do("POST", "/api/v1/consumer-groups/workers/queues/nope/seek", map[string]any{"toEnd": true}, 404)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/partitions/Default/seek", nil, 200)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/partitions/Default/seek", map[string]any{"offset": 0}, 200)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/partitions/nope/seek", nil, 404)
	do("DELETE", "/api/v1/consumer-groups/workers/queues/orders", nil, 200)
	do("DELETE", "/api/v1/consumer-groups/workers?deleteMetadata=true", nil, 200)

	do("GET", "/api/v1/dlq?queue=orders", nil, 200)
	do("GET", "/api/v1/dlq?from=yesterday", nil, 400)
	do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "orders", "limit": 10}, 200)
	do("POST", "/api/v1/dlq/redrive", "[", 400)
	do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "orders", "ids": "x"}, 400)
	do("DELETE", "/api/v1/dlq?queue=nothing", nil, 200)
	do("DELETE", "/api/v1/dlq", nil, 400)
	do("GET", "/api/v1/quarantine", nil, 200)
	do("GET", "/api/v1/quarantine?limit=-1", nil, 400)
	do("POST", "/api/v1/quarantine/42/restore", nil, 404)
	do("POST", "/api/v1/quarantine/x/restore", nil, 400)

	do("GET", "/api/v1/resources/overview", nil, 200)
	do("GET", "/api/v1/resources/queues", nil, 200)
	do("GET", "/api/v1/resources/queues/orders", nil, 200)
	do("GET", "/api/v1/resources/queues/orders?limit=1", nil, 200)
	do("GET", "/api/v1/resources/queues/orders?limit=1001", nil, 400)
	do("GET", "/api/v1/resources/queues/nope", nil, 404)
	do("GET", "/api/v1/resources/namespaces", nil, 200)
	do("GET", "/api/v1/resources/tasks", nil, 200)
	do("DELETE", "/api/v1/resources/queues/next", nil, 200)
	do("GET", "/api/v1/messages?queue=orders", nil, 200)
	do("GET", "/api/v1/messages?status=lost", nil, 400)
	do("GET", "/api/v1/messages/"+m.PartitionID+"/t5", nil, 200)
	do("GET", "/api/v1/messages/nope/nope", nil, 404)
	do("DELETE", "/api/v1/messages/"+m.PartitionID+"/t5", nil, 200)
	do("DELETE", "/api/v1/messages/"+m.PartitionID+"/t5", nil, 200)

	do("GET", "/api/v1/status", nil, 200)
	do("GET", "/api/v1/status?from=nope", nil, 400)
	do("GET", "/api/v1/status/queues", nil, 200)
	do("GET", "/api/v1/status/queues/orders", nil, 200)
	do("GET", "/api/v1/status/queues/nope", nil, 404)
	do("GET", "/api/v1/status/queues/orders/messages", nil, 200)
	do("GET", "/api/v1/status/queues/nope/messages", nil, 404)
	do("GET", "/api/v1/status/analytics", nil, 200)
	do("GET", "/api/v1/status/analytics?interval=minute", nil, 200)
	do("GET", "/api/v1/status/buffers", nil, 200)
	for _, kind := range []string{"system-metrics", "worker-metrics", "queue-lag", "queue-ops", "queue-parked-replicas", "retention", "postgres-stats"} {
		do("GET", "/api/v1/analytics/"+kind, nil, 200)
	}
	do("GET", "/api/v1/analytics/nothing", nil, 404)
	do("POST", "/api/v1/stats/refresh", nil, 200)
	do("GET", "/metrics", nil, 200)
	do("GET", "/metrics/prometheus", nil, 200)
	do("GET", "/api/v1/whoami", nil, 200)

	do("GET", "/api/v1/system/maintenance", nil, 200)
	do("POST", "/api/v1/system/maintenance", map[string]any{"enabled": false}, 200)
	do("POST", "/api/v1/system/maintenance", map[string]any{}, 400)
	do("GET", "/api/v1/system/maintenance/pop", nil, 200)
	do("POST", "/api/v1/system/maintenance/pop", map[string]any{"enabled": false}, 200)
	do("POST", "/api/v1/system/maintenance/pop", map[string]any{"enabled": "no"}, 400)
	do("GET", "/api/v1/system/shared-state", nil, 200)
	do("GET", "/api/v1/system/backup", nil, 200)

	// Streams (docs/streams.md): register, conflict, a cycle that writes
	// state, pushes and acks, one the server refuses in its body, reads.
	q := do("POST", "/streams/v1/queries", map[string]any{"name": "q1", "source_queue": "orders", "sink_queue": "sink", "config_hash": "h"}, 200)
	qid, _ := q.Map(t)["query_id"].(string)
	do("POST", "/streams/v1/queries", map[string]any{"name": "q1", "source_queue": "orders", "config_hash": "h2"}, 409)
	do("POST", "/streams/v1/queries", map[string]any{"name": "q1", "source_queue": "orders", "config_hash": "h2", "reset": true}, 200)
	do("POST", "/streams/v1/queries", map[string]any{"name": "q1"}, 400)
	sp := srv.Pop("/api/v1/pop/queue/orders?consumerGroup=streams.q1&batch=1")
	if len(sp.Messages) != 1 {
		t.Fatalf("stream pop: %+v", sp)
	}
	sm := sp.Messages[0]
	do("POST", "/streams/v1/cycle", map[string]any{"query_id": qid, "partition_id": sm.PartitionID, "consumer_group": "streams.q1",
		"state_ops":  []any{map[string]any{"type": "upsert", "key": "k", "value": map[string]any{"n": 1}}, map[string]any{"type": "delete", "key": "gone"}},
		"push_items": []any{map[string]any{"queue": "sink", "payload": map[string]any{"n": 1}}},
		"ack":        map[string]any{"transactionId": sm.TransactionID, "leaseId": sm.LeaseID, "status": "completed"}, "release_lease": true}, 200)
	do("POST", "/streams/v1/cycle", map[string]any{"query_id": qid, "partition_id": sm.PartitionID,
		"state_ops": []any{map[string]any{"type": "merge", "key": "k"}}}, 200)
	do("POST", "/streams/v1/cycle", map[string]any{"query_id": qid}, 400)
	do("POST", "/streams/v1/cycle", "[]", 400)
	do("POST", "/streams/v1/state/get", map[string]any{"query_id": qid, "partition_id": sm.PartitionID, "keys": []string{"k"}}, 200)
	do("POST", "/streams/v1/state/get", map[string]any{"query_id": qid, "partition_id": sm.PartitionID, "key_prefix": "", "ripe_at_or_before": 1e12}, 200)
	do("POST", "/streams/v1/state/get", map[string]any{"query_id": "x", "partition_id": sm.PartitionID}, 400)
	do("GET", "/api/v1/streams/queries?limit=1", nil, 200)
	do("GET", "/api/v1/streams/queries?limit=0", nil, 400)
	do("POST", "/streams/v1/queries", map[string]any{"name": "q2", "source_queue": "orders", "config_hash": "h"}, 200)
	do("DELETE", "/api/v1/streams/queries/q2", nil, 200)
	do("DELETE", "/api/v1/streams/queries/q2", nil, 404)

	// Without forwarding, the forwarder routes answer 503.
	for _, p := range []string{"/api/v1/forwarders", "/api/v1/forwarders/f"} {
		do("GET", p, nil, 503)
	}
	do("POST", "/api/v1/forwarders", map[string]any{"name": "f"}, 503)
	do("DELETE", "/api/v1/forwarders/f", nil, 503)
	do("POST", "/api/v1/forwarders/f/pause", nil, 503)
	do("POST", "/api/v1/forwarders/f/resume", nil, 503)
	do("GET", "/api/v1/nothing-here", nil, 404)

	// With forwarding: a push forwarder to another comb, through its life.
	up := combtest.MustServer(t, combtest.Options{})
	fs := forwarderServer(t)
	check.attach(fs)
	c = fs.Client
	fwd := map[string]any{"name": "up", "queue": "orders", "upstream": up.URL, "token": "s3cret", "batch": 10}
	do("POST", "/api/v1/forwarders", fwd, 201)
	do("POST", "/api/v1/forwarders", fwd, 409)
	do("POST", "/api/v1/forwarders", map[string]any{"name": "bad", "queue": "orders", "upstream": "ftp://x"}, 400)
	do("POST", "/api/v1/forwarders", "", 400)
	do("GET", "/api/v1/forwarders", nil, 200)
	do("GET", "/api/v1/forwarders/up", nil, 200)
	do("GET", "/api/v1/forwarders/none", nil, 404)
	do("POST", "/api/v1/forwarders/up/pause", nil, 200)
	do("POST", "/api/v1/forwarders/up/resume", nil, 200)
	do("POST", "/api/v1/forwarders/none/pause", nil, 404)
	do("GET", "/api/v1/status", nil, 200)
	do("DELETE", "/api/v1/forwarders/up", nil, 200)
	do("DELETE", "/api/v1/forwarders/up", nil, 404)

	for rt := range httpd.RouteLevels() {
		switch {
		case !check.seen[rt]:
			t.Errorf("route %s was not exercised", rt)
		case !check.ok[rt] && rt != "POST /api/v1/quarantine/:id/restore":
			t.Errorf("route %s never answered 2xx: its success body is unchecked", rt)
		}
	}
}

// TestOpenAPIBodiesHaveSchemas: every JSON body the document describes,
// request or reply, at any depth, names its fields: an object schema has
// properties (or says what its values are), an array says what its items
// are. A bare {"type": "object"} would let any reply validate and give a
// generated client nothing to type.
func TestOpenAPIBodiesHaveSchemas(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(httpd.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	checked := map[string]bool{}
	var walk func(where string, s any)
	walk = func(where string, s any) {
		m, ok := s.(map[string]any)
		if !ok {
			return
		}
		if ref, ok := m["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			target, found := schemas[name]
			if !found {
				t.Errorf("%s: $ref %s resolves to nothing", where, ref)
			}
			if !checked[name] {
				checked[name] = true
				walk(name, target)
			}
			return
		}
		types := []string{}
		switch ty := m["type"].(type) {
		case string:
			types = append(types, ty)
		case []any:
			for _, x := range ty {
				types = append(types, x.(string))
			}
		}
		_, props := m["properties"]
		_, values := m["additionalProperties"]
		_, items := m["items"]
		composite := m["oneOf"] != nil || m["anyOf"] != nil || m["allOf"] != nil
		if slices.Contains(types, "object") && !props && !values && !composite {
			t.Errorf("%s: an object schema without properties", where)
		}
		if slices.Contains(types, "array") && !items {
			t.Errorf("%s: an array schema without items", where)
		}
		if req, ok := m["required"].([]any); ok && props {
			for _, r := range req {
				if _, ok := m["properties"].(map[string]any)[r.(string)]; !ok {
					t.Errorf("%s: required field %v is not among its properties", where, r)
				}
			}
		}
		for _, key := range []string{"properties"} {
			if ps, ok := m[key].(map[string]any); ok {
				for name, p := range ps {
					walk(where+"."+name, p)
				}
			}
		}
		for _, key := range []string{"items", "additionalProperties"} {
			walk(where+"[]", m[key])
		}
		for _, key := range []string{"oneOf", "anyOf", "allOf"} {
			if xs, ok := m[key].([]any); ok {
				for i, x := range xs {
					walk(fmt.Sprintf("%s.%s[%d]", where, key, i), x)
				}
			}
		}
	}
	bodies := 0
	for p, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			o := op.(map[string]any)
			where := strings.ToUpper(method) + " " + p
			if rb, ok := o["requestBody"].(map[string]any); ok {
				for ct, c := range rb["content"].(map[string]any) {
					bodies++
					walk(where+" request "+ct, c.(map[string]any)["schema"])
				}
			}
			for code, r := range o["responses"].(map[string]any) {
				rm := r.(map[string]any)
				if ref, ok := rm["$ref"].(string); ok {
					rm = doc["components"].(map[string]any)["responses"].(map[string]any)[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
				}
				content, _ := rm["content"].(map[string]any)
				for ct, c := range content {
					if ct != "application/json" {
						continue
					}
					bodies++
					walk(where+" "+code+" "+ct, c.(map[string]any)["schema"])
				}
			}
		}
	}
	if bodies < 100 {
		t.Fatalf("only %d JSON bodies found: the walk is broken", bodies)
	}
}

// TestOpenAPIQuarantineRestoreValidates gives the one route the main walk
// cannot answer with a 2xx a damaged file: a segment whose checksum an
// outsider changed with the sqlite3 CLI, quarantined when groups pop past
// it, then repaired by hand as an operator would and restored. Every
// reply on the way is checked against the document.
func TestOpenAPIQuarantineRestoreValidates(t *testing.T) {
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the sqlite3 CLI is required under CI")
		}
		t.Skip("sqlite3 CLI not installed")
	}
	sql := func(path, stmt string) {
		t.Helper()
		if out, err := exec.Command(sqlite3, path, stmt).CombinedOutput(); err != nil {
			t.Fatalf("sqlite3 %s: %v\n%s", stmt, err, out)
		}
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	// serve opens path and serves it until stop; not combtest.MustServer,
	// whose cleanup checks the file this test damages.
	serve := func() (*combtest.Server, func()) {
		b, err := broker.Open(ctx, broker.Options{Path: path, RetentionInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
		var once sync.Once
		stop := func() {
			once.Do(func() {
				b.Drain()
				ts.Close()
				if err := b.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
		}
		t.Cleanup(stop)
		return &combtest.Server{Client: &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}, Broker: b, HTTP: ts}, stop
	}
	srv, stop := serve()
	for s := range 3 { // three pushes, three segments: offsets 0-4, 5-9, 10-14
		items := []map[string]any{}
		for i := range 5 {
			items = append(items, map[string]any{"queue": "orders", "partition": "p1", "transactionId": fmt.Sprintf("m%d", s*5+i), "payload": i})
		}
		srv.Push(items...)
	}
	stop()
	sql(path, `UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 5`)

	check := newOpenAPICheck(t)
	srv, stop = serve()
	check.attach(srv)
	for _, g := range []string{"billing", "billing", "audit", "audit"} {
		srv.Pop("/api/v1/pop/queue/orders?batch=5&autoAck=true&consumerGroup=" + g)
	}
	if r := srv.Do("GET", "/api/v1/quarantine", nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"total":1`) {
		t.Fatalf("quarantine: %d %s", r.Status, r.Body)
	}
	if r := srv.Do("POST", "/api/v1/quarantine/1/restore", nil); r.Status != http.StatusConflict {
		t.Fatalf("restore of a copy still damaged: %d %s", r.Status, r.Body)
	}
	stop()

	sql(path, `UPDATE quarantined_segments SET checksum = checksum - 1 WHERE id = 1`)
	srv, _ = serve()
	check.attach(srv)
	if r := srv.Do("POST", "/api/v1/quarantine/1/restore", nil); r.Status != http.StatusOK {
		t.Fatalf("restore of the repaired copy: %d %s", r.Status, r.Body)
	}
	srv.Do("GET", "/api/v1/dlq?queue=orders", nil)
	if rt := "POST /api/v1/quarantine/:id/restore"; !check.ok[rt] {
		t.Fatalf("%s: no 2xx checked", rt)
	}
}
