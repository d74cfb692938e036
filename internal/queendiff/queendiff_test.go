// Package queendiff_test sends the same request sequences to a real Queen
// and to comb and compares what comes back: status codes and the shape of
// every reply (keys and value types, recursively; string values once ids
// and times are normalised; booleans by value). Every difference it finds
// must be one of the documented ones below, which docs/wire.md lists in
// "Where comb differs from Queen", and every documented one must still be
// found, so that page stays true.
//
// QUEENDIFF_DUMP=1 logs both replies of every step, to see what a new
// difference is.
package queendiff_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/internal/queentest"
)

// step is one request. Its path and body may hold {name} placeholders: {q}
// is the sequence's queue, {g} its consumer group, anything else a value an
// earlier step saved from that same side's reply.
type step struct {
	what   string // unique within its sequence
	method string
	path   string
	body   string
	// save maps a placeholder to where its value is in the reply: keys and
	// array indexes joined by dots ("messages.0.leaseId").
	save map[string]string
	// loose marks a listing of the whole broker (every group, every queue,
	// a time series): its arrays are compared as the union of their
	// elements' shapes, whatever their lengths and order, and its strings
	// and booleans by type only, since they describe state the other
	// sequences and the clock left behind.
	loose bool
	// setup marks a request that only brings both brokers to the same
	// state; its replies are not compared.
	setup bool
}

// sequence is a run of steps against one fresh queue.
type sequence struct {
	name  string
	steps []step
}

func get(what, path string, save ...string) step {
	return step{what: what, method: "GET", path: path, save: saves(save)}
}

func post(what, path, body string, save ...string) step {
	return step{what: what, method: "POST", path: path, body: body, save: saves(save)}
}

func del(what, path string) step {
	return step{what: what, method: "DELETE", path: path}
}

// listing is a get whose reply describes the whole broker.
func listing(what, path string) step {
	return step{what: what, method: "GET", path: path, loose: true}
}

// refresh asks Queen to recompute the statistics its dashboard routes read
// (comb computes them on every read), so that both describe the same state.
var refresh = step{what: "stats-refresh", method: "POST", path: "/api/v1/stats/refresh", body: "{}", setup: true}

// saves reads "name=path" pairs.
func saves(kv []string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		m[k] = v
	}
	return m
}

// sequences is the table of request sequences: every route of the wire
// Queen's clients use to produce and consume, in the states that matter
// (found, empty, unknown, refused).
var sequences = []sequence{
	{"configure", []step{
		post("plain", "/api/v1/configure", `{"queue":"{q}"}`),
		post("options", "/api/v1/configure", `{"queue":"{q}","namespace":"billing","task":"invoice","options":{"leaseTime":60,"retryLimit":5,"priority":10,"maxSize":1000,"delayedProcessing":0,"windowBuffer":0,"retentionSeconds":0,"completedRetentionSeconds":0,"encryptionEnabled":false}}`),
		post("js-empty-name", "/api/v1/configure", `{"queue":"","options":{"leaseTime":300}}`),
		get("resources-queue", "/api/v1/resources/queues/{q}"),
		get("resources-unknown", "/api/v1/resources/queues/{q}-none"),
	}},
	{"push", []step{
		post("two-items", "/api/v1/push", `{"items":[{"queue":"{q}","payload":{"a":1},"transactionId":"t1"},{"queue":"{q}","partition":"p2","payload":{"a":2}}]}`),
		post("duplicate", "/api/v1/push", `{"items":[{"queue":"{q}","payload":{"a":1},"transactionId":"t1"}]}`),
		post("traced", "/api/v1/push", `{"items":[{"queue":"{q}","payload":null,"transactionId":"t2","traceId":"5b0bd7e4-9b8e-4b6a-9a43-2f4bb1f7c1d0"}]}`),
		post("no-items", "/api/v1/push", `{}`),
		post("no-queue", "/api/v1/push", `{"items":[{"payload":1}]}`),
	}},
	{"pop-queue", []step{
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","payload":1,"transactionId":"m1"},{"queue":"{q}","payload":2,"transactionId":"m2"},{"queue":"{q}","payload":3,"transactionId":"m3"}]}`),
		get("batch-2", "/api/v1/pop/queue/{q}?batch=2&wait=true&timeout=5000", "lease=leaseId", "pid=partitionId"),
		get("leased", "/api/v1/pop/queue/{q}?batch=2&wait=false"),
		post("ack", "/api/v1/ack", `{"transactionId":"m1","partitionId":"{pid}","leaseId":"{lease}","status":"completed","consumerGroup":null}`),
		post("ack-batch", "/api/v1/ack/batch", `{"acknowledgments":[{"transactionId":"m2","partitionId":"{pid}","leaseId":"{lease}","status":"completed"}],"consumerGroup":null}`),
		get("partition-route", "/api/v1/pop/queue/{q}/partition/Default?batch=5&wait=true&timeout=5000", "lease2=leaseId"),
		post("ack-last", "/api/v1/ack", `{"transactionId":"m3","partitionId":"{pid}","leaseId":"{lease2}","status":"completed"}`),
		get("drained", "/api/v1/pop/queue/{q}?wait=false"),
		get("unknown-queue", "/api/v1/pop/queue/{q}-none?wait=false"),
		post("ack-unknown", "/api/v1/ack", `{"transactionId":"nope","partitionId":"{pid}","status":"completed"}`),
		post("ack-stale-lease", "/api/v1/ack", `{"transactionId":"m3","partitionId":"{pid}","leaseId":"{lease}","status":"completed"}`),
		post("ack-no-partition", "/api/v1/ack", `{"transactionId":"m3","status":"completed"}`),
		post("push-more", "/api/v1/push", `{"items":[{"queue":"{q}","payload":4,"transactionId":"m4"}]}`),
		get("auto-ack", "/api/v1/pop/queue/{q}?wait=true&timeout=5000&autoAck=true"),
		get("after-auto-ack", "/api/v1/pop/queue/{q}?wait=false"),
	}},
	{"pop-group", []step{
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","payload":{"n":1},"transactionId":"m1"},{"queue":"{q}","payload":{"n":2},"transactionId":"m2"}]}`),
		get("group", "/api/v1/pop/queue/{q}?batch=10&wait=true&timeout=5000&consumerGroup={g}", "lease=leaseId", "pid=partitionId"),
		get("group-new", "/api/v1/pop/queue/{q}?batch=10&wait=false&consumerGroup={g}-new&subscriptionMode=new"),
		post("ack-batch", "/api/v1/ack/batch", `{"acknowledgments":[{"transactionId":"m1","partitionId":"{pid}","leaseId":"{lease}","status":"completed"},{"transactionId":"m2","partitionId":"{pid}","leaseId":"{lease}","status":"completed"}],"consumerGroup":"{g}"}`),
		get("group-drained", "/api/v1/pop/queue/{q}?batch=10&wait=false&consumerGroup={g}"),
		get("queue-mode-too", "/api/v1/pop/queue/{q}?batch=10&wait=true&timeout=5000", "qlease=leaseId"),
		get("multi-partition", "/api/v1/pop/queue/{q}?batch=10&wait=true&timeout=5000&consumerGroup={g}-multi&partitions=3"),
	}},
	{"failed-ack-dlq", []step{
		post("configure", "/api/v1/configure", `{"queue":"{q}","options":{"retryLimit":1}}`),
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","payload":{"bad":true},"transactionId":"m1"}]}`),
		get("first", "/api/v1/pop/queue/{q}?wait=true&timeout=5000", "lease=leaseId", "pid=partitionId"),
		post("fail-retry", "/api/v1/ack", `{"transactionId":"m1","partitionId":"{pid}","leaseId":"{lease}","status":"failed","error":"boom"}`),
		get("redelivered", "/api/v1/pop/queue/{q}?wait=true&timeout=5000", "lease2=leaseId"),
		post("fail-dlq", "/api/v1/ack", `{"transactionId":"m1","partitionId":"{pid}","leaseId":"{lease2}","status":"failed","error":"boom"}`),
		get("gone", "/api/v1/pop/queue/{q}?wait=false"),
		get("dlq", "/api/v1/dlq?queue={q}&limit=10&offset=0"),
		get("dlq-group", "/api/v1/dlq?queue={q}&consumerGroup=__QUEUE_MODE__"),
		get("dlq-empty", "/api/v1/dlq?queue={q}-none"),
		get("dlq-window", "/api/v1/dlq?queue={q}&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z&limit=5"),
		post("push-2", "/api/v1/push", `{"items":[{"queue":"{q}","payload":{"bad":2},"transactionId":"m2"},{"queue":"{q}","payload":{"bad":3},"transactionId":"m3"}]}`),
		get("pop-2", "/api/v1/pop/queue/{q}?wait=true&timeout=5000&batch=2", "lease3=leaseId"),
		post("ack-dlq-now", "/api/v1/ack", `{"transactionId":"m2","partitionId":"{pid}","leaseId":"{lease3}","status":"dlq","error":"poison"}`),
		post("ack-retry", "/api/v1/ack", `{"transactionId":"m3","partitionId":"{pid}","leaseId":"{lease3}","status":"retry"}`),
		get("dlq-after", "/api/v1/dlq?queue={q}"),
		get("messages-dead", "/api/v1/messages?queue={q}&status=dead_letter"),
	}},
	{"transaction", []step{
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","payload":{"step":1},"transactionId":"m1"}]}`),
		get("pop", "/api/v1/pop/queue/{q}?wait=true&timeout=5000", "lease=leaseId", "pid=partitionId"),
		post("ack-and-push", "/api/v1/transaction", `{"operations":[{"type":"ack","transactionId":"m1","partitionId":"{pid}","status":"completed","consumerGroup":null},{"type":"push","items":[{"queue":"{q}-out","payload":{"step":2},"transactionId":"o1"}]}],"requiredLeases":["{lease}"]}`),
		get("pop-output", "/api/v1/pop/queue/{q}-out?wait=true&timeout=5000"),
		post("unknown-message", "/api/v1/transaction", `{"operations":[{"type":"ack","transactionId":"nope","partitionId":"{pid}","status":"completed"}],"requiredLeases":[]}`),
	}},
	{"lease", []step{
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","payload":{},"transactionId":"m1"}]}`),
		get("pop", "/api/v1/pop/queue/{q}?wait=true&timeout=5000", "lease=leaseId"),
		post("extend", "/api/v1/lease/{lease}/extend", `{"seconds":60}`),
		post("extend-unknown", "/api/v1/lease/0196a1a4-0000-7000-8000-000000000000/extend", `{"seconds":60}`),
		post("extend-sdk", "/api/v1/lease/{lease}/extend", `{}`),
	}},
	{"groups", []step{
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","partition":"a","payload":1,"transactionId":"m1"},{"queue":"{q}","partition":"b","payload":2,"transactionId":"m2"}]}`),
		get("pop", "/api/v1/pop/queue/{q}/partition/a?wait=true&timeout=5000&consumerGroup={g}", "lease=leaseId", "pid=partitionId"),
		post("ack", "/api/v1/ack", `{"transactionId":"m1","partitionId":"{pid}","leaseId":"{lease}","status":"completed","consumerGroup":"{g}"}`),
		refresh,
		listing("list", "/api/v1/consumer-groups"),
		// Which partitions lag by more than N seconds depends on the clock
		// of each run; an hour keeps both listings to the same (empty) set.
		listing("lagging", "/api/v1/consumer-groups/lagging?minLagSeconds=3600"),
		get("one", "/api/v1/consumer-groups/{g}"),
		get("unknown", "/api/v1/consumer-groups/{g}-none"),
		post("subscription", "/api/v1/consumer-groups/{g}/subscription", `{"subscriptionTimestamp":"2026-01-01T00:00:00Z"}`),
		post("subscription-missing", "/api/v1/consumer-groups/{g}/subscription", `{}`),
		del("delete-queue", "/api/v1/consumer-groups/{g}/queues/{q}?deleteMetadata=true"),
		del("delete", "/api/v1/consumer-groups/{g}?deleteMetadata=true"),
		del("delete-unknown", "/api/v1/consumer-groups/{g}-none"),
	}},
	{"seek", []step{
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","payload":1,"transactionId":"m1"},{"queue":"{q}","payload":2,"transactionId":"m2"}]}`),
		get("pop", "/api/v1/pop/queue/{q}?wait=true&timeout=5000&batch=10&consumerGroup={g}"),
		post("to-end", "/api/v1/consumer-groups/{g}/queues/{q}/seek", `{"toEnd":true}`),
		get("after-end", "/api/v1/pop/queue/{q}?wait=false&consumerGroup={g}"),
		post("to-time", "/api/v1/consumer-groups/{g}/queues/{q}/seek", `{"timestamp":"2000-01-01T00:00:00Z"}`),
		get("after-rewind", "/api/v1/pop/queue/{q}?wait=true&timeout=5000&batch=10&consumerGroup={g}"),
		post("neither", "/api/v1/consumer-groups/{g}/queues/{q}/seek", `{}`),
		post("unknown-queue", "/api/v1/consumer-groups/{g}/queues/{q}-none/seek", `{"toEnd":true}`),
		post("partition", "/api/v1/consumer-groups/{g}/queues/{q}/partitions/Default/seek", `{"toEnd":true}`),
		post("partition-unknown", "/api/v1/consumer-groups/{g}/queues/{q}/partitions/none/seek", `{"toEnd":true}`),
	}},
	{"messages", []step{
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","payload":{"k":"v"},"transactionId":"m1"}]}`, "pid=0.partition_id"),
		get("list", "/api/v1/messages?queue={q}"),
		get("list-pending", "/api/v1/messages?queue={q}&status=pending&limit=10"),
		get("one", "/api/v1/messages/{pid}/m1"),
		get("unknown", "/api/v1/messages/{pid}/nope"),
		del("delete", "/api/v1/messages/{pid}/m1"),
		del("delete-again", "/api/v1/messages/{pid}/m1"),
	}},
	{"status", []step{
		post("push", "/api/v1/push", `{"items":[{"queue":"{q}","payload":1,"transactionId":"m1"}]}`),
		refresh,
		listing("overview", "/api/v1/status?queue={q}"),
		listing("queues", "/api/v1/status/queues"),
		get("queue", "/api/v1/status/queues/{q}"),
		get("queue-unknown", "/api/v1/status/queues/{q}-none"),
		get("queue-messages", "/api/v1/status/queues/{q}/messages"),
	}},
	// A state key as long as Queen's primary key on it stores whatever its
	// bytes, and one past it (broker.MaxStateKeyBytes).
	{"stream-keys", []step{
		post("register", "/streams/v1/queries", `{"name":"{q}","source_queue":"{q}","config_hash":"h1","reset":false}`, "qid=query_id"),
		post("key-at-bound", "/streams/v1/cycle", stateKeyCycle(2660)),
		post("key-past-bound", "/streams/v1/cycle", stateKeyCycle(2700)),
	}},
	// A query's name as long as Queen's unique index on it holds, and one
	// past it; a source queue longer than any queue name and a config hash
	// past the name's bound, which Queen stores and comb refuses
	// (broker.StreamRegister).
	{"stream-register-bounds", []step{
		post("name-at-bound", "/streams/v1/queries", registerBody(incompressible(2660), "{q}", "h1")),
		post("name-past-bound", "/streams/v1/queries", registerBody(incompressible(2700), "{q}", "h1")),
		post("source-past-bound", "/streams/v1/queries", registerBody("{q}-source", strings.Repeat("s", 256), "h1")),
		post("hash-past-bound", "/streams/v1/queries", registerBody("{q}-hash", "{q}", strings.Repeat("h", 2661))),
	}},
}

// registerBody is a registration of a streaming query.
func registerBody(name, source, hash string) string {
	return `{"name":"` + name + `","source_queue":"` + source + `","config_hash":"` + hash + `","reset":false}`
}

// stateKeyCycle is a cycle body upserting one key of n letters that do not
// compress (PostgreSQL would store a longer key that does).
func stateKeyCycle(n int) string {
	return `{"query_id":"{qid}","partition_id":"6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e","state_ops":[{"type":"upsert","key":"` +
		incompressible(n) + `","value":{}}]}`
}

// incompressible is n letters that do not compress, the same every time.
func incompressible(n int) string {
	key := make([]byte, n)
	x := uint32(2463534242)
	for i := range key {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		key[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[x%52]
	}
	return string(key)
}

// side is one broker under test and the values saved from its replies.
type side struct {
	name string
	c    *combtest.Client
	vars map[string]string
}

// reply is one answer: its status and, when the body is JSON, its value.
type reply struct {
	status int
	raw    []byte
	v      any
	isJSON bool
}

func (s *side) do(t *testing.T, seq sequence, st step) reply {
	t.Helper()
	path := s.fill(t, st.path)
	var body any
	if st.body != "" {
		body = s.fill(t, st.body)
	}
	r := s.c.Do(st.method, path, body)
	out := reply{status: r.Status, raw: r.Body}
	if len(r.Body) > 0 {
		d := json.NewDecoder(strings.NewReader(string(r.Body)))
		d.UseNumber()
		if err := d.Decode(&out.v); err == nil {
			out.isJSON = true
		}
	}
	for name, at := range st.save {
		v, ok := lookup(out.v, at)
		str, isStr := v.(string)
		if !ok || !isStr {
			t.Fatalf("%s %s/%s: no string at %q to save as {%s}: %d %s", s.name, seq.name, st.what, at, name, r.Status, r.Body)
		}
		s.vars[name] = str
	}
	return out
}

var placeholder = regexp.MustCompile(`\{[a-z0-9]+\}`)

func (s *side) fill(t *testing.T, tmpl string) string {
	t.Helper()
	return placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		v, ok := s.vars[m[1:len(m)-1]]
		if !ok {
			t.Fatalf("%s: no value for %s in %q", s.name, m, tmpl)
		}
		return v
	})
}

func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// routes are the routes the sequences call, as comb's route table names
// them; differences are keyed by these, so one documented difference
// covers every step that calls its route. The first match wins.
var routes = []string{
	"POST /api/v1/configure",
	"POST /api/v1/push",
	"GET /api/v1/pop/queue/:queue",
	"GET /api/v1/pop/queue/:queue/partition/:partition",
	"POST /api/v1/ack",
	"POST /api/v1/ack/batch",
	"POST /api/v1/transaction",
	"POST /api/v1/lease/:leaseId/extend",
	"GET /api/v1/consumer-groups",
	"GET /api/v1/consumer-groups/lagging",
	"GET /api/v1/consumer-groups/:group",
	"POST /api/v1/consumer-groups/:group/subscription",
	"POST /api/v1/consumer-groups/:group/queues/:queue/seek",
	"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek",
	"DELETE /api/v1/consumer-groups/:group",
	"DELETE /api/v1/consumer-groups/:group/queues/:queue",
	"GET /api/v1/dlq",
	"GET /api/v1/resources/queues/:queue",
	"GET /api/v1/messages",
	"GET /api/v1/messages/:partitionId/:transactionId",
	"DELETE /api/v1/messages/:partitionId/:transactionId",
	"GET /api/v1/status",
	"GET /api/v1/status/queues",
	"GET /api/v1/status/queues/:queue",
	"GET /api/v1/status/queues/:queue/messages",
	"POST /api/v1/stats/refresh",
	"POST /streams/v1/queries",
	"POST /streams/v1/cycle",
}

// route names the route a step calls, from routes; "" if none.
func route(st step) string {
	p, _, _ := strings.Cut(st.path, "?")
	segs := strings.Split(p, "/")
	for _, r := range routes {
		method, tmpl, _ := strings.Cut(r, " ")
		ts := strings.Split(tmpl, "/")
		if method != st.method || len(ts) != len(segs) {
			continue
		}
		ok := true
		for i := range ts {
			if !strings.HasPrefix(ts[i], ":") && ts[i] != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return ""
}

var (
	uuidShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	timeShape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$`)
)

// norm is what a string is compared as: ids and times, which differ between
// any two brokers, by their shape only.
func norm(s string) string {
	switch {
	case uuidShape.MatchString(s):
		return "<uuid>"
	case timeShape.MatchString(s):
		return "<time>"
	}
	return s
}

// mixed is, in a loose comparison, the shape of values of several kinds
// found at one place: their kinds, sorted.
type mixed []string

func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case mixed:
		return strings.Join(x, "|")
	}
	return fmt.Sprintf("%T", v)
}

// merge folds two values into one shape: objects key by key, arrays by
// concatenation, values of different kinds into a mixed.
func merge(a, b any) any {
	ka, kb := kind(a), kind(b)
	if ka == kb {
		switch x := a.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, v := range x {
				out[k] = v
			}
			for k, v := range b.(map[string]any) {
				if w, ok := out[k]; ok {
					out[k] = merge(w, v)
				} else {
					out[k] = v
				}
			}
			return out
		case []any:
			return append(append([]any{}, x...), b.([]any)...)
		}
		return a
	}
	set := map[string]bool{}
	for _, k := range append(strings.Split(ka, "|"), strings.Split(kb, "|")...) {
		set[k] = true
	}
	out := mixed{}
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// summary is a reply's top level in a few words: "empty", "object{a,b}",
// "array[3]", or a scalar's kind.
func summary(r reply) string {
	if len(r.raw) == 0 {
		return "empty"
	}
	if !r.isJSON {
		return "non-JSON"
	}
	switch x := r.v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "object{" + strings.Join(keys, ",") + "}"
	case []any:
		return "array"
	}
	return kind(r.v)
}

// errorText is the top-level "error" of an object reply, if it has one.
func errorText(r reply) (string, bool) {
	m, ok := r.v.(map[string]any)
	if !ok {
		return "", false
	}
	e, ok := m["error"].(string)
	return e, ok
}

// compare returns the differences between Queen's value q and comb's c at
// path at, each as "at: what". values says whether strings and booleans
// are compared by value (after norm) or by type only; loose, whether
// arrays are compared element by element or as the union of their
// elements.
func compare(at string, q, c any, values, loose bool) []string {
	if kq, kc := kind(q), kind(c); kq != kc {
		return []string{fmt.Sprintf("%s: queen %s, comb %s", at, kq, kc)}
	}
	var out []string
	switch x := q.(type) {
	case bool:
		if values && x != c.(bool) {
			out = append(out, fmt.Sprintf("%s: queen %v, comb %v", at, x, c))
		}
	case string:
		if nq, nc := norm(x), norm(c.(string)); values && nq != nc {
			out = append(out, fmt.Sprintf("%s: queen %q, comb %q", at, nq, nc))
		}
	case []any:
		y := c.([]any)
		if loose {
			if len(x) > 0 && len(y) > 0 {
				out = append(out, compare(at+"[]", fold(x), fold(y), values, loose)...)
			}
			break
		}
		if len(x) != len(y) {
			out = append(out, fmt.Sprintf("%s: queen %d items, comb %d", at, len(x), len(y)))
		}
		for i := 0; i < min(len(x), len(y)); i++ {
			out = append(out, compare(at+"[]", x[i], y[i], values, loose)...)
		}
	case map[string]any:
		y := c.(map[string]any)
		for k, v := range x {
			w, ok := y[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: only queen", at, k))
				continue
			}
			out = append(out, compare(at+"."+k, v, w, values, loose)...)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: only comb", at, k))
			}
		}
	}
	return out
}

func fold(xs []any) any {
	v := xs[0]
	for _, x := range xs[1:] {
		v = merge(v, x)
	}
	return v
}

// differences compares one step's two replies. A status that differs is
// one difference, with both tops; the bodies of such replies are not
// compared further, as they answer different things.
func differences(st step, q, c reply) []string {
	r := route(st)
	var out []string
	if q.status != c.status {
		out = append(out, fmt.Sprintf("%s status: queen %d %s, comb %d %s", r, q.status, summary(q), c.status, summary(c)))
		// Two successes must still agree on the body; a success and a
		// refusal answer different things.
		if q.status >= 300 || c.status >= 300 {
			return out
		}
	}
	if !q.isJSON || !c.isJSON {
		if sq, sc := summary(q), summary(c); sq != sc && len(out) == 0 {
			out = append(out, fmt.Sprintf("%s body: queen %s, comb %s", r, sq, sc))
		}
		return out
	}
	// Error texts of refusals are only ever shown, never parsed, by the
	// SDKs: a refusal is compared by its status and shape.
	values := !st.loose && q.status < 300
	// One answering with an error where the other answered: that is the
	// difference, not every key of the two.
	eq, errQ := errorText(q)
	ec, errC := errorText(c)
	switch {
	case errQ && !errC:
		return append(out, fmt.Sprintf("%s outcome: queen error %q, comb %s", r, eq, summary(c)))
	case errC && !errQ:
		return append(out, fmt.Sprintf("%s outcome: queen %s, comb error %q", r, summary(q), ec))
	}
	for _, d := range compare("$", q.v, c.v, values, st.loose) {
		out = append(out, r+" "+d)
	}
	return out
}

// known is a difference comb keeps on purpose.
type known struct {
	// diff is the difference as the test words it; a trailing "*" stands
	// for anything, so one entry can cover a whole reply.
	diff   string
	reason string
}

func (k known) matches(d string) bool {
	if p, ok := strings.CutSuffix(k.diff, "*"); ok {
		return strings.HasPrefix(d, p)
	}
	return d == k.diff
}

// documented is every difference comb keeps, with its reason: the table
// "Where comb differs from Queen" in docs/wire.md, one line per
// difference. The test fails on a difference not listed here, and on one
// listed here that is no longer seen.
var documented = []known{
	// Status codes.
	{"POST /api/v1/push status: queen 200 array, comb 201 array",
		"a push creates messages; the SDKs accept any 2xx, comb's tests and forwarders older than this page expect 201"},
	{"GET /api/v1/pop/queue/:queue status: queen 200 object{error,messages,success}, comb 204 empty",
		"nothing to deliver is 204 with no body (docs/wire.md, Conventions); the SDKs read both as no messages"},
	{"GET /api/v1/pop/queue/:queue status: queen 200 object{consumerGroup,leaseId,messages,partition,partitionId,partitionsClaimed,queue,success}, comb 204 empty",
		"a group's first pop under subscriptionMode=new: Queen claims a lease over no messages, comb holds none and answers 204"},
	{"GET /api/v1/messages/:partitionId/:transactionId status: queen 200 object{error}, comb 404 object{error}",
		"not found is 404 in comb; the SDKs surface the error either way"},
	{"GET /api/v1/status/queues/:queue status: queen 200 object{error}, comb 404 object{error}",
		"not found is 404 in comb"},
	{"GET /api/v1/resources/queues/:queue status: queen 200 object{error}, comb 404 object{error}",
		"not found is 404 in comb"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek status: queen 200 object{error,success}, comb 404 object{error,success}",
		"not found is 404 in comb"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/seek status: queen 200 object{consumerGroup,partitionsUpdated,queueName,seekToEnd,success,targetTimestamp}, comb 404 object{consumerGroup,error,partitionsUpdated,queueName,success}",
		"a seek on a queue comb does not know is refused (docs/snapshots.md); Queen reports success having moved nothing"},

	// Queen fails where comb answers.
	{`POST /api/v1/configure outcome: queen error "[json.exception.type_error.306] cannot use value() with null", comb object{configured,namespace,options,partitionId,queue,queueId,task}`,
		"Queen cannot configure a queue without an options object; comb applies the defaults"},

	// Keys comb adds.
	{"POST /api/v1/push $[].transactionId: only comb",
		"the camelCase twin of transaction_id, which the Go SDK copies back when present"},
	{"POST /api/v1/push $[].partition_id: only comb", "a duplicate names the original's partition, as a queued item does"},
	{"POST /api/v1/push $[].trace_id: only comb", "a duplicate carries the original's trace, as a queued item does"},
	{"GET /api/v1/pop/queue/:queue $.messages[].queue: only comb", "the SDKs read a message's queue when present"},
	{"GET /api/v1/pop/queue/:queue $.messages[].retryCount: only comb", "the SDKs read a message's retryCount when present"},
	{"GET /api/v1/pop/queue/:queue/partition/:partition $.messages[].queue: only comb", "as on the wildcard pop"},
	{"GET /api/v1/pop/queue/:queue/partition/:partition $.messages[].retryCount: only comb", "as on the wildcard pop"},
	{"GET /api/v1/dlq $.total: only comb", "the Go SDK reads total"},
	{"GET /api/v1/dlq $.limit: only comb", "the page, also at the top level"},
	{"GET /api/v1/dlq $.offset: only comb", "the page, also at the top level"},
	{"GET /api/v1/dlq $.messages[].traceId: only comb", "the dead letter's trace, kept with its copy"},
	{"GET /api/v1/consumer-groups $[].partitionCursors: only comb", "the cursor count, members being kept for compatibility"},
	{"GET /api/v1/consumer-groups $[].storage: only comb", "how the group's data is kept"},
	{"GET /api/v1/consumer-groups/:group $.qd-groups.partitions[].partitionId: only comb", "the partition's id, for a seek"},
	{"GET /api/v1/consumer-groups/:group $.qd-groups.partitions[].committedOffset: only comb", "the cursor itself"},
	{"GET /api/v1/consumer-groups/:group $.qd-groups.partitions[].lastOffset: only comb", "the partition's last offset"},
	{"GET /api/v1/consumer-groups/:group $.qd-groups.partitions[].logStart: only comb", "the oldest retained offset"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/seek $.partitions: only comb", "what the seek did to each partition (docs/snapshots.md)"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/seek $.clamped: only comb", "whether the target lay before the retained data"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/seek $.framesEvicted: only comb", "data retention had dropped"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/seek $.totals: only comb", "the seek summed over every partition, listed or not"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek $.partitions: only comb", "as on the queue seek"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek $.clamped: only comb", "as on the queue seek"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek $.framesEvicted: only comb", "as on the queue seek"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek $.totals: only comb", "as on the queue seek"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek $.seekToEnd: only comb", "as on the queue seek"},
	{"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek $.targetTimestamp: only comb", "as on the queue seek"},

	// Keys Queen has and comb does not.
	{"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek $.cursorMovedTo: only queen",
		"the time of the message the cursor landed on; comb's seek is by offset and reports it in partitions; no SDK reads it"},

	// Same key, other value or type.
	{"GET /api/v1/consumer-groups $[].totalLag: queen null, comb number", "comb counts the lag; Queen's listing leaves it null"},
	{"GET /api/v1/consumer-groups $[].subscriptionMode: queen null|string, comb null", "comb keeps no subscription record to echo here; Queen fills them for groups that named a mode"},
	{"GET /api/v1/consumer-groups $[].subscriptionTimestamp: queen null|string, comb null", "as subscriptionMode"},
	{"GET /api/v1/consumer-groups $[].subscriptionCreatedAt: queen null|string, comb null", "as subscriptionMode"},
	{"GET /api/v1/consumer-groups/:group $.qd-groups.partitions: queen 1 items, comb 2",
		"a group's first pop gives it a cursor on every partition, so comb lists those it has not consumed yet"},
	{"GET /api/v1/consumer-groups/:group body: queen empty, comb object{}", "a group without cursors is {}: Queen sends no body at all"},
	{"GET /api/v1/consumer-groups/lagging body: queen empty, comb array", "no lagging partitions is []: Queen sends no body at all"},
	{"GET /api/v1/messages $.messages[].queueStatus: queen string, comb null", "no queue-mode consumer, no queue-mode status"},
	{"GET /api/v1/messages/:partitionId/:transactionId $.retryCount: queen null, comb number", "comb reports the retries charged so far; Queen only a dead letter's"},
	{"GET /api/v1/status/queues/:queue $.partitions[].lastActivity: queen null, comb string", "comb counts a push as activity, Queen only consumption"},
	{"GET /api/v1/status $*", "comb's dashboard summary has its own shape, read by comb's console; the SDKs pass it through"},

	// The ack and transaction rules (docs/wire.md, Acks).
	{"POST /api/v1/ack $[].leaseReleased: queen false, comb true",
		"a failed ack that dead-letters the last message of a batch ends the batch, so comb releases the lease"},
	{"POST /api/v1/ack $[].queueName: queen string, comb null", "an ack of an unknown message names no queue in comb"},
	{"POST /api/v1/ack $[].partitionName: queen string, comb null", "as queueName"},
	{"POST /streams/v1/cycle $.error: queen \"index row size*",
		"a state key past what Queen's primary key holds: comb refuses it by its length, Queen by PostgreSQL's index error"},
	{"POST /streams/v1/cycle $.queueName: only queen",
		"a cycle PostgreSQL failed: Queen's body carries queueName, which its own refusals (a stale lease) do not; comb's refusals are all of STREAMS.md's shape"},
	{"POST /streams/v1/cycle $.queueName: queen null, comb string",
		"comb names the registered source queue before it exists; Queen only an existing one (no SDK reads it)"},
	{"POST /streams/v1/queries status: queen 200 object{error,success}, comb 400 object{error}",
		"a query name past what Queen's unique index on it holds: comb refuses it by its length with a 400, Queen answers 200 with PostgreSQL's index error"},
	{"POST /streams/v1/queries status: queen 200 object{config_hash,fresh,name,query_id,reset,success}, comb 400 object{error}",
		"a source queue longer than any queue name, or a config hash past the name's bound: Queen stores a megabyte of either, comb refuses them"},
	{"POST /api/v1/transaction $.results: queen 1 items, comb 0",
		"a failed transaction: Queen lists the step results up to the failing one, comb none; both name the failure in error"},
}

func TestQueenDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and Queen")
	}
	start := time.Now()
	q := queentest.Start(t)
	comb := combtest.MustServer(t, combtest.Options{})
	t.Logf("queen up in %v", time.Since(start).Round(time.Millisecond))

	dump := os.Getenv("QUEENDIFF_DUMP") != ""
	found := map[string][]string{} // difference -> steps showing it
	steps := 0
	for _, seq := range sequences {
		steps += len(seq.steps)
		vars := map[string]string{"q": "qd-" + seq.name, "g": "g-" + seq.name}
		queen := &side{name: "queen", c: &combtest.Client{TB: t, URL: q.URL, HTTP: &http.Client{Timeout: time.Minute}}, vars: maps.Clone(vars)}
		mine := &side{name: "comb", c: comb.Client, vars: maps.Clone(vars)}
		for _, st := range seq.steps {
			rq := queen.do(t, seq, st)
			rc := mine.do(t, seq, st)
			if st.setup {
				continue
			}
			if dump {
				t.Logf("%s/%s %s\n  queen %d %s\n  comb  %d %s", seq.name, st.what, route(st), rq.status, rq.raw, rc.status, rc.raw)
			}
			for _, d := range differences(st, rq, rc) {
				found[d] = append(found[d], seq.name+"/"+st.what)
			}
		}
	}

	keys := make([]string, 0, len(found))
	for d := range found {
		keys = append(keys, d)
	}
	sort.Strings(keys)
	for _, d := range keys {
		if !slices.ContainsFunc(documented, func(k known) bool { return k.matches(d) }) {
			t.Errorf("undocumented difference (fix comb, or document it here and in docs/wire.md): %s\n  seen in %s", d, strings.Join(found[d], ", "))
		}
	}
	for _, k := range documented {
		if !slices.ContainsFunc(keys, k.matches) {
			t.Errorf("documented difference no longer seen (drop it here and in docs/wire.md): %s", k.diff)
		}
	}
	t.Logf("%d sequences, %d steps, %d differences, in %v", len(sequences), steps, len(keys), time.Since(start).Round(time.Millisecond))
}

// The table itself: every step calls a route of routes under a name of
// its own, and every documented difference is listed once. No Queen needed.
func TestQueenDifferentialTable(t *testing.T) {
	for _, seq := range sequences {
		seen := map[string]bool{}
		for _, st := range seq.steps {
			if route(st) == "" {
				t.Errorf("%s/%s: %s %s is in no route of the table", seq.name, st.what, st.method, st.path)
			}
			if seen[st.what] && !st.setup {
				t.Errorf("%s/%s: two steps of that name", seq.name, st.what)
			}
			seen[st.what] = true
		}
	}
	seen := map[string]bool{}
	for _, k := range documented {
		if seen[k.diff] || k.reason == "" {
			t.Errorf("documented twice or without a reason: %s", k.diff)
		}
		seen[k.diff] = true
	}
}
