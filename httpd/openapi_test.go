package httpd_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

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

// validating is a transport that checks every reply against the document
// and records which operations were seen.
type validating struct {
	t    *testing.T
	v    validator.Validator
	next http.RoundTripper
	mu   sync.Mutex
	seen map[string]bool // "METHOD /openapi/path"
}

func (vt *validating) RoundTrip(req *http.Request) (*http.Response, error) {
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
	vt.mu.Lock()
	defer vt.mu.Unlock()
	rt := matchRoute(req.Method, req.URL.Path)
	if _, served := httpd.RouteLevels()[rt]; !served {
		// Not a route: the document does not describe what is not served.
		return resp, nil
	}
	vt.seen[rt] = true
	ok, errs := vt.v.ValidateHttpResponse(req, &check)
	if !ok {
		for _, e := range errs {
			vt.t.Errorf("%s %s -> %d %.200s: %s: %s %v", req.Method, req.URL.Path, resp.StatusCode, body, e.Message, e.Reason, e.SchemaValidationErrors)
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
// and bad input, and checks each reply against the document.
func TestOpenAPIRepliesValidate(t *testing.T) {
	doc, err := libopenapi.NewDocument(httpd.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	srv := combtest.MustServer(t, combtest.Options{})
	vt := &validating{t: t, v: v, next: srv.HTTP.Client().Transport, seen: map[string]bool{}}
	srv.Client.HTTP = &http.Client{Transport: vt}
	do := func(method, path string, body any, want ...int) *combtest.Response {
		t.Helper()
		r := srv.Do(method, path, body)
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
	do("POST", "/api/v1/consumer-groups/workers/subscription", map[string]any{"subscriptionTimestamp": "2026-01-01T00:00:00Z"}, 200)
	do("POST", "/api/v1/consumer-groups/workers/subscription", map[string]any{}, 400)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/snapshots", map[string]any{"name": "snap1"})
	do("POST", "/api/v1/snapshots", map[string]any{"name": "snap2", "group": "workers", "queue": "orders"})
	do("POST", "/api/v1/snapshots", "{", 400)
	do("GET", "/api/v1/snapshots", nil, 200)
	do("GET", "/api/v1/snapshots/snap2", nil)
	do("GET", "/api/v1/snapshots/none", nil, 404)
	do("PUT", "/api/v1/snapshots/snap2", map[string]any{"description": "d"})
	do("DELETE", "/api/v1/snapshots/snap2", nil)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", map[string]any{"toEnd": true}, 200)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", map[string]any{}, 400)
	do("POST", "/api/v1/consumer-groups/workers/queues/nope/seek", map[string]any{"toEnd": true}, 404)
	do("POST", "/api/v1/consumer-groups/workers/queues/orders/partitions/Default/seek", nil, 200)
	do("DELETE", "/api/v1/consumer-groups/workers/queues/orders", nil, 200)
	do("DELETE", "/api/v1/consumer-groups/workers?deleteMetadata=true", nil, 200)

	do("GET", "/api/v1/dlq?queue=orders", nil, 200)
	do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "orders"})
	do("POST", "/api/v1/dlq/redrive", "[", 400)
	do("DELETE", "/api/v1/dlq?queue=nothing", nil)
	do("GET", "/api/v1/quarantine", nil, 200)
	do("POST", "/api/v1/quarantine/42/restore", nil)

	do("GET", "/api/v1/resources/overview", nil, 200)
	do("GET", "/api/v1/resources/queues", nil, 200)
	do("GET", "/api/v1/resources/queues/orders", nil, 200)
	do("GET", "/api/v1/resources/queues/nope", nil, 404)
	do("GET", "/api/v1/resources/namespaces", nil, 200)
	do("GET", "/api/v1/resources/tasks", nil, 200)
	do("DELETE", "/api/v1/resources/queues/next", nil, 200)
	do("GET", "/api/v1/messages?queue=orders", nil, 200)
	do("GET", "/api/v1/messages/"+m.PartitionID+"/t5", nil)
	do("GET", "/api/v1/messages/nope/nope", nil, 404)
	do("DELETE", "/api/v1/messages/"+m.PartitionID+"/t5", nil, 200)

	do("GET", "/api/v1/status", nil, 200)
	do("GET", "/api/v1/status/queues", nil, 200)
	do("GET", "/api/v1/status/queues/orders", nil, 200)
	do("GET", "/api/v1/status/queues/orders/messages", nil, 200)
	do("GET", "/api/v1/status/analytics", nil, 200)
	do("GET", "/api/v1/status/buffers", nil, 200)
	do("GET", "/api/v1/analytics/queue-lag", nil, 200)
	do("POST", "/api/v1/stats/refresh", nil, 200)
	do("GET", "/metrics", nil, 200)
	do("GET", "/metrics/prometheus", nil, 200)
	do("GET", "/api/v1/whoami", nil, 200)

	do("GET", "/api/v1/system/maintenance", nil, 200)
	do("POST", "/api/v1/system/maintenance", map[string]any{"enabled": false}, 200)
	do("POST", "/api/v1/system/maintenance", map[string]any{}, 400)
	do("GET", "/api/v1/system/maintenance/pop", nil, 200)
	do("POST", "/api/v1/system/maintenance/pop", map[string]any{"enabled": false}, 200)
	do("GET", "/api/v1/system/shared-state", nil, 200)
	do("GET", "/api/v1/system/backup", nil, 200)

	q := do("POST", "/streams/v1/queries", map[string]any{"name": "q1", "source_queue": "orders", "config_hash": "h"}, 200)
	qid, _ := q.Map(t)["query_id"].(string)
	do("POST", "/streams/v1/state/get", map[string]any{"query_id": qid, "partition_id": m.PartitionID, "keys": []string{}}, 200)
	do("POST", "/streams/v1/cycle", map[string]any{"query_id": qid, "partition_id": m.PartitionID, "consumer_group": "streams.q1",
		"state_ops": []any{map[string]any{"type": "upsert", "key": "k", "value": 1}}, "release_lease": true})

	for _, p := range []string{"/api/v1/forwarders", "/api/v1/forwarders/f"} {
		do("GET", p, nil, 503)
	}
	do("POST", "/api/v1/forwarders", map[string]any{"name": "f"}, 503)
	do("DELETE", "/api/v1/forwarders/f", nil, 503)
	do("POST", "/api/v1/forwarders/f/pause", nil, 503)
	do("POST", "/api/v1/forwarders/f/resume", nil, 503)
	do("GET", "/api/v1/nothing-here", nil, 404)

	for rt := range httpd.RouteLevels() {
		if !vt.seen[rt] {
			t.Errorf("route %s was not exercised", rt)
		}
	}
}
