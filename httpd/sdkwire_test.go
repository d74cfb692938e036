package httpd_test

// Wire conformance with Queen's client SDKs. Every request below is the one
// the Go SDK (clients/client-go) or the JS SDK (clients/client-js/client-v2)
// puts on the wire for that call, byte for byte where the SDK fixes the
// bytes: its key order, its nulls, its omitted fields, its query-string
// order, its headers. Every assertion reads the reply the way that SDK reads
// it, with the JSON types it expects; a field the SDK ignores is not pinned.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	_ "github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// sdk sends requests as one SDK does.
type sdk struct {
	t    testing.TB
	base string
	http *http.Client
	js   bool // the JS SDK; otherwise the Go SDK
}

func goSDK(t testing.TB, s *combtest.Server) sdk {
	return sdk{t: t, base: s.URL, http: s.HTTP.Client()}
}
func jsSDK(t testing.TB, s *combtest.Server) sdk {
	return sdk{t: t, base: s.URL, http: s.HTTP.Client(), js: true}
}

type wireReply struct {
	status int
	header http.Header
	body   []byte
}

// send issues method path with body as is ("" = no body). Both SDKs send
// Content-Type: application/json on every request, GET and DELETE included;
// the Go SDK adds Accept: application/json.
func (c sdk) send(method, path, body string) wireReply {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if !c.js {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read %s %s: %v", method, path, err)
	}
	return wireReply{status: resp.StatusCode, header: resp.Header, body: data}
}

// goResult reads a reply as the Go SDK's HTTP client does: 4xx/5xx is an
// error, an empty body is nil, an object is itself, an array becomes
// {"data": [...]}, anything else {"raw": text}.
func (c sdk) goResult(r wireReply) map[string]any {
	c.t.Helper()
	if r.status >= 400 {
		c.t.Fatalf("Go SDK error: HTTP %d: %s", r.status, r.body)
	}
	if len(r.body) == 0 {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(r.body, &obj); err == nil {
		return obj
	}
	var arr []any
	if err := json.Unmarshal(r.body, &arr); err == nil {
		return map[string]any{"data": arr}
	}
	return map[string]any{"raw": string(r.body)}
}

// jsResult reads a reply as the JS SDK's HttpClient does: 204 is null, a
// non-2xx throws body.error, a JSON content type is parsed.
func (c sdk) jsResult(r wireReply) any {
	c.t.Helper()
	if r.status == http.StatusNoContent {
		if len(r.body) != 0 {
			c.t.Fatalf("204 with a body: %q", r.body)
		}
		return nil
	}
	if r.status < 200 || r.status > 299 {
		var e struct{ Error string }
		json.Unmarshal(r.body, &e)
		c.t.Fatalf("JS SDK throws: HTTP %d: %s", r.status, cmpOr(e.Error, string(r.body)))
	}
	if !strings.Contains(r.header.Get("Content-Type"), "application/json") {
		c.t.Fatalf("reply Content-Type %q is not JSON: the JS SDK falls back to parsing text", r.header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		c.t.Fatalf("reply is not JSON: %v: %q", err, r.body)
	}
	return v
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// jsObject is a JS result that must be an object.
func (c sdk) jsObject(r wireReply) map[string]any {
	c.t.Helper()
	v, ok := c.jsResult(r).(map[string]any)
	if !ok {
		c.t.Fatalf("reply is not an object: %s", r.body)
	}
	return v
}

// jsArray is a JS result that must be an array of objects.
func (c sdk) jsArray(r wireReply) []map[string]any {
	c.t.Helper()
	v, ok := c.jsResult(r).([]any)
	if !ok {
		c.t.Fatalf("reply is not an array: %s", r.body)
	}
	out := make([]map[string]any, len(v))
	for i, x := range v {
		if out[i], ok = x.(map[string]any); !ok {
			c.t.Fatalf("item %d is not an object: %s", i, r.body)
		}
	}
	return out
}

// sdkMessage is a delivered message with the fields the SDKs read.
type sdkMessage struct {
	TransactionID, PartitionID, LeaseID, Queue, Partition, CreatedAt, ID string
	Data                                                                 any
	RetryCount                                                           float64
	raw                                                                  map[string]any
}

// messages reads a pop reply's messages, failing on any field of a type
// the SDKs would drop: ids, names and createdAt are strings, retryCount a
// number, data present.
func (c sdk) messages(r wireReply) []sdkMessage {
	c.t.Helper()
	var res map[string]any
	if c.js {
		v := c.jsResult(r)
		if v == nil {
			return nil
		}
		res, _ = v.(map[string]any)
	} else {
		res = c.goResult(r)
	}
	if res == nil {
		return nil
	}
	raw, ok := res["messages"].([]any)
	if !ok {
		c.t.Fatalf("pop reply without a messages array: %s", r.body)
	}
	out := make([]sdkMessage, len(raw))
	for i, x := range raw {
		m, ok := x.(map[string]any)
		if !ok {
			c.t.Fatalf("message %d is not an object", i)
		}
		str := func(k string) string {
			s, ok := m[k].(string)
			if !ok {
				c.t.Fatalf("message %d: %s = %#v, want a string", i, k, m[k])
			}
			return s
		}
		rc, ok := m["retryCount"].(float64)
		if !ok {
			c.t.Fatalf("message %d: retryCount = %#v, want a number", i, m["retryCount"])
		}
		if _, ok := m["data"]; !ok {
			c.t.Fatalf("message %d has no data", i)
		}
		out[i] = sdkMessage{TransactionID: str("transactionId"), PartitionID: str("partitionId"), LeaseID: str("leaseId"),
			Queue: str("queue"), Partition: str("partition"), CreatedAt: str("createdAt"), ID: str("id"),
			Data: m["data"], RetryCount: rc, raw: m}
		if _, err := time.Parse(time.RFC3339Nano, out[i].CreatedAt); err != nil {
			c.t.Fatalf("message %d: createdAt %q: %v", i, out[i].CreatedAt, err)
		}
	}
	return out
}

// goData is a Go SDK message's Data: only a JSON object decodes.
func goData(t testing.TB, m sdkMessage) map[string]any {
	t.Helper()
	d, ok := m.Data.(map[string]any)
	if !ok {
		t.Fatalf("data %#v is not an object: the Go SDK leaves Message.Data nil", m.Data)
	}
	return d
}

// jsonStr quotes s as encoding/json does, HTML escapes included (the Go
// SDK marshals with the default encoder, so & < > go out as \u0026...).
func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func newTxnID() string { return uuid.Must(uuid.NewV7()).String() }

// goPushBody is the Go SDK's push body: queue, partition (always set,
// Default when unnamed), payload, a UUIDv7 transactionId; traceId omitted.
func goPushBody(queue, partition string, payloads ...string) string {
	var items []string
	for _, p := range payloads {
		items = append(items, fmt.Sprintf(`{"queue":%s,"partition":%s,"payload":%s,"transactionId":%s}`,
			jsonStr(queue), jsonStr(partition), p, jsonStr(newTxnID())))
	}
	return `{"items":[` + strings.Join(items, ",") + `]}`
}

// jsPushBody is the JS SDK's push body: the same four keys, partition
// 'Default' unless set, a UUIDv7 transactionId unless the item had one.
func jsPushBody(queue, partition string, payloads ...string) string {
	return goPushBody(queue, partition, payloads...)
}

// goPopPath is the Go SDK's Pop: url.Values.Encode sorts the keys, and
// batch, timeout and wait are always present.
func goPopPath(queue, partition string, extra url.Values, batch int, wait bool, timeout int) string {
	q := url.Values{}
	for k, v := range extra {
		q[k] = v
	}
	q.Set("batch", fmt.Sprint(batch))
	q.Set("wait", fmt.Sprint(wait))
	q.Set("timeout", fmt.Sprint(timeout))
	path := "/api/v1/pop"
	if queue != "" {
		path += "/queue/" + url.PathEscape(queue)
		if partition != "" && partition != "Default" {
			path += "/partition/" + url.PathEscape(partition)
		}
	}
	return path + "?" + q.Encode()
}

// jsPopPath is the JS SDK's pop(): the path is not escaped, and the query
// is batch, wait, timeout, then the optional keys in the SDK's order.
func jsPopPath(queue, partition string, batch int, wait bool, timeout int, kv ...string) string {
	path := "/api/v1/pop/queue/" + queue
	if partition != "" && partition != "Default" {
		path += "/partition/" + partition
	}
	q := fmt.Sprintf("batch=%d&wait=%t&timeout=%d", batch, wait, timeout)
	for i := 0; i+1 < len(kv); i += 2 {
		q += "&" + url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1])
	}
	return path + "?" + q
}

// goAckBody is the Go SDK's single ack: empty fields omitted.
func goAckBody(m sdkMessage, status, errMsg, group string) string {
	b := fmt.Sprintf(`{"transactionId":%s,"partitionId":%s`, jsonStr(m.TransactionID), jsonStr(m.PartitionID))
	if m.LeaseID != "" {
		b += `,"leaseId":` + jsonStr(m.LeaseID)
	}
	b += `,"status":` + jsonStr(status)
	if errMsg != "" {
		b += `,"error":` + jsonStr(errMsg)
	}
	if group != "" {
		b += `,"consumerGroup":` + jsonStr(group)
	}
	return b + "}"
}

// jsAckItem is one JS acknowledgment: error always present (null when
// none), leaseId last and only when the message has one.
func jsAckItem(m sdkMessage, status, errMsg string) string {
	b := fmt.Sprintf(`{"transactionId":%s,"partitionId":%s,"status":%s,"error":%s`,
		jsonStr(m.TransactionID), jsonStr(m.PartitionID), jsonStr(status), jsNull(errMsg))
	if m.LeaseID != "" {
		b += `,"leaseId":` + jsonStr(m.LeaseID)
	}
	return b + "}"
}

// jsAckBody is the JS SDK's single ack: consumerGroup null in queue mode.
func jsAckBody(m sdkMessage, status, errMsg, group string) string {
	b := fmt.Sprintf(`{"transactionId":%s,"partitionId":%s,"status":%s,"error":%s,"consumerGroup":%s`,
		jsonStr(m.TransactionID), jsonStr(m.PartitionID), jsonStr(status), jsNull(errMsg), jsNull(group))
	if m.LeaseID != "" {
		b += `,"leaseId":` + jsonStr(m.LeaseID)
	}
	return b + "}"
}

// jsAckBatchBody is the JS SDK's batch ack of msgs with one status.
func jsAckBatchBody(msgs []sdkMessage, status, errMsg, group string) string {
	items := make([]string, len(msgs))
	for i, m := range msgs {
		items[i] = jsAckItem(m, status, errMsg)
	}
	return `{"acknowledgments":[` + strings.Join(items, ",") + `],"consumerGroup":` + jsNull(group) + `}`
}

// goAckBatchBody is the Go SDK's batch ack: per-item consumerGroup never
// set, the top-level one omitted when empty.
func goAckBatchBody(msgs []sdkMessage, status, errMsg, group string) string {
	items := make([]string, len(msgs))
	for i, m := range msgs {
		items[i] = goAckBody(m, status, errMsg, "")
	}
	b := `{"acknowledgments":[` + strings.Join(items, ",") + `]`
	if group != "" {
		b += `,"consumerGroup":` + jsonStr(group)
	}
	return b + "}"
}

func jsNull(s string) string {
	if s == "" {
		return "null"
	}
	return jsonStr(s)
}

// jsAckResults reads an ack reply as the JS SDK does: an array with one
// item per acknowledgment sent, each success unless it says otherwise.
func (c sdk) jsAckResults(r wireReply, want int) []map[string]any {
	c.t.Helper()
	items := c.jsArray(r)
	if len(items) != want {
		c.t.Fatalf("ack reply has %d results, want %d: %s", len(items), want, r.body)
	}
	return items
}

// goAckFailures reads an ack reply as the Go SDK does and returns the
// per-item errors it would report.
func (c sdk) goAckFailures(r wireReply) []string {
	c.t.Helper()
	res := c.goResult(r)
	if e, ok := res["error"].(string); ok && e != "" {
		return []string{e}
	}
	var errs []string
	data, _ := res["data"].([]any)
	for _, x := range data {
		if m, ok := x.(map[string]any); ok {
			if e, ok := m["error"].(string); ok && e != "" {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

func mustStatus(t testing.TB, r wireReply, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
	}
}

func mustJSONEqual(t testing.TB, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("%s = %s, want %s", what, g, want)
	}
}

// --- Go SDK ----------------------------------------------------------------

// Queue(name).Create() without and with Config, then Delete(): queue_test.go.
func TestSDKGoCreateConfigureDelete(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	r := c.send("POST", "/api/v1/configure", `{"queue":"test-go-create-1"}`)
	mustStatus(t, r, http.StatusOK)
	if res := c.goResult(r); res["configured"] != true || res["queue"] != "test-go-create-1" {
		t.Fatalf("create = %v", res)
	}
	// QueueConfig fields are omitempty ints, marshalled through a map: sorted keys.
	r = c.send("POST", "/api/v1/configure", `{"queue":"test-go-configure-1","options":{"leaseTime":60,"maxSize":1000,"priority":10,"retryLimit":5}}`)
	mustStatus(t, r, http.StatusOK)
	res := c.goResult(r)
	opts, _ := res["options"].(map[string]any)
	if res["configured"] != true || opts["leaseTime"] != 60.0 || opts["retryLimit"] != 5.0 || opts["priority"] != 10.0 || opts["maxSize"] != 1000.0 {
		t.Fatalf("configure = %s", r.body)
	}
	// Delete(): DELETE with Content-Type and no body, name path-escaped.
	c.send("POST", "/api/v1/push", goPushBody("test-go-delete-1", "Default", `{"a":1}`))
	r = c.send("DELETE", "/api/v1/resources/queues/"+url.PathEscape("test-go-delete-1"), "")
	if r.status < 200 || r.status > 299 || c.goResult(r) == nil {
		t.Fatalf("delete = %d %s", r.status, r.body)
	}
	if msgs := c.messages(c.send("GET", goPopPath("test-go-delete-1", "", nil, 1, false, 30000), "")); len(msgs) != 0 {
		t.Fatalf("a deleted queue still delivers %d messages", len(msgs))
	}
}

// Push(...).Execute(): push_test.go. The SDK reads data[i].status, error
// and transactionId, and overwrites its own transactionId with the reply's.
func TestSDKGoPush(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	q := "test-go-push-1"
	c.send("POST", "/api/v1/configure", `{"queue":"`+q+`"}`)
	results := func(r wireReply) []map[string]any {
		t.Helper()
		mustStatus(t, r, http.StatusCreated)
		data, ok := c.goResult(r)["data"].([]any)
		if !ok {
			t.Fatalf("push reply is not an array: %s", r.body)
		}
		out := make([]map[string]any, len(data))
		for i, x := range data {
			out[i] = x.(map[string]any)
			if _, ok := out[i]["status"].(string); !ok {
				t.Fatalf("item %d status is not a string: %s", i, r.body)
			}
			if e, ok := out[i]["error"].(string); ok && e != "" {
				t.Fatalf("item %d carries error %q", i, e)
			}
		}
		return out
	}
	txn := newTxnID()
	body := fmt.Sprintf(`{"items":[{"queue":%q,"partition":"Default","payload":{"test":"data","timestamp":%d,"value":123},"transactionId":%q}]}`,
		q, time.Now().UnixNano(), txn)
	if res := results(c.send("POST", "/api/v1/push", body)); len(res) != 1 || res[0]["status"] != "queued" || res[0]["transactionId"] != txn {
		t.Fatalf("push = %v", res)
	}
	if res := results(c.send("POST", "/api/v1/push", body)); res[0]["status"] != "duplicate" || res[0]["transactionId"] != txn {
		t.Fatalf("same transactionId again = %v", res)
	}
	// Null and empty payloads, a ~1 MB one, three items, an unseen partition.
	for _, p := range []string{`null`, `{}`, `{"data":"` + strings.Repeat("x", 1<<20) + `"}`} {
		if res := results(c.send("POST", "/api/v1/push", goPushBody(q, "Default", p))); res[0]["status"] != "queued" {
			t.Fatalf("payload %.20s: %v", p, res)
		}
	}
	res := results(c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"index":0}`, `{"index":1}`, `{"index":2}`)))
	if len(res) != 3 || res[0]["status"] != "queued" || res[1]["status"] != "queued" || res[2]["status"] != "queued" {
		t.Fatalf("three items = %v", res)
	}
	if res := results(c.send("POST", "/api/v1/push", goPushBody(q, "custom-partition", `{"test":"data"}`))); res[0]["status"] != "queued" {
		t.Fatalf("unseen partition = %v", res)
	}
	// encoding/json escapes & < > as \u0026...; transactionIds and partitions
	// carrying them are accepted and stored decoded.
	for _, id := range []string{"pull:Booking.com&Expedia", "listing:<1>2", `quote:"x"`, `slash:a\b`, "date:2026/07/BK-11", "unicode:città"} {
		body := fmt.Sprintf(`{"items":[{"queue":%q,"partition":"Default","payload":{"n":1},"transactionId":%s}]}`, q, jsonStr(id))
		if res := results(c.send("POST", "/api/v1/push", body)); res[0]["status"] != "queued" || res[0]["transactionId"] != id {
			t.Fatalf("transactionId %q: %v", id, res)
		}
	}
	for _, p := range []string{"hotel:<main>&annex", `quote:"x"`, "date:2026/07"} {
		if res := results(c.send("POST", "/api/v1/push", goPushBody(q, p, `{"n":1}`))); res[0]["status"] != "queued" {
			t.Fatalf("partition %q: %v", p, res)
		}
		// The partition route of Pop path-escapes the name.
		msgs := c.messages(c.send("GET", goPopPath(q, p, nil, 1, false, 30000), ""))
		if len(msgs) != 1 || msgs[0].Partition != p {
			t.Fatalf("pop of partition %q = %+v", p, msgs)
		}
	}
}

// A buffered push flushes as one push of every buffered item, each with
// its own UUIDv7 id: TestPushBufferedMessage.
func TestSDKGoBufferedFlush(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	q := "test-go-buffered-1"
	c.send("POST", "/api/v1/configure", `{"queue":"`+q+`"}`)
	r := c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"index":0}`, `{"index":1}`, `{"index":2}`, `{"index":3}`, `{"index":4}`))
	mustStatus(t, r, http.StatusCreated)
	msgs := c.messages(c.send("GET", goPopPath(q, "", nil, 10, false, 30000), ""))
	if len(msgs) != 5 {
		t.Fatalf("popped %d of 5 buffered", len(msgs))
	}
	for i, m := range msgs {
		if goData(t, m)["index"] != float64(i) {
			t.Fatalf("message %d = %v: flush order lost", i, m.Data)
		}
	}
}

// Pop(): pop_test.go. Wait(false) everywhere, batch/wait/timeout always sent.
func TestSDKGoPop(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	q := "test-go-pop-1"
	c.send("POST", "/api/v1/configure", `{"queue":"`+q+`"}`)
	r := c.send("GET", goPopPath(q, "", nil, 1, false, 30000), "")
	if r.status != http.StatusNoContent || len(r.body) != 0 || c.goResult(r) != nil {
		t.Fatalf("empty pop = %d %q, want 204 and no body", r.status, r.body)
	}
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"test":"data","value":42}`))
	msgs := c.messages(c.send("GET", goPopPath(q, "", nil, 1, false, 30000), ""))
	if len(msgs) != 1 {
		t.Fatalf("popped %d, want 1", len(msgs))
	}
	if d := goData(t, msgs[0]); d["test"] != "data" || d["value"] != 42.0 {
		t.Fatalf("data = %v", d)
	}
	if m := msgs[0]; m.LeaseID == "" || m.Queue != q || m.Partition != "Default" || m.RetryCount != 0 {
		t.Fatalf("message = %+v", m)
	}
	// Ack, then the queue is empty.
	if errs := c.goAckFailures(c.send("POST", "/api/v1/ack", goAckBody(msgs[0], "completed", "", ""))); len(errs) != 0 {
		t.Fatalf("ack reported %v", errs)
	}
	if msgs := c.messages(c.send("GET", goPopPath(q, "", nil, 1, false, 30000), "")); len(msgs) != 0 {
		t.Fatalf("pop after ack = %d messages", len(msgs))
	}
	// Batch(3) of five.
	for i := range 5 {
		c.send("POST", "/api/v1/push", goPushBody(q, "Default", fmt.Sprintf(`{"index":%d}`, i)))
	}
	if msgs := c.messages(c.send("GET", goPopPath(q, "", nil, 3, false, 30000), "")); len(msgs) != 3 {
		t.Fatalf("Batch(3) = %d messages", len(msgs))
	}
	// AutoAck(true) on Pop is sent as autoAck=true: no lease, nothing redelivered.
	c.send("POST", "/api/v1/push", goPushBody("test-go-pop-aa", "Default", `{"n":1}`))
	aa := c.messages(c.send("GET", goPopPath("test-go-pop-aa", "", url.Values{"autoAck": {"true"}}, 1, false, 30000), ""))
	if len(aa) != 1 || aa[0].LeaseID != "" {
		t.Fatalf("autoAck pop = %+v", aa)
	}
	if again := c.messages(c.send("GET", goPopPath("test-go-pop-aa", "", nil, 1, false, 30000), "")); len(again) != 0 {
		t.Fatalf("an autoAck'ed message came back")
	}
	// AutoAck(false) is sent too, as autoAck=false: a plain leased pop.
	c.send("POST", "/api/v1/push", goPushBody("test-go-pop-naa", "Default", `{"n":1}`))
	naa := c.messages(c.send("GET", goPopPath("test-go-pop-naa", "", url.Values{"autoAck": {"false"}}, 1, false, 30000), ""))
	if len(naa) != 1 || naa[0].LeaseID == "" {
		t.Fatalf("autoAck=false pop = %+v", naa)
	}
	// Queue("").Namespace(ns).Task(task).Pop(): /api/v1/pop with both filters.
	c.send("POST", "/api/v1/configure", `{"queue":"test-go-ns-q","namespace":"test-go-ns","task":"invoice"}`)
	c.send("POST", "/api/v1/push", goPushBody("test-go-ns-q", "Default", `{"n":1}`))
	ns := c.messages(c.send("GET", goPopPath("", "", url.Values{"namespace": {"test-go-ns"}, "task": {"invoice"}}, 1, false, 30000), ""))
	if len(ns) != 1 || ns[0].Queue != "test-go-ns-q" {
		t.Fatalf("namespace pop = %+v", ns)
	}
}
