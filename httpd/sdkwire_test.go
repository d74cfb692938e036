package httpd_test

// Wire conformance with Queen's client SDKs. Every request below is the one
// the Go SDK (clients/client-go) or the JS SDK (clients/client-js/client-v2)
// puts on the wire for that call, byte for byte where the SDK fixes the
// bytes: its key order, its nulls, its omitted fields, its query-string
// order, its headers. Every assertion reads the reply the way that SDK reads
// it, with the JSON types it expects; a field the SDK ignores is not pinned.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/clock"
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
		c.t.Fatalf("JS SDK throws: HTTP %d: %s", r.status, cmp.Or(e.Error, string(r.body)))
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

// Ack(ctx, []*Message, ...) posts /ack/batch; the SDK turns each item's
// non-empty string error into a per-item failure.
func TestSDKGoAckBatch(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	q := "test-go-ackbatch-1"
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"i":0}`, `{"i":1}`, `{"i":2}`))
	msgs := c.messages(c.send("GET", goPopPath(q, "", url.Values{"consumerGroup": {"g"}}, 3, false, 30000), ""))
	if len(msgs) != 3 {
		t.Fatalf("popped %d", len(msgs))
	}
	r := c.send("POST", "/api/v1/ack/batch", goAckBatchBody(msgs, "completed", "", "g"))
	mustStatus(t, r, http.StatusOK)
	if errs := c.goAckFailures(r); len(errs) != 0 {
		t.Fatalf("batch ack reported %v", errs)
	}
	if data := c.goResult(r)["data"].([]any); len(data) != 3 {
		t.Fatalf("batch ack answered %d items", len(data))
	}
	if again := c.messages(c.send("GET", goPopPath(q, "", url.Values{"consumerGroup": {"g"}}, 3, false, 30000), "")); len(again) != 0 {
		t.Fatalf("acked messages redelivered: %d", len(again))
	}
	// Acking the same batch again under its released lease: each item fails
	// visibly, as a string error the SDK reports.
	if errs := c.goAckFailures(c.send("POST", "/api/v1/ack/batch", goAckBatchBody(msgs, "completed", "", "g"))); len(errs) != 3 {
		t.Fatalf("stale batch ack reported %d failures, want 3", len(errs))
	}
}

// Transaction().Ack(...).Queue(q).Push(...).Commit(): transaction_test.go.
// Ack ops carry no leaseId (the lease goes in requiredLeases); push items
// carry partition Default and a UUIDv7 transactionId. The SDK reads
// success and error.
func TestSDKGoTransaction(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	commit := func(ops []string, leases ...string) map[string]any {
		t.Helper()
		ls := "[]"
		if len(leases) > 0 {
			b, _ := json.Marshal(leases)
			ls = string(b)
		}
		r := c.send("POST", "/api/v1/transaction", `{"operations":[`+strings.Join(ops, ",")+`],"requiredLeases":`+ls+`}`)
		mustStatus(t, r, http.StatusOK)
		return c.goResult(r)
	}
	ackOp := func(m sdkMessage, group string) string {
		op := fmt.Sprintf(`{"type":"ack","transactionId":%s,"partitionId":%s,"status":"completed"`, jsonStr(m.TransactionID), jsonStr(m.PartitionID))
		if group != "" {
			op += `,"consumerGroup":` + jsonStr(group)
		}
		return op + "}"
	}
	pushOp := func(queue, payload string) string {
		return fmt.Sprintf(`{"type":"push","items":[{"queue":%s,"partition":"Default","payload":%s,"transactionId":%s}]}`,
			jsonStr(queue), payload, jsonStr(newTxnID()))
	}
	pop := func(q string, batch int) []sdkMessage {
		return c.messages(c.send("GET", goPopPath(q, "", nil, batch, false, 30000), ""))
	}
	ok := func(res map[string]any) {
		t.Helper()
		if res["success"] != true {
			t.Fatalf("commit = %v", res)
		}
		if e, isStr := res["error"].(string); isStr && e != "" {
			t.Fatalf("commit error %q", e)
		}
	}

	// Basic ack + push.
	c.send("POST", "/api/v1/push", goPushBody("test-go-tx-input", "Default", `{"data":"test"}`))
	in := pop("test-go-tx-input", 1)
	ok(commit([]string{ackOp(in[0], ""), pushOp("test-go-tx-output", `{"processed":true}`)}, in[0].LeaseID))
	if out := pop("test-go-tx-output", 1); len(out) != 1 || goData(t, out[0])["processed"] != true {
		t.Fatalf("output = %+v", out)
	}
	if rest := pop("test-go-tx-input", 1); len(rest) != 0 {
		t.Fatal("the acked input came back")
	}
	// Two pushes, no ack.
	ok(commit([]string{pushOp("test-go-tx-multi1", `{"target":"queue1"}`), pushOp("test-go-tx-multi2", `{"target":"queue2"}`)}))
	if len(pop("test-go-tx-multi1", 1)) != 1 || len(pop("test-go-tx-multi2", 1)) != 1 {
		t.Fatal("a two-queue push transaction lost a message")
	}
	// Three acks of one batch.
	c.send("POST", "/api/v1/push", goPushBody("test-go-tx-multi-ack", "Default", `{"index":0}`, `{"index":1}`, `{"index":2}`))
	three := pop("test-go-tx-multi-ack", 3)
	ok(commit([]string{ackOp(three[0], ""), ackOp(three[1], ""), ackOp(three[2], "")}, three[0].LeaseID))
	if rest := pop("test-go-tx-multi-ack", 3); len(rest) != 0 {
		t.Fatalf("%d messages left after acking all three", len(rest))
	}
	// Chained: init -> next -> final.
	c.send("POST", "/api/v1/push", goPushBody("test-go-tx-chain-init", "Default", `{"step":0}`))
	m := pop("test-go-tx-chain-init", 1)[0]
	ok(commit([]string{ackOp(m, ""), pushOp("test-go-tx-chain-next", `{"step":1}`)}, m.LeaseID))
	m = pop("test-go-tx-chain-next", 1)[0]
	ok(commit([]string{ackOp(m, ""), pushOp("test-go-tx-chain-final", `{"complete":true,"step":2}`)}, m.LeaseID))
	if fin := pop("test-go-tx-chain-final", 1); len(fin) != 1 || goData(t, fin[0])["complete"] != true {
		t.Fatalf("final = %+v", fin)
	}
	// A consumer (batch 1, AutoAck(false)) acking each message inside a
	// transaction: the transaction's ack must release the lease, or the
	// consumer's next pop finds the partition still leased.
	c.send("POST", "/api/v1/push", goPushBody("test-go-tx-consumer-in", "Default", `{"index":0}`, `{"index":1}`, `{"index":2}`))
	for i := range 3 {
		got := c.messages(c.send("GET", goPopPath("test-go-tx-consumer-in", "", nil, 1, true, 1000), ""))
		if len(got) != 1 || goData(t, got[0])["index"] != float64(i) {
			t.Fatalf("consumer pop %d = %+v", i, got)
		}
		ok(commit([]string{ackOp(got[0], ""), pushOp("test-go-tx-consumer-out", fmt.Sprintf(`{"original":%d,"processed":true}`, i))}, got[0].LeaseID))
	}
	if out := pop("test-go-tx-consumer-out", 10); len(out) != 3 {
		t.Fatalf("output holds %d, want 3", len(out))
	}
}

// queenctl tx -f bundle.json (Queen's operator CLI, cmd/tx.go) builds each
// ack op from a Message holding only transactionId and partitionId, so
// its Go client sends the bundle's acks without a lease and
// "requiredLeases":[]. Its e2e suite's three transaction tests, replayed:
// each ack lands inside the batch the CLI popped and completes it; the
// same kind of ack past that batch is refused and changes nothing.
func TestSDKGoTransactionOfAQueenctlBundle(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	tx := func(ops ...string) map[string]any {
		t.Helper()
		r := c.send("POST", "/api/v1/transaction", `{"operations":[`+strings.Join(ops, ",")+`],"requiredLeases":[]}`)
		mustStatus(t, r, http.StatusOK)
		return c.goResult(r)
	}
	ack := func(m sdkMessage) string {
		return fmt.Sprintf(`{"type":"ack","transactionId":%s,"partitionId":%s,"status":"completed"}`,
			jsonStr(m.TransactionID), jsonStr(m.PartitionID))
	}
	push := func(queue, payload string) string {
		return fmt.Sprintf(`{"type":"push","items":[{"queue":%s,"partition":"Default","payload":%s,"transactionId":%s}]}`,
			jsonStr(queue), payload, jsonStr(newTxnID()))
	}
	pop := func(q string, batch int) []sdkMessage {
		return c.messages(c.send("GET", goPopPath(q, "", nil, batch, false, 30000), ""))
	}
	ok := func(res map[string]any) {
		t.Helper()
		if res["success"] != true {
			t.Fatalf("queenctl: transaction failed: %v", res["error"])
		}
	}

	// TestTx_BasicPushAck: push B, ack A.
	c.send("POST", "/api/v1/push", goPushBody("ct-tx-basic-a", "Default", `{"value":1}`))
	a := pop("ct-tx-basic-a", 1)
	ok(tx(push("ct-tx-basic-b", `{"value":2}`), ack(a[0])))
	if b := pop("ct-tx-basic-b", 1); len(b) != 1 || goData(t, b[0])["value"] != float64(2) {
		t.Fatalf("queue B = %+v", b)
	}
	if rest := pop("ct-tx-basic-a", 1); len(rest) != 0 {
		t.Fatal("queue A should be drained")
	}
	// TestTx_MultiplePushes: push B, push C, ack A.
	c.send("POST", "/api/v1/push", goPushBody("ct-tx-multi-a", "Default", `{"id":"source"}`))
	a = pop("ct-tx-multi-a", 1)
	ok(tx(push("ct-tx-multi-b", `{"id":"b"}`), push("ct-tx-multi-c", `{"id":"c"}`), ack(a[0])))
	if len(pop("ct-tx-multi-b", 1)) != 1 || len(pop("ct-tx-multi-c", 1)) != 1 || len(pop("ct-tx-multi-a", 1)) != 0 {
		t.Fatal("a push lost, or A not drained")
	}
	// TestTx_MultipleAcks: three acks of one batch, then a push.
	c.send("POST", "/api/v1/push", goPushBody("ct-tx-multi-ack-a", "Default", `{"value":1}`, `{"value":2}`, `{"value":3}`))
	three := pop("ct-tx-multi-ack-a", 3)
	ok(tx(ack(three[0]), ack(three[1]), ack(three[2]), push("ct-tx-multi-ack-b", `{"sum":6}`)))
	if rest := pop("ct-tx-multi-ack-a", 5); len(rest) != 0 {
		t.Fatalf("A holds %d after acking its three", len(rest))
	}

	// The same bundle cannot reach past the batch it names.
	c.send("POST", "/api/v1/push", goPushBody("ct-tx-far", "Default", `{"n":0}`, `{"n":1}`, `{"n":2}`))
	first := pop("ct-tx-far", 1)
	all := c.messages(c.send("GET", goPopPath("ct-tx-far", "", url.Values{"consumerGroup": {"peek"}}, 3, false, 1000), ""))
	if res := tx(ack(all[2]), push("ct-tx-far-out", `{"x":1}`)); res["success"] != false {
		t.Fatalf("a lease-less ack past its batch committed: %v", res)
	}
	ok(tx(ack(first[0])))
	if rest := pop("ct-tx-far", 5); len(rest) != 2 || goData(t, rest[0])["n"] != float64(1) {
		t.Fatalf("after the batch: %+v", rest)
	}
	if out := pop("ct-tx-far-out", 1); len(out) != 0 {
		t.Fatal("the refused transaction pushed")
	}
}

// Renew(ctx, msgs): one POST /lease/:id/extend with {} per distinct lease;
// the SDK trusts the status alone.
func TestSDKGoRenew(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := goSDK(t, s)
	q := "test-go-renew-1"
	c.send("POST", "/api/v1/configure", `{"queue":"`+q+`","options":{"leaseTime":3}}`)
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"n":1}`))
	msgs := c.messages(c.send("GET", goPopPath(q, "", nil, 1, false, 30000), ""))
	for range 5 {
		c0.Advance(time.Second)
		r := c.send("POST", "/api/v1/lease/"+msgs[0].LeaseID+"/extend", `{}`)
		mustStatus(t, r, http.StatusOK)
		c.goResult(r)
	}
	if again := c.messages(c.send("GET", goPopPath(q, "", nil, 1, false, 30000), "")); len(again) != 0 {
		t.Fatal("a renewed lease expired at its original leaseTime")
	}
	if errs := c.goAckFailures(c.send("POST", "/api/v1/ack", goAckBody(msgs[0], "completed", "", ""))); len(errs) != 0 {
		t.Fatalf("ack after renewals = %v", errs)
	}
}

// TestDLQ, TestDLQQuery, TestDLQWithFilters: a grouped AutoAck(true)
// consumer nacks with the handler's error until the message is dead-lettered,
// then DLQ(group).Limit(10).Get() reads messages and total.
func TestSDKGoDLQ(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	q, g := "test-go-dlq-1", "dlq-test-group"
	c.send("POST", "/api/v1/configure", `{"queue":"`+q+`","options":{"leaseTime":5,"retryLimit":2}}`)
	dlq := func(extra url.Values) map[string]any {
		t.Helper()
		v := url.Values{"queue": {q}, "consumerGroup": {g}, "limit": {"10"}}
		for k, x := range extra {
			v[k] = x
		}
		r := c.send("GET", "/api/v1/dlq?"+v.Encode(), "")
		mustStatus(t, r, http.StatusOK)
		res := c.goResult(r)
		if _, ok := res["total"].(float64); !ok {
			t.Fatalf("DLQ total = %#v, want a number: %s", res["total"], r.body)
		}
		if _, ok := res["messages"].([]any); !ok {
			t.Fatalf("DLQ messages is not an array: %s", r.body)
		}
		return res
	}
	if res := dlq(nil); res["total"] != 0.0 {
		t.Fatalf("fresh DLQ total = %v", res["total"])
	}
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"test":"dlq"}`))
	for round := range 3 {
		msgs := c.messages(c.send("GET", goPopPath(q, "", url.Values{"consumerGroup": {g}}, 1, true, 30000), ""))
		if len(msgs) != 1 {
			t.Fatalf("round %d: popped %d", round, len(msgs))
		}
		if errs := c.goAckFailures(c.send("POST", "/api/v1/ack", goAckBody(msgs[0], "failed", "intentional failure", g))); len(errs) != 0 {
			t.Fatalf("round %d: nack reported %v", round, errs)
		}
	}
	res := dlq(nil)
	msgs := res["messages"].([]any)
	if res["total"] != 1.0 || len(msgs) != 1 {
		t.Fatalf("DLQ = %v", res)
	}
	m := msgs[0].(map[string]any)
	if m["errorMessage"] != "intentional failure" || !reflect.DeepEqual(m["data"], map[string]any{"test": "dlq"}) {
		t.Fatalf("DLQ entry = %v", m)
	}
	if _, ok := m["retryCount"].(float64); !ok {
		t.Fatalf("DLQ retryCount = %#v", m["retryCount"])
	}
	// From/To as time.Now().Format(time.RFC3339): whole seconds, local offset.
	zone := time.FixedZone("CEST", 2*3600)
	now := time.Now().In(zone)
	res = dlq(url.Values{"from": {now.Add(-time.Hour).Format(time.RFC3339)}, "to": {now.Add(time.Minute).Format(time.RFC3339)}, "offset": {"0"}})
	if res["total"] != 1.0 {
		t.Fatalf("DLQ with from/to = %v", res)
	}
}

// SubscriptionFrom(time.Now().Format(time.RFC3339)): whole seconds in the
// local zone, url-encoded (+ becomes %2B).
func TestSDKGoSubscriptionFromLocalTime(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 500_000_000, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := goSDK(t, s)
	q := "test-go-sub-from-ts"
	c.send("POST", "/api/v1/configure", `{"queue":"`+q+`"}`)
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"old":true}`))
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"old":true}`))
	c0.Advance(time.Second)
	cut := c0.Now().In(time.FixedZone("CEST", 2*3600)).Format(time.RFC3339)
	c0.Advance(time.Second)
	for range 3 {
		c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"new":true}`))
	}
	v := url.Values{"consumerGroup": {"sub-from-ts-group"}, "subscriptionFrom": {cut}}
	msgs := c.messages(c.send("GET", goPopPath(q, "", v, 10, false, 30000), ""))
	if len(msgs) != 3 {
		t.Fatalf("subscriptionFrom=%s delivered %d, want the 3 newer", cut, len(msgs))
	}
}

// The Go SDK's consumer-group calls: UpdateConsumerGroupTimestamp,
// Admin().ListConsumerGroups / GetConsumerGroup / GetLaggingConsumers /
// SeekConsumerGroup / SeekConsumerGroupPartition /
// DeleteConsumerGroupForQueue, and DeleteConsumerGroup.
func TestSDKGoConsumerGroupAdmin(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	q, g := "test-go-cg-1", "test-go-group"
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"i":0}`, `{"i":1}`))
	msgs := c.messages(c.send("GET", goPopPath(q, "", url.Values{"consumerGroup": {g}}, 10, false, 30000), ""))
	c.send("POST", "/api/v1/ack/batch", goAckBatchBody(msgs, "completed", "", g))

	// timestamp.Format(time.RFC3339) in the caller's zone.
	ts := time.Now().In(time.FixedZone("CEST", 2*3600)).Format(time.RFC3339)
	r := c.send("POST", "/api/v1/consumer-groups/"+g+"/subscription", `{"subscriptionTimestamp":`+jsonStr(ts)+`}`)
	mustStatus(t, r, http.StatusOK)

	r = c.send("GET", "/api/v1/consumer-groups", "")
	mustStatus(t, r, http.StatusOK)
	if list, ok := c.goResult(r)["data"].([]any); !ok || len(list) == 0 {
		t.Fatalf("ListConsumerGroups = %s", r.body)
	}
	r = c.send("GET", "/api/v1/consumer-groups/"+url.PathEscape(g), "")
	mustStatus(t, r, http.StatusOK)
	if _, ok := c.goResult(r)[q]; !ok {
		t.Fatalf("GetConsumerGroup = %s", r.body)
	}
	r = c.send("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=60", "")
	mustStatus(t, r, http.StatusOK)
	if _, ok := c.goResult(r)["data"].([]any); !ok {
		t.Fatalf("GetLaggingConsumers = %s", r.body)
	}

	// SeekConsumerGroup: exactly one of toEnd / timestamp; "beginning" is 1970.
	seekPath := "/api/v1/consumer-groups/" + url.PathEscape(g) + "/queues/" + url.PathEscape(q) + "/seek"
	mustStatus(t, c.send("POST", seekPath, `{"timestamp":"1970-01-01T00:00:00Z"}`), http.StatusOK)
	again := c.messages(c.send("GET", goPopPath(q, "", url.Values{"consumerGroup": {g}}, 10, false, 30000), ""))
	if len(again) != 2 {
		t.Fatalf("after seeking to 1970: %d messages, want 2", len(again))
	}
	mustStatus(t, c.send("POST", seekPath, `{"toEnd":true}`), http.StatusOK)
	if rest := c.messages(c.send("GET", goPopPath(q, "", url.Values{"consumerGroup": {g}}, 10, false, 30000), "")); len(rest) != 0 {
		t.Fatalf("after toEnd: %d messages", len(rest))
	}
	// SeekConsumerGroupPartition ignores its options and always sends {}.
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"i":2}`))
	r = c.send("POST", seekPath[:len(seekPath)-len("/seek")]+"/partitions/Default/seek", `{}`)
	mustStatus(t, r, http.StatusOK)
	if res := c.goResult(r); res["success"] != true {
		t.Fatalf("partition seek = %s", r.body)
	}
	if rest := c.messages(c.send("GET", goPopPath(q, "", url.Values{"consumerGroup": {g}}, 10, false, 30000), "")); len(rest) != 0 {
		t.Fatalf("after partition seek {}: %d messages, want none (toEnd)", len(rest))
	}

	r = c.send("DELETE", "/api/v1/consumer-groups/"+url.PathEscape(g)+"/queues/"+url.PathEscape(q)+"?deleteMetadata=false", "")
	mustStatus(t, r, http.StatusOK)
	// DeleteConsumerGroup does not escape the name; unknown groups are fine.
	mustStatus(t, c.send("DELETE", "/api/v1/consumer-groups/"+g+"?deleteMetadata=true", ""), http.StatusOK)
	mustStatus(t, c.send("DELETE", "/api/v1/consumer-groups/never-seen?deleteMetadata=true", ""), http.StatusOK)
}

// msg.Trace(ctx, cfg) inside a consumer: traceNames omitted when empty,
// eventType defaulted to info, consumerGroup __QUEUE_MODE__ without a group.
func TestSDKGoTrace(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	q := "test-go-trace-1"
	c.send("POST", "/api/v1/push", goPushBody(q, "Default", `{"n":1}`))
	m := c.messages(c.send("GET", goPopPath(q, "", nil, 1, true, 30000), ""))[0]
	body := fmt.Sprintf(`{"transactionId":%s,"partitionId":%s,"consumerGroup":"__QUEUE_MODE__","eventType":"info","data":{"step":"started"}}`,
		jsonStr(m.TransactionID), jsonStr(m.PartitionID))
	r := c.send("POST", "/api/v1/traces", body)
	if r.status < 200 || r.status > 299 {
		t.Fatalf("trace = %d %s", r.status, r.body)
	}
	body = fmt.Sprintf(`{"transactionId":%s,"partitionId":%s,"consumerGroup":"__QUEUE_MODE__","traceNames":["order-1"],"eventType":"step","data":{"n":2}}`,
		jsonStr(m.TransactionID), jsonStr(m.PartitionID))
	if r := c.send("POST", "/api/v1/traces", body); r.status < 200 || r.status > 299 {
		t.Fatalf("named trace = %d %s", r.status, r.body)
	}
	if errs := c.goAckFailures(c.send("POST", "/api/v1/ack", goAckBody(m, "completed", "", ""))); len(errs) != 0 {
		t.Fatalf("ack after tracing = %v", errs)
	}
}

// --- JS SDK ----------------------------------------------------------------

// jsQueueDefaults is QUEUE_DEFAULTS: create() always sends these nine
// options, merged under what config() set.
const jsQueueDefaults = `"leaseTime":300,"retryLimit":3,"priority":0,"delayedProcessing":0,"windowBuffer":0,"maxSize":0,"retentionSeconds":0,"completedRetentionSeconds":0,"encryptionEnabled":false`

func jsCreateBody(queue string, options string) string {
	if options == "" {
		options = jsQueueDefaults
	}
	return `{"queue":` + jsonStr(queue) + `,"namespace":null,"task":null,"options":{` + options + `}}`
}

// queue(name).create() / .config({...}).create() / .delete(): the SDK
// throws when the reply has a truthy error, tests check configured ===
// true and deleted === true, and queue.js compares every option it sent
// with === against the echo.
func TestSDKJSCreateConfigureDelete(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	check := func(queue, options string) map[string]any {
		t.Helper()
		r := c.send("POST", "/api/v1/configure", jsCreateBody(queue, options))
		res := c.jsObject(r)
		if res["configured"] != true {
			t.Fatalf("configured = %#v: %s", res["configured"], r.body)
		}
		if e, ok := res["error"]; ok && e != nil && e != false && e != "" {
			t.Fatalf("reply carries error %#v", e)
		}
		var sent map[string]any
		json.Unmarshal([]byte("{"+cmp.Or(options, jsQueueDefaults)+"}"), &sent)
		echo, _ := res["options"].(map[string]any)
		for k, v := range sent {
			if echo[k] != v { // same JSON type and value, as === sees them
				t.Errorf("options.%s = %#v, sent %#v", k, echo[k], v)
			}
		}
		return res
	}
	check("test-queue-v2-create", "")
	// config({...}) is spread over QUEUE_DEFAULTS.
	check("test-queue-v2-configure", `"leaseTime":1,"retryLimit":5,"priority":10,"delayedProcessing":0,"windowBuffer":0,"maxSize":1000,"retentionSeconds":0,"completedRetentionSeconds":0,"encryptionEnabled":false,"retentionEnabled":true,"deadLetterQueue":true,"dlqAfterMaxRetries":true,"maxWaitTimeSeconds":10`)
	// load.js: queue('').create().
	check("", "")

	r := c.send("DELETE", "/api/v1/resources/queues/"+url.PathEscape("test-queue-v2-create"), "")
	if res := c.jsObject(r); res["deleted"] != true {
		t.Fatalf("delete = %s", r.body)
	}
}

// queue(q).push([...]) and the buffer's flush: the SDK splits results by
// status (queued / duplicate / failed, throwing on failed) and push.js
// reads status and message_id.
func TestSDKJSPush(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	q := "test-queue-v2-push"
	c.send("POST", "/api/v1/configure", jsCreateBody(q, ""))
	push := func(body string) []map[string]any {
		t.Helper()
		r := c.send("POST", "/api/v1/push", body)
		mustStatus(t, r, http.StatusCreated)
		res := c.jsArray(r)
		for i, x := range res {
			if x["status"] == "failed" {
				t.Fatalf("item %d failed: the SDK throws %v", i, x["error"])
			}
			if _, ok := x["message_id"].(string); !ok {
				t.Fatalf("item %d message_id = %#v", i, x["message_id"])
			}
		}
		return res
	}
	if res := push(jsPushBody(q, "Default", `{"message":"Hello, world!"}`)); res[0]["status"] != "queued" {
		t.Fatalf("push = %v", res)
	}
	// A traceId passes the SDK's v4 check and is sent after transactionId.
	trace := uuid.NewString()
	body := fmt.Sprintf(`{"items":[{"queue":%q,"partition":"Default","payload":{"traced":true},"transactionId":%q,"traceId":%q}]}`, q, newTxnID(), trace)
	if res := push(body); res[0]["status"] != "queued" {
		t.Fatalf("traced push = %v", res)
	}
	// Fixed ids: queued then duplicate with the original's message_id,
	// per partition; intra-batch duplicates.
	fixed := func(partition string, payloads ...string) string {
		var items []string
		for _, p := range payloads {
			items = append(items, fmt.Sprintf(`{"queue":%q,"partition":%q,"payload":%s,"transactionId":"test-transaction-id"}`, q, partition, p))
		}
		return `{"items":[` + strings.Join(items, ",") + `]}`
	}
	first := push(fixed("0", `{"n":1}`))
	dup := push(fixed("0", `{"n":2}`))
	other := push(fixed("1", `{"n":3}`))
	if first[0]["status"] != "queued" || dup[0]["status"] != "duplicate" || dup[0]["message_id"] != first[0]["message_id"] || other[0]["status"] != "queued" {
		t.Fatalf("fixed ids: %v / %v / %v", first, dup, other)
	}
	intra := push(fixed("2", `{"n":1}`, `{"n":2}`, `{"n":3}`))
	if intra[0]["status"] != "queued" || intra[1]["status"] != "duplicate" || intra[2]["status"] != "duplicate" {
		t.Fatalf("intra-batch = %v", intra)
	}
	// push([]) -> []; 100 items without transactionId get 100 ids of their own.
	if res := push(`{"items":[]}`); len(res) != 0 {
		t.Fatalf("empty push = %v", res)
	}
	idless := make([]string, 100)
	for i := range idless {
		idless[i] = fmt.Sprintf(`{"queue":%q,"payload":{"i":%d}}`, "test-queue-v2-no-txn", i)
	}
	ids := map[any]bool{}
	for _, x := range push(`{"items":[` + strings.Join(idless, ",") + `]}`) {
		if x["status"] != "queued" {
			t.Fatalf("id-less item = %v", x)
		}
		ids[x["message_id"]] = true
	}
	if len(ids) != 100 {
		t.Fatalf("100 id-less items got %d distinct message ids", len(ids))
	}
	// Auto-created queue and partition, popped through the (unescaped) partition route.
	push(jsPushBody("test-queue-v2-auto", "p-auto", `{"auto":true}`))
	msgs := c.messages(c.send("GET", jsPopPath("test-queue-v2-auto", "p-auto", 1, false, 30000), ""))
	if len(msgs) != 1 || msgs[0].Partition != "p-auto" {
		t.Fatalf("auto-created pop = %+v", msgs)
	}
	// A buffered flush: 100 items for one partition come back as one batch.
	payloads := make([]string, 100)
	for i := range payloads {
		payloads[i] = fmt.Sprintf(`{"i":%d}`, i)
	}
	push(jsPushBody("test-queue-v2-buffered", "buffered-p", payloads...))
	batch := c.messages(c.send("GET", jsPopPath("test-queue-v2-buffered", "buffered-p", 100, true, 30000), ""))
	if len(batch) != 100 {
		t.Fatalf("buffered batch = %d messages, want 100", len(batch))
	}
}

// pop(): batch, wait, timeout always; autoAck never true (the SDK
// collapses autoAck(true) to its POP default); the path is not escaped.
func TestSDKJSPopAndAck(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	q := "test-queue-v2-pop"
	c.send("POST", "/api/v1/configure", jsCreateBody(q, ""))
	if msgs := c.messages(c.send("GET", jsPopPath(q, "", 1, false, 30000), "")); len(msgs) != 0 {
		t.Fatalf("empty pop = %d", len(msgs))
	}
	c.send("POST", "/api/v1/push", jsPushBody(q, "Default", `{"message":"Hello, world!"}`))
	msgs := c.messages(c.send("GET", jsPopPath(q, "", 1, true, 30000), ""))
	if len(msgs) != 1 || msgs[0].LeaseID == "" {
		t.Fatalf("pop = %+v", msgs)
	}
	// ack(msg): error and consumerGroup null, leaseId last.
	res := c.jsAckResults(c.send("POST", "/api/v1/ack", jsAckBody(msgs[0], "completed", "", "")), 1)
	if res[0]["success"] != true || res[0]["error"] != nil {
		t.Fatalf("ack = %v", res)
	}
	// A grouped pop acked with {group}.
	c.send("POST", "/api/v1/push", jsPushBody(q, "Default", `{"message":"again"}`))
	// A new group starts at the oldest message: it gets both, one at a time.
	for i := range 2 {
		g := c.messages(c.send("GET", jsPopPath(q, "", 1, true, 30000, "consumerGroup", "test-js-group"), ""))
		if len(g) != 1 {
			t.Fatalf("grouped pop %d = %d", i, len(g))
		}
		res = c.jsAckResults(c.send("POST", "/api/v1/ack", jsAckBody(g[0], "completed", "", "test-js-group")), 1)
		if res[0]["success"] != true {
			t.Fatalf("grouped ack = %v", res)
		}
	}
	if again := c.messages(c.send("GET", jsPopPath(q, "", 10, false, 30000, "consumerGroup", "test-js-group"), "")); len(again) != 0 {
		t.Fatalf("group redelivered %d", len(again))
	}
}

// popV4MultiPartitionAck and popV4SharedLeaseRenew: one batch ack over
// messages of several partitions sharing one lease, and one renew call.
func TestSDKJSMultiPartitionAckAndRenew(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	q := "test-queue-v2-v4-pop-ack"
	c.send("POST", "/api/v1/configure", jsCreateBody(q, `"leaseTime":60`))
	for p := range 2 {
		c.send("POST", "/api/v1/push", jsPushBody(q, fmt.Sprintf("p%d", p), `{"m":0}`, `{"m":1}`, `{"m":2}`))
	}
	msgs := c.messages(c.send("GET", jsPopPath(q, "", 100, false, 30000, "partitions", "2"), ""))
	if len(msgs) != 6 {
		t.Fatalf("popped %d, want 6", len(msgs))
	}
	r := c.send("POST", "/api/v1/lease/"+msgs[0].LeaseID+"/extend", `{}`)
	mustStatus(t, r, http.StatusOK)
	c.jsResult(r)
	res := c.jsAckResults(c.send("POST", "/api/v1/ack/batch", jsAckBatchBody(msgs, "completed", "", "")), 6)
	for i, x := range res {
		if x["success"] != true || x["error"] != nil {
			t.Fatalf("item %d = %v", i, x)
		}
	}
	// Both partitions' leases were released by their last ack.
	for p := range 2 {
		c.send("POST", "/api/v1/push", jsPushBody(q, fmt.Sprintf("p%d", p), `{"m":3}`))
	}
	if more := c.messages(c.send("GET", jsPopPath(q, "", 100, false, 30000, "partitions", "2"), "")); len(more) != 2 {
		t.Fatalf("after the batch ack: %d messages, want 2", len(more))
	}
}

// transaction().ack(msg, status, {consumerGroup}).queue(q)[.partition(p)].push([...]).commit():
// push items carry queue and payload, partition only when set, never a
// transactionId; the SDK throws result.error unless result.success.
func TestSDKJSTransaction(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := jsSDK(t, s)
	ackOp := func(m sdkMessage, status, group string) string {
		op := fmt.Sprintf(`{"type":"ack","transactionId":%s,"partitionId":%s,"status":%s`, jsonStr(m.TransactionID), jsonStr(m.PartitionID), jsonStr(status))
		if group != "" {
			op += `,"consumerGroup":` + jsonStr(group)
		}
		return op + "}"
	}
	pushOp := func(queue, partition string, payloads ...string) string {
		items := make([]string, len(payloads))
		for i, p := range payloads {
			items[i] = `{"queue":` + jsonStr(queue) + `,"payload":` + p
			if partition != "" {
				items[i] += `,"partition":` + jsonStr(partition)
			}
			items[i] += "}"
		}
		return `{"type":"push","items":[` + strings.Join(items, ",") + `]}`
	}
	commit := func(ops []string, leases ...string) map[string]any {
		t.Helper()
		b, _ := json.Marshal(append([]string{}, leases...))
		return c.jsObject(c.send("POST", "/api/v1/transaction", `{"operations":[`+strings.Join(ops, ",")+`],"requiredLeases":`+string(b)+`}`))
	}
	pop := func(q, partition string, batch int, kv ...string) []sdkMessage {
		return c.messages(c.send("GET", jsPopPath(q, partition, batch, false, 30000, kv...), ""))
	}

	// value 1 -> 2, with a partition and a five-item push.
	c.send("POST", "/api/v1/push", jsPushBody("test-queue-v2-tx-a", "Default", `{"value":1}`))
	m := pop("test-queue-v2-tx-a", "", 1)[0]
	res := commit([]string{ackOp(m, "completed", ""), pushOp("test-queue-v2-tx-b", "p1", `{"value":2}`),
		pushOp("test-queue-v2-tx-c", "", `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`, `{"n":5}`)}, m.LeaseID)
	if res["success"] != true {
		t.Fatalf("commit = %v", res)
	}
	if b := pop("test-queue-v2-tx-b", "p1", 1); len(b) != 1 || !reflect.DeepEqual(b[0].Data, map[string]any{"value": 2.0}) {
		t.Fatalf("sink = %+v", b)
	}
	if cc := pop("test-queue-v2-tx-c", "", 10); len(cc) != 5 {
		t.Fatalf("five-item push left %d", len(cc))
	}
	if len(pop("test-queue-v2-tx-a", "", 1)) != 0 {
		t.Fatal("source not emptied")
	}

	// transactionMultipleQueues / transactionLargePayload: acks from two
	// source queues and a ~1 MB push commit together.
	c.send("POST", "/api/v1/push", jsPushBody("test-queue-v2-tx-src1", "Default", `{"value":1}`))
	c.send("POST", "/api/v1/push", jsPushBody("test-queue-v2-tx-src2", "Default", `{"value":2}`))
	m1, m2 := pop("test-queue-v2-tx-src1", "", 1)[0], pop("test-queue-v2-tx-src2", "", 1)[0]
	large := `{"blob":"` + strings.Repeat("y", 1<<20) + `"}`
	res = commit([]string{ackOp(m1, "completed", ""), ackOp(m2, "completed", ""), pushOp("test-queue-v2-tx-large", "", large)}, m1.LeaseID, m2.LeaseID)
	if res["success"] != true {
		t.Fatalf("two-source commit = %v", res)
	}
	if len(pop("test-queue-v2-tx-src1", "", 1))+len(pop("test-queue-v2-tx-src2", "", 1)) != 0 {
		t.Fatal("a source still delivers")
	}
	if big := pop("test-queue-v2-tx-large", "", 1); len(big) != 1 || len(big[0].Data.(map[string]any)["blob"].(string)) != 1<<20 {
		t.Fatal("the large payload did not round-trip")
	}

	// transactionAckWithConsumerGroup: a group's acks advance that group only.
	c.send("POST", "/api/v1/push", jsPushBody("test-queue-v2-tx-group", "Default", `{"n":1}`, `{"n":2}`))
	g1 := pop("test-queue-v2-tx-group", "", 10, "consumerGroup", "group-1")
	if len(g1) != 2 {
		t.Fatalf("group-1 popped %d", len(g1))
	}
	if res := commit([]string{ackOp(g1[0], "completed", "group-1"), ackOp(g1[1], "completed", "group-1")}, g1[0].LeaseID); res["success"] != true {
		t.Fatalf("group commit = %v", res)
	}
	if rest := pop("test-queue-v2-tx-group", "", 10, "consumerGroup", "group-1"); len(rest) != 0 {
		t.Fatalf("group-1 still gets %d", len(rest))
	}
	if other := pop("test-queue-v2-tx-group", "", 10, "consumerGroup", "group-2"); len(other) != 2 {
		t.Fatalf("group-2 gets %d, want both", len(other))
	}

	// transactionRollback: an ack of an unknown id fails the commit (the SDK
	// throws result.error), the push is rolled back, and the source message
	// returns after its 1 s lease.
	c.send("POST", "/api/v1/configure", jsCreateBody("test-queue-v2-tx-rb", `"leaseTime":1`))
	c.send("POST", "/api/v1/push", jsPushBody("test-queue-v2-tx-rb", "Default", `{"n":1}`))
	m = pop("test-queue-v2-tx-rb", "", 1)[0]
	bogus := m
	bogus.TransactionID = "non-existent-transaction-id"
	res = commit([]string{pushOp("test-queue-v2-tx-rb-sink", "", `{"n":1}`), ackOp(m, "completed", ""), ackOp(bogus, "completed", "")}, m.LeaseID)
	if res["success"] != false {
		t.Fatalf("commit with an unknown ack = %v", res)
	}
	if e, _ := res["error"].(string); e == "" {
		t.Fatalf("a failed commit without an error string: %v", res)
	}
	if len(pop("test-queue-v2-tx-rb-sink", "", 1)) != 0 {
		t.Fatal("the rolled-back push is visible")
	}
	c0.Advance(2 * time.Second)
	if back := pop("test-queue-v2-tx-rb", "", 1); len(back) != 1 || back[0].TransactionID != m.TransactionID {
		t.Fatalf("after the lease: %+v", back)
	}
}

// testDLQ: retryLimit 1, two failed deliveries nacked with the handler's
// error, then dlq().get() holds the original data and that error.
func TestSDKJSDLQ(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	q := "test-queue-v2-dlq"
	c.send("POST", "/api/v1/configure", jsCreateBody(q, `"leaseTime":300,"retryLimit":1,"priority":0,"delayedProcessing":0,"windowBuffer":0,"maxSize":0,"retentionSeconds":0,"completedRetentionSeconds":0,"encryptionEnabled":false`))
	c.send("POST", "/api/v1/push", jsPushBody(q, "Default", `{"message":"Test DLQ message","timestamp":1753862400000}`))
	for round := range 2 {
		msgs := c.messages(c.send("GET", jsPopPath(q, "", 1, true, 30000), ""))
		if len(msgs) != 1 {
			t.Fatalf("round %d popped %d", round, len(msgs))
		}
		res := c.jsAckResults(c.send("POST", "/api/v1/ack", jsAckBody(msgs[0], "failed", "Test error - triggering DLQ", "")), 1)
		if res[0]["success"] != true {
			t.Fatalf("round %d nack = %v", round, res)
		}
	}
	res := c.jsObject(c.send("GET", "/api/v1/dlq?queue="+q+"&limit=100&offset=0", ""))
	list, _ := res["messages"].([]any)
	if len(list) != 1 || res["total"] != 1.0 {
		t.Fatalf("dlq = %v", res)
	}
	e := list[0].(map[string]any)
	if !reflect.DeepEqual(e["data"], map[string]any{"message": "Test DLQ message", "timestamp": 1753862400000.0}) {
		t.Fatalf("dlq data = %#v", e["data"])
	}
	if msg, _ := e["errorMessage"].(string); !strings.Contains(msg, "Test error - triggering DLQ") {
		t.Fatalf("dlq errorMessage = %#v", e["errorMessage"])
	}
}

// msg.trace({traceName, data}) sends traceNames null when no name was
// given; a trace must not disturb the message's lease or its ack.
func TestSDKJSTrace(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	q := "test-queue-v2-trace"
	c.send("POST", "/api/v1/push", jsPushBody(q, "Default", `{"n":1}`))
	m := c.messages(c.send("GET", jsPopPath(q, "", 1, true, 30000), ""))[0]
	for _, names := range []string{`null`, `["tenant-acme","chat-room-123"]`} {
		body := fmt.Sprintf(`{"transactionId":%s,"partitionId":%s,"consumerGroup":"__QUEUE_MODE__","traceNames":%s,"eventType":"info","data":{"text":"Started processing"}}`,
			jsonStr(m.TransactionID), jsonStr(m.PartitionID), names)
		c.jsObject(c.send("POST", "/api/v1/traces", body))
	}
	if res := c.jsAckResults(c.send("POST", "/api/v1/ack", jsAckBody(m, "completed", "", "")), 1); res[0]["success"] != true {
		t.Fatalf("ack after trace = %v", res)
	}
}

// deleteConsumerGroup(name, true) of a group that never existed must not
// throw (subscription.js, bootstrap.js and watermark.js clean up with it);
// updateConsumerGroupTimestamp sends the caller's ISO string.
func TestSDKJSConsumerGroupCalls(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	c.jsResult(c.send("DELETE", "/api/v1/consumer-groups/"+url.PathEscape("bootstrap-cg-new")+"?deleteMetadata=true", ""))
	c.send("POST", "/api/v1/push", jsPushBody("test-queue-v2-cg", "Default", `{"n":1}`))
	c.messages(c.send("GET", jsPopPath("test-queue-v2-cg", "", 1, false, 30000, "consumerGroup", "cg-js"), ""))
	res := c.jsObject(c.send("POST", "/api/v1/consumer-groups/cg-js/subscription", `{"subscriptionTimestamp":"2026-07-30T08:00:00.000Z"}`))
	if res["success"] != true {
		t.Fatalf("subscription = %v", res)
	}
	// admin.seekConsumerGroup posts its options object as is.
	res = c.jsObject(c.send("POST", "/api/v1/consumer-groups/cg-js/queues/test-queue-v2-cg/seek", `{"timestamp":"1970-01-01T00:00:00.000Z"}`))
	if res["success"] != true {
		t.Fatalf("seek = %v", res)
	}
	if list, ok := c.jsResult(c.send("GET", "/api/v1/consumer-groups", "")).([]any); !ok || len(list) == 0 {
		t.Fatal("listConsumerGroups is not a non-empty array")
	}
	if _, ok := c.jsResult(c.send("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=60", "")).([]any); !ok {
		t.Fatal("getLaggingConsumers is not an array")
	}
	c.jsObject(c.send("DELETE", "/api/v1/consumer-groups/cg-js/queues/test-queue-v2-cg?deleteMetadata=true", ""))
	c.jsObject(c.send("DELETE", "/api/v1/consumer-groups/cg-js?deleteMetadata=true", ""))

	// Admin calls encodeURIComponent the group: a "/" in it arrives as %2F
	// and must stay inside the :group segment.
	c.messages(c.send("GET", jsPopPath("test-queue-v2-cg", "", 1, false, 30000, "consumerGroup", "team/billing"), ""))
	detail := c.jsObject(c.send("GET", "/api/v1/consumer-groups/"+url.PathEscape("team/billing"), ""))
	if _, ok := detail["test-queue-v2-cg"]; !ok {
		t.Fatalf("getConsumerGroup(team/billing) = %v", detail)
	}
	del := c.jsObject(c.send("DELETE", "/api/v1/consumer-groups/"+url.PathEscape("team/billing")+"?deleteMetadata=true", ""))
	if del["consumerGroup"] != "team/billing" || del["deletedPartitions"] != 1.0 {
		t.Fatalf("deleteConsumerGroup(team/billing) = %v", del)
	}
}

// --- the clients' own checks (docs/wire.md) ---------------------------------------------

// Go consume_test.go: a partition-route consumer handles exactly 3
// (batch 1, auto-ack after each); Batch(5).Limit(10) handles exactly 10 in
// two batch acks; Group("test-group").Limit(5) handles the 5 messages
// pushed before it existed.
func TestSDKGoConsumers(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := goSDK(t, s)
	consume := func(q, partition, group string, batch, limit int) int {
		t.Helper()
		extra := url.Values{}
		if group != "" {
			extra.Set("consumerGroup", group)
		}
		n := 0
		for n < limit {
			msgs := c.messages(c.send("GET", goPopPath(q, partition, extra, batch, true, 1000), ""))
			if len(msgs) == 0 {
				break
			}
			var r wireReply
			if len(msgs) == 1 {
				r = c.send("POST", "/api/v1/ack", goAckBody(msgs[0], "completed", "", group))
			} else {
				r = c.send("POST", "/api/v1/ack/batch", goAckBatchBody(msgs, "completed", "", group))
			}
			if errs := c.goAckFailures(r); len(errs) != 0 {
				t.Fatalf("auto-ack reported %v", errs)
			}
			n += len(msgs)
		}
		return n
	}
	for i := range 3 {
		c.send("POST", "/api/v1/push", goPushBody("test-go-consumer-partition", "test-partition", fmt.Sprintf(`{"index":%d}`, i)))
	}
	if n := consume("test-go-consumer-partition", "test-partition", "", 1, 3); n != 3 {
		t.Fatalf("partition consumer handled %d, want 3", n)
	}
	for i := range 10 {
		c.send("POST", "/api/v1/push", goPushBody("test-go-consumer-batch", "Default", fmt.Sprintf(`{"index":%d}`, i)))
	}
	if n := consume("test-go-consumer-batch", "", "", 5, 10); n != 10 {
		t.Fatalf("batch consumer handled %d, want 10", n)
	}
	for i := range 5 {
		c.send("POST", "/api/v1/push", goPushBody("test-go-consumer-group", "Default", fmt.Sprintf(`{"index":%d}`, i)))
	}
	if n := consume("test-go-consumer-group", "", "test-group", 1, 5); n != 5 {
		t.Fatalf("group consumer handled %d, want 5", n)
	}
}

// consume.js consumerGroup / consumerGroupWithPartition: two groups
// subscribed with subscriptionMode('from_beginning') (an unknown mode, so
// all) each get all 100 in one batch, on a named partition too.
func TestSDKJSGroupsEachGetEverything(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	payloads := make([]string, 100)
	for i := range payloads {
		payloads[i] = fmt.Sprintf(`{"i":%d}`, i)
	}
	for _, part := range []string{"Default", "test-partition"} {
		q := "test-queue-v2-consumer-group-" + strings.ToLower(part)
		c.send("POST", "/api/v1/push", jsPushBody(q, part, payloads...))
		for _, g := range []string{"group-1", "group-2"} {
			msgs := c.messages(c.send("GET", jsPopPath(q, part, 100, true, 30000, "consumerGroup", g, "subscriptionMode", "from_beginning"), ""))
			if len(msgs) != 100 {
				t.Fatalf("%s on %s: one batch of %d, want 100", g, part, len(msgs))
			}
			c.jsAckResults(c.send("POST", "/api/v1/ack/batch", jsAckBatchBody(msgs, "completed", "", g)), 100)
		}
	}
}

// consume.js manualAck: 10 000 messages consumed with batch(1000) and
// acked in batches arrive unique and in order.
func TestSDKJSManualBatchAcksOfTenThousand(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	q := "test-queue-v2-manual-ack"
	const total = 10000
	for start := 0; start < total; start += 1000 {
		payloads := make([]string, 1000)
		for i := range payloads {
			payloads[i] = fmt.Sprintf(`{"id":%d}`, start+i)
		}
		mustStatus(t, c.send("POST", "/api/v1/push", jsPushBody(q, "Default", payloads...)), http.StatusCreated)
	}
	next := 0
	for next < total {
		msgs := c.messages(c.send("GET", jsPopPath(q, "", 1000, true, 2000), ""))
		if len(msgs) == 0 {
			t.Fatalf("stopped at %d of %d", next, total)
		}
		for _, m := range msgs {
			if id := m.Data.(map[string]any)["id"]; id != float64(next) {
				t.Fatalf("message %v where %d was due", id, next)
			}
			next++
		}
		res := c.jsAckResults(c.send("POST", "/api/v1/ack/batch", jsAckBatchBody(msgs, "completed", "", "")), len(msgs))
		for _, x := range res {
			if x["success"] != true {
				t.Fatalf("ack item = %v", x)
			}
		}
	}
	if rest := c.messages(c.send("GET", jsPopPath(q, "", 1000, false, 30000), "")); len(rest) != 0 {
		t.Fatalf("%d left over", len(rest))
	}
}

// consume.js retries / retriesConsumerGroup: retryLimit 3, a 100-message
// batch nacked twice then acked runs the handler exactly three times, each
// time on the same whole batch; a second group still gets all 100.
func TestSDKJSBatchRetries(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	q := "test-queue-v2-retries"
	c.send("POST", "/api/v1/configure", jsCreateBody(q, `"leaseTime":300,"retryLimit":3,"priority":0,"delayedProcessing":0,"windowBuffer":0,"maxSize":0,"retentionSeconds":0,"completedRetentionSeconds":0,"encryptionEnabled":false`))
	payloads := make([]string, 100)
	for i := range payloads {
		payloads[i] = fmt.Sprintf(`{"i":%d}`, i)
	}
	c.send("POST", "/api/v1/push", jsPushBody(q, "Default", payloads...))
	runs := 0
	for {
		msgs := c.messages(c.send("GET", jsPopPath(q, "", 100, false, 30000, "consumerGroup", "retry-group"), ""))
		if len(msgs) == 0 {
			break
		}
		runs++
		if len(msgs) != 100 || msgs[0].Data.(map[string]any)["i"] != 0.0 || msgs[0].RetryCount != float64(runs-1) {
			t.Fatalf("run %d: %d messages from %v, retryCount %v", runs, len(msgs), msgs[0].Data, msgs[0].RetryCount)
		}
		status, errMsg := "failed", "handler threw"
		if runs == 3 {
			status, errMsg = "completed", ""
		}
		res := c.jsAckResults(c.send("POST", "/api/v1/ack/batch", jsAckBatchBody(msgs, status, errMsg, "retry-group")), 100)
		for i, x := range res {
			if x["success"] != true {
				t.Fatalf("run %d item %d = %v", runs, i, x)
			}
		}
		if runs > 5 {
			t.Fatal("the batch keeps coming back")
		}
	}
	if runs != 3 {
		t.Fatalf("handler ran %d times, want 3", runs)
	}
	other := c.messages(c.send("GET", jsPopPath(q, "", 100, false, 30000, "consumerGroup", "other-group"), ""))
	if len(other) != 100 {
		t.Fatalf("second group got %d, want 100", len(other))
	}
	// A stopped consumer hands its unstarted messages back with one 'retry'
	// batch ack: every item succeeds, and the same batch returns uncharged.
	res := c.jsAckResults(c.send("POST", "/api/v1/ack/batch", jsAckBatchBody(other, "retry", "", "other-group")), 100)
	for i, x := range res {
		if x["success"] != true {
			t.Fatalf("retry item %d = %v", i, x)
		}
	}
	back := c.messages(c.send("GET", jsPopPath(q, "", 100, false, 30000, "consumerGroup", "other-group"), ""))
	if len(back) != 100 || back[0].TransactionID != other[0].TransactionID || back[0].RetryCount != 0 {
		t.Fatalf("after a retry release: %d messages, retryCount %v", len(back), back[0].RetryCount)
	}
}

// consume.js autoRenewLease: leaseTime 3, a 5 s handler renewing every
// second keeps the lease, and the final ack succeeds.
func TestSDKJSAutoRenewLease(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := jsSDK(t, s)
	q := "test-queue-v2-renew"
	c.send("POST", "/api/v1/configure", jsCreateBody(q, `"leaseTime":3,"retryLimit":3,"priority":0,"delayedProcessing":0,"windowBuffer":0,"maxSize":0,"retentionSeconds":0,"completedRetentionSeconds":0,"encryptionEnabled":false`))
	c.send("POST", "/api/v1/push", jsPushBody(q, "Default", `{"n":1}`))
	msgs := c.messages(c.send("GET", jsPopPath(q, "", 1, true, 30000), ""))
	for range 5 {
		c0.Advance(time.Second)
		mustStatus(t, c.send("POST", "/api/v1/lease/"+msgs[0].LeaseID+"/extend", `{}`), http.StatusOK)
	}
	res := c.jsAckResults(c.send("POST", "/api/v1/ack/batch", jsAckBatchBody(msgs, "completed", "", "")), 1)
	if res[0]["success"] != true {
		t.Fatalf("final ack = %v", res)
	}
}

// bootstrap.js, scaled down: a group registered with subscriptionMode new
// or subscriptionFrom(<ISO cutoff>) gets nothing on its first pop over a
// queue of many partitions, then every message pushed afterwards, through
// wildcard pops that keep sending the same subscription parameters.
func TestSDKJSBootstrapManyPartitions(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := jsSDK(t, s)
	const parts = 300
	pushAll := func(q, prefix string) {
		items := make([]string, parts)
		for j := range items {
			items[j] = fmt.Sprintf(`{"queue":%q,"partition":"p-%d","payload":{"id":%d,"prefix":%q},"transactionId":%q}`, q, j, j, prefix, newTxnID())
		}
		mustStatus(t, c.send("POST", "/api/v1/push", `{"items":[`+strings.Join(items, ",")+`]}`), http.StatusCreated)
	}
	for _, mode := range []string{"new", "timestamp"} {
		q := "test-queue-v2-bootstrap-" + mode
		g := "bootstrap-cg-" + mode
		c.jsResult(c.send("DELETE", "/api/v1/consumer-groups/"+g+"?deleteMetadata=true", ""))
		pushAll(q, "historical")
		c0.Advance(2 * time.Second)
		kv := []string{"consumerGroup", g, "subscriptionMode", "new"}
		if mode == "timestamp" {
			kv = []string{"consumerGroup", g, "subscriptionFrom", c0.Now().Format("2006-01-02T15:04:05.000Z")}
		}
		if first := c.messages(c.send("GET", jsPopPath(q, "", 1, false, 30000, kv...), "")); len(first) != 0 {
			t.Fatalf("%s: first pop delivered %d historical messages", mode, len(first))
		}
		c0.Advance(time.Second)
		pushAll(q, "new")
		seen := map[float64]bool{}
		for {
			msgs := c.messages(c.send("GET", jsPopPath(q, "", 1, false, 30000, kv...), ""))
			if len(msgs) == 0 {
				break
			}
			d := msgs[0].Data.(map[string]any)
			if d["prefix"] != "new" {
				t.Fatalf("%s: delivered %v", mode, d)
			}
			seen[d["id"].(float64)] = true
			c.jsAckResults(c.send("POST", "/api/v1/ack", jsAckBody(msgs[0], "completed", "", g)), 1)
		}
		if len(seen) != parts {
			t.Fatalf("%s: group consumed %d of %d new messages", mode, len(seen), parts)
		}
	}
}

// watermark.js, over the wire: after a group consumed everything and its
// empty polls found nothing, a backward seek, a group delete and a
// per-queue group delete each re-expose all 10 messages.
func TestSDKJSReexposeAfterSeekAndDeletes(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	q, g := "test-queue-v2-watermark", "watermark-group"
	payloads := make([]string, 10)
	for i := range payloads {
		payloads[i] = fmt.Sprintf(`{"i":%d}`, i)
	}
	c.send("POST", "/api/v1/push", jsPushBody(q, "Default", payloads...))
	drain := func(step string) {
		t.Helper()
		msgs := c.messages(c.send("GET", jsPopPath(q, "", 100, false, 30000, "consumerGroup", g), ""))
		if len(msgs) != 10 {
			t.Fatalf("%s: %d messages, want all 10", step, len(msgs))
		}
		c.jsAckResults(c.send("POST", "/api/v1/ack/batch", jsAckBatchBody(msgs, "completed", "", g)), 10)
		for range 3 { // empty polls, which may leave a watermark behind
			if more := c.messages(c.send("GET", jsPopPath(q, "", 100, false, 30000, "consumerGroup", g), "")); len(more) != 0 {
				t.Fatalf("%s: %d more after draining", step, len(more))
			}
		}
	}
	drain("first pass")
	c.jsObject(c.send("POST", "/api/v1/consumer-groups/"+g+"/queues/"+q+"/seek", `{"timestamp":"1970-01-01T00:00:00.000Z"}`))
	drain("after a backward seek")
	c.jsObject(c.send("DELETE", "/api/v1/consumer-groups/"+g+"?deleteMetadata=true", ""))
	drain("after deleting the group")
	c.jsObject(c.send("DELETE", "/api/v1/consumer-groups/"+g+"/queues/"+q+"?deleteMetadata=true", ""))
	drain("after deleting the group on this queue")
}

// pop.js popV4GlobalCap / popV4DefaultOne and consume.js
// testConsumerMultiPartition / …GlobalCap: batch is a global cap across
// the partitions(N) claimed; without partitions one partition serves;
// every reply holds one leaseId.
func TestSDKJSMultiPartitionCaps(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	c := jsSDK(t, s)
	fill := func(q string, parts, per int) {
		for p := range parts {
			payloads := make([]string, per)
			for m := range payloads {
				payloads[m] = fmt.Sprintf(`{"p":%d,"m":%d}`, p, m)
			}
			c.send("POST", "/api/v1/push", jsPushBody(q, fmt.Sprintf("p%d", p), payloads...))
		}
	}
	oneLease := func(msgs []sdkMessage) {
		t.Helper()
		for _, m := range msgs {
			if m.LeaseID == "" || m.LeaseID != msgs[0].LeaseID {
				t.Fatalf("leaseIds differ within one reply: %q vs %q", m.LeaseID, msgs[0].LeaseID)
			}
		}
	}
	fill("test-queue-v2-v4-pop-cap", 5, 100)
	if msgs := c.messages(c.send("GET", jsPopPath("test-queue-v2-v4-pop-cap", "", 10, false, 30000, "partitions", "5"), "")); len(msgs) != 10 {
		t.Fatalf("batch(10).partitions(5) = %d messages", len(msgs))
	} else {
		oneLease(msgs)
	}
	fill("test-queue-v2-v4-pop-default", 4, 5)
	msgs := c.messages(c.send("GET", jsPopPath("test-queue-v2-v4-pop-default", "", 100, false, 30000), ""))
	parts := map[string]bool{}
	for _, m := range msgs {
		parts[m.PartitionID] = true
	}
	if len(msgs) != 5 || len(parts) != 1 {
		t.Fatalf("no partitions(): %d messages from %d partitions, want 5 from 1", len(msgs), len(parts))
	}
	// A partitions(3) consumer drains 3×4 with auto batch acks.
	fill("test-queue-v2-consumer-multi", 3, 4)
	got := 0
	for {
		msgs := c.messages(c.send("GET", jsPopPath("test-queue-v2-consumer-multi", "", 20, false, 30000, "partitions", "3"), ""))
		if len(msgs) == 0 {
			break
		}
		oneLease(msgs)
		got += len(msgs)
		c.jsAckResults(c.send("POST", "/api/v1/ack/batch", jsAckBatchBody(msgs, "completed", "", "")), len(msgs))
	}
	if got != 12 {
		t.Fatalf("partitions(3) consumer got %d of 12", got)
	}
}

// A path whose names hold %2F is routed on the escaped path; it goes
// through the same access check as any other request.
func TestSDKEscapedPathsKeepTheirAccessLevel(t *testing.T) {
	keys := authtest.NewKeys(t)
	s := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	c := goSDK(t, s)
	path := "/api/v1/pop/queue/" + url.PathEscape("a/b") + "/partition/" + url.PathEscape("c/d") + "?batch=1&timeout=30000&wait=false"
	if r := c.send("GET", path, ""); r.status != http.StatusUnauthorized {
		t.Fatalf("escaped pop without a token = %d %s", r.status, r.body)
	}
	readOnly := as(s, authtest.Bearer(keys.HS256(t, authtest.Claims("bob", "read-only", ""))))
	if r := readOnly.Do("GET", path, nil); r.Status != http.StatusForbidden {
		t.Fatalf("escaped pop as read-only = %d %s", r.Status, r.Body)
	}
	writer := as(s, authtest.Bearer(keys.HS256(t, authtest.Claims("alice", "read-write", ""))))
	writer.Push(map[string]any{"queue": "a/b", "partition": "c/d", "payload": map[string]any{"n": 1}})
	if p := writer.Pop(path); len(p.Messages) != 1 || p.Messages[0].Queue != "a/b" || p.Messages[0].Partition != "c/d" {
		t.Fatalf("escaped pop as read-write = %+v", p)
	}
}

// --- Streams runtimes --------------------------------------------------------

// streamsPost is the streams runtime's own HTTP client (Go HTTPClient.Post,
// JS StreamsHttpClient.post): POST with Content-Type: application/json and
// nothing else, not the main client's headers.
func (c sdk) streamsPost(path, body string) wireReply {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read POST %s: %v", path, err)
	}
	return wireReply{status: resp.StatusCode, header: resp.Header, body: data}
}

// streamsResult reads a streams reply as both runtimes do: a 2xx must be a
// JSON object (JS throws on an empty one); anything else is an error.
func (c sdk) streamsResult(r wireReply) map[string]any {
	c.t.Helper()
	if r.status < 200 || r.status > 299 {
		c.t.Fatalf("streams client error: HTTP %d: %s", r.status, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		c.t.Fatalf("streams reply is not a JSON object: %q", r.body)
	}
	return m
}

// goMarshal is how the Go runtime encodes a body: json.Marshal of a
// map[string]interface{}, so keys sorted and U+001F escaped.
func goMarshal(t testing.TB, v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsObj is JSON.stringify of an object literal: keys in the given order,
// undefined values dropped.
func jsObj(kv ...any) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			continue
		}
		v, ok := kv[i+1].(json.RawMessage)
		if !ok {
			v, _ = json.Marshal(kv[i+1])
		}
		parts = append(parts, jsonStr(kv[i].(string))+":"+string(v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// goSortMessages is the Go runner's order: createdAt parsed to µs, then
// transactionId.
func goSortMessages(t testing.TB, msgs []sdkMessage) {
	slices.SortFunc(msgs, func(a, b sdkMessage) int {
		ta, _ := time.Parse(time.RFC3339Nano, a.CreatedAt)
		tb, _ := time.Parse(time.RFC3339Nano, b.CreatedAt)
		return cmp.Or(cmp.Compare(ta.UnixMicro(), tb.UnixMicro()), strings.Compare(a.TransactionID, b.TransactionID))
	})
}

// jsSortMessages is the JS runner's order: createdAt parsed to ms, then id.
func jsSortMessages(msgs []sdkMessage) {
	slices.SortFunc(msgs, func(a, b sdkMessage) int {
		ta, _ := time.Parse(time.RFC3339Nano, a.CreatedAt)
		tb, _ := time.Parse(time.RFC3339Nano, b.CreatedAt)
		return cmp.Or(cmp.Compare(ta.UnixMilli(), tb.UnixMilli()), strings.Compare(a.ID, b.ID))
	})
}

// The Go runtime, a tumbling 2 s window summing v (tumbling_test.go):
// register, pop with the query's group, read the whole shard with keys
// null, commit the fold with the last message's ack, re-register after a
// restart with the same hash, close the window by the idle flush, and get
// the 409 of a changed chain. Checklist items 6, 8, 27 (state kept on
// re-register), 30 and 32.
func TestSDKGoStreamsTumblingRunner(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := goSDK(t, s)
	const name, src, sink = "test-go-tumbling", "test-go-tumbling-src", "test-go-tumbling-sink"
	hash := strings.Repeat("9f2c", 16)
	regBody := goMarshal(t, map[string]any{"name": name, "source_queue": src, "config_hash": hash, "reset": false, "sink_queue": sink})
	reg := c.streamsResult(c.streamsPost("/streams/v1/queries", regBody))
	qid, _ := reg["query_id"].(string)
	if reg["success"] != true || qid == "" || reg["fresh"] != true || reg["reset"] != false || reg["name"] != name {
		t.Fatalf("register = %s", c.streamsPost("/streams/v1/queries", regBody).body)
	}
	for i := 1; i <= 3; i++ {
		c.send("POST", "/api/v1/push", goPushBody(src, "one", fmt.Sprintf(`{"v":%d}`, i)))
		c0.Advance(300 * time.Millisecond)
	}
	group := "streams." + name
	pop := goPopPath(src, "", url.Values{"consumerGroup": {group}, "partitions": {"4"}}, 200, true, 1000)
	msgs := c.messages(c.send("GET", pop, ""))
	if len(msgs) != 3 {
		t.Fatalf("popped %d", len(msgs))
	}
	goSortMessages(t, msgs)
	pid := msgs[0].PartitionID
	st := c.streamsResult(c.streamsPost("/streams/v1/state/get",
		goMarshal(t, map[string]any{"query_id": qid, "partition_id": pid, "keys": []string(nil)})))
	if rows, ok := st["rows"].([]any); !ok || len(rows) != 0 {
		t.Fatalf("fresh shard = %v", st)
	}
	key := "tumb:2\u001f2026-01-01T10:00:00.000Z\u001fone"
	last := msgs[len(msgs)-1]
	cyc := goMarshal(t, map[string]any{"query_id": qid, "partition_id": pid, "consumer_group": group,
		"state_ops": []map[string]any{{"type": "upsert", "key": key,
			"value": map[string]any{"acc": map[string]any{"count": 3, "sum": 6}, "windowStart": 1767261600000, "windowEnd": 1767261602000}}},
		"push_items":    []map[string]any{},
		"ack":           map[string]any{"transactionId": last.TransactionID, "leaseId": last.LeaseID, "status": "completed", "count": 3},
		"release_lease": true})
	if !strings.Contains(cyc, `\u001f`) {
		t.Fatalf("the Go body escapes U+001F: %s", cyc)
	}
	res := c.streamsResult(c.streamsPost("/streams/v1/cycle", cyc))
	if res["success"] != true {
		t.Fatalf("cycle = %v", res)
	}

	// A restart: the same name and hash keep the id and the state.
	again := c.streamsResult(c.streamsPost("/streams/v1/queries", regBody))
	if again["query_id"] != qid || again["fresh"] != false {
		t.Fatalf("re-register = %v", again)
	}
	st = c.streamsResult(c.streamsPost("/streams/v1/state/get",
		goMarshal(t, map[string]any{"query_id": qid, "partition_id": pid, "keys": []string(nil)})))
	if rows := st["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["key"] != key {
		t.Fatalf("state after re-register = %v", st)
	}
	// The cursor persisted: nothing is redelivered to the new runner.
	if more := c.messages(c.send("GET", goPopPath(src, "", url.Values{"consumerGroup": {group}, "partitions": {"4"}}, 200, false, 1000), "")); len(more) != 0 {
		t.Fatalf("after the restart the group got %d messages", len(more))
	}

	// Idle flush at clock - grace: a window ending exactly then is ripe.
	flush := func(ripeAt int64) []any {
		r := c.streamsResult(c.streamsPost("/streams/v1/state/get", goMarshal(t, map[string]any{"query_id": qid,
			"partition_id": pid, "keys": []string{}, "key_prefix": "tumb:2\u001f", "ripe_at_or_before": ripeAt})))
		return r["rows"].([]any)
	}
	if rows := flush(1767261601999); len(rows) != 0 {
		t.Fatalf("unripe window flushed: %v", rows)
	}
	rows := flush(1767261602000)
	if len(rows) != 1 {
		t.Fatalf("ripe rows = %v", rows)
	}
	row := rows[0].(map[string]any)
	value := row["value"].(map[string]any)
	acc := value["acc"].(map[string]any)
	if row["key"] != key || acc["sum"] != float64(6) || acc["count"] != float64(3) || value["windowEnd"] != float64(1767261602000) {
		t.Fatalf("ripe row = %v", row)
	}
	fl := goMarshal(t, map[string]any{"query_id": qid, "partition_id": pid, "consumer_group": group,
		"state_ops":  []map[string]any{{"type": "delete", "key": key}},
		"push_items": []map[string]any{{"queue": sink, "partition": "one", "payload": map[string]any{"count": 3, "sum": 6}}},
		"ack":        nil, "release_lease": true})
	res = c.streamsResult(c.streamsPost("/streams/v1/cycle", fl))
	if res["success"] != true || res["ack_result"] != nil || res["state_ops_applied"] != float64(1) {
		t.Fatalf("flush cycle = %v", res)
	}
	out := c.messages(c.send("GET", goPopPath(sink, "", url.Values{"consumerGroup": {"check"}}, 50, true, 1000), ""))
	if len(out) != 1 || goData(t, out[0])["sum"] != float64(6) || out[0].Partition != "one" {
		t.Fatalf("sink = %+v", out)
	}
	if rows := flush(1767261602000); len(rows) != 0 {
		t.Fatalf("flushed window still stored: %v", rows)
	}

	// A changed chain without reset: 409 whose error names the mismatch.
	r := c.streamsPost("/streams/v1/queries", goMarshal(t, map[string]any{"name": name, "source_queue": src,
		"config_hash": strings.Repeat("0", 64), "reset": false, "sink_queue": sink}))
	var body map[string]any
	json.Unmarshal(r.body, &body)
	if e, _ := body["error"].(string); r.status != http.StatusConflict || !strings.Contains(e, "config_hash mismatch") {
		t.Fatalf("changed hash = %d %s", r.status, r.body)
	}
}

// The Go gate (gate_test.go): two partitions popped under one lease, batch
// 10; partition A's cycle allows 3 and keeps the lease, partition B's
// allows all and releases only B's. A's tail returns in order after the
// lease expires, without a retry charge. Checklist items 9 and 33.
func TestSDKGoStreamsGatePartialAcks(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := goSDK(t, s)
	const name, src, sink = "test-go-gate", "test-go-gate-src", "test-go-gate-sink"
	c.send("POST", "/api/v1/configure", `{"queue":"test-go-gate-src","options":{"leaseTime":2,"retryLimit":100}}`)
	reg := c.streamsResult(c.streamsPost("/streams/v1/queries", goMarshal(t, map[string]any{"name": name,
		"source_queue": src, "config_hash": strings.Repeat("ab", 32), "reset": false, "sink_queue": sink})))
	qid := reg["query_id"].(string)
	for _, p := range []string{"tenant-a", "tenant-b"} {
		var payloads []string
		for i := range 5 {
			payloads = append(payloads, fmt.Sprintf(`{"tenant":%q,"seq":%d}`, p, i))
		}
		c.send("POST", "/api/v1/push", goPushBody(src, p, payloads...))
	}
	group := "streams." + name
	pop := goPopPath(src, "", url.Values{"consumerGroup": {group}, "partitions": {"2"}}, 10, true, 1000)
	msgs := c.messages(c.send("GET", pop, ""))
	if len(msgs) != 10 {
		t.Fatalf("popped %d, want 10", len(msgs))
	}
	byPart := map[string][]sdkMessage{}
	for _, m := range msgs {
		byPart[m.Partition] = append(byPart[m.Partition], m)
	}
	if byPart["tenant-a"][0].LeaseID != byPart["tenant-b"][0].LeaseID {
		t.Fatalf("a multi-partition pop under two leases")
	}
	commit := func(ms []sdkMessage, allowed int, release bool) map[string]any {
		goSortMessages(t, ms)
		var items []map[string]any
		for _, m := range ms[:allowed] {
			items = append(items, map[string]any{"queue": sink, "partition": m.Partition, "payload": goData(t, m)})
		}
		k := ms[allowed-1]
		return c.streamsResult(c.streamsPost("/streams/v1/cycle", goMarshal(t, map[string]any{"query_id": qid,
			"partition_id": k.PartitionID, "consumer_group": group,
			"state_ops":     []map[string]any{{"type": "upsert", "key": k.Partition, "value": map[string]any{"tokens": 0, "lastRefillAt": 1}}},
			"push_items":    items,
			"ack":           map[string]any{"transactionId": k.TransactionID, "leaseId": k.LeaseID, "status": "completed", "count": allowed},
			"release_lease": release})))
	}
	if res := commit(byPart["tenant-a"], 3, false); res["success"] != true {
		t.Fatalf("partial cycle = %v", res)
	}
	if res := commit(byPart["tenant-b"], 5, true); res["success"] != true {
		t.Fatalf("B's cycle after A's partial one = %v", res)
	}
	// B is free again, A still leased.
	c.send("POST", "/api/v1/push", goPushBody(src, "tenant-b", `{"tenant":"tenant-b","seq":5}`))
	next := c.messages(c.send("GET", pop, ""))
	if len(next) != 1 || next[0].Partition != "tenant-b" {
		t.Fatalf("while A is leased the pop got %+v", next)
	}
	commit(next, 1, true)
	c0.Advance(2100 * time.Millisecond)
	tail := c.messages(c.send("GET", pop, ""))
	goSortMessages(t, tail)
	var seqs []float64
	for _, m := range tail {
		if m.Partition != "tenant-a" || m.RetryCount != 0 {
			t.Fatalf("tail message %+v", m)
		}
		seqs = append(seqs, goData(t, m)["seq"].(float64))
	}
	if fmt.Sprint(seqs) != "[3 4]" {
		t.Fatalf("tail after expiry = %v, want [3 4]", seqs)
	}
	if res := commit(tail, 2, true); res["success"] != true {
		t.Fatalf("tail cycle = %v", res)
	}
	// The sink got each message once, in order per tenant.
	got := map[string][]float64{}
	for {
		out := c.messages(c.send("GET", goPopPath(sink, "", url.Values{"consumerGroup": {"check"}}, 50, false, 1000), ""))
		if len(out) == 0 {
			break
		}
		for _, m := range out {
			got[m.Partition] = append(got[m.Partition], goData(t, m)["seq"].(float64))
		}
		c.send("POST", "/api/v1/ack/batch", goAckBatchBody(out, "completed", "", "check"))
	}
	if fmt.Sprint(got) != "map[tenant-a:[0 1 2 3 4] tenant-b:[0 1 2 3 4 5]]" {
		t.Fatalf("sink = %v", got)
	}
}

// The JS runtime (tumbling.js, session.js, operators.js, combined.js,
// recovery.js): the bodies JSON.stringify puts on the wire, keys in the
// runtime's order. A session chain keyed by user shares one shard; a
// foreach query registers without sink_queue and commits empty
// push_items; two queries on one partition keep separate groups and
// shards; reset:true with a new hash wipes the state. Checklist items 3,
// 12, 22-24, 31, 35, 36.
func TestSDKJSStreamsRuntime(t *testing.T) {
	c0 := clock.NewManual(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := jsSDK(t, s)
	const src = "test-js-session-src"
	register := func(name, sink, hash string, reset bool) map[string]any {
		var sinkV any
		if sink != "" {
			sinkV = sink
		}
		return c.streamsResult(c.streamsPost("/streams/v1/queries", jsObj("name", name, "source_queue", src,
			"sink_queue", sinkV, "config_hash", hash, "reset", reset)))
	}
	sess := register("test-js-session", "test-js-session-sink", strings.Repeat("1a", 32), false)
	each := register("test-js-foreach", "", strings.Repeat("2b", 32), false)
	if sess["query_id"] == each["query_id"] || each["fresh"] != true {
		t.Fatalf("registrations = %v %v", sess, each)
	}
	c.send("POST", "/api/v1/push", jsPushBody(src, "Default", `{"user":"alice","v":1}`, `{"user":"bob","v":10}`))
	c.send("POST", "/api/v1/push", jsPushBody(src, "Default", `{"user":"alice","v":2}`, `{"user":"bob","v":20}`))

	run := func(q map[string]any, fold func(msgs []sdkMessage, state map[string]any) (ops, items []any)) {
		qid := q["query_id"].(string)
		group := "streams." + q["name"].(string)
		msgs := c.messages(c.send("GET", jsPopPath(src, "", 200, true, 1000, "consumerGroup", group), ""))
		if len(msgs) != 4 {
			t.Fatalf("%s popped %d, want 4", group, len(msgs))
		}
		jsSortMessages(msgs)
		for i, m := range msgs {
			if m.raw["consumerGroup"] != group {
				t.Fatalf("message consumerGroup %v, want %s", m.raw["consumerGroup"], group)
			}
			if d, ok := m.Data.(map[string]any); !ok || d["v"] == nil {
				t.Fatalf("message %d data %v", i, m.Data)
			}
		}
		pid := msgs[0].PartitionID
		st := c.streamsResult(c.streamsPost("/streams/v1/state/get", jsObj("query_id", qid, "partition_id", pid, "keys", raw("[]"))))
		state := map[string]any{}
		for _, r := range st["rows"].([]any) {
			row := r.(map[string]any)
			state[row["key"].(string)] = row["value"]
		}
		ops, items := fold(msgs, state)
		last := msgs[len(msgs)-1]
		res := c.streamsResult(c.streamsPost("/streams/v1/cycle", jsObj("query_id", qid, "partition_id", pid,
			"consumer_group", last.raw["consumerGroup"], "state_ops", ops, "push_items", items,
			"ack", raw(jsObj("transactionId", last.TransactionID, "leaseId", last.LeaseID, "status", "completed", "count", len(msgs))),
			"release_lease", true)))
		if res["success"] != true {
			t.Fatalf("%s cycle = %v", group, res)
		}
	}

	// Sessions keyed by user share the partition's one shard.
	run(sess, func(msgs []sdkMessage, state map[string]any) ([]any, []any) {
		acc := map[string][2]float64{}
		for _, m := range msgs {
			d := m.Data.(map[string]any)
			u := d["user"].(string)
			a := acc[u]
			acc[u] = [2]float64{a[0] + 1, a[1] + d["v"].(float64)}
		}
		var ops []any
		for _, u := range []string{"alice", "bob"} {
			ops = append(ops, map[string]any{"type": "upsert", "key": "sess:1000\u001fopen\u001f" + u,
				"value": map[string]any{"acc": map[string]any{"count": acc[u][0], "sum": acc[u][1]}, "sessionStart": 1767261600000, "lastEventTime": 1767261600000}})
		}
		return ops, []any{}
	})
	// foreach: effects ran in the client; the cycle carries only the ack.
	run(each, func(msgs []sdkMessage, state map[string]any) ([]any, []any) {
		if len(state) != 0 {
			t.Fatalf("the foreach query sees state %v", state)
		}
		return []any{}, []any{}
	})

	sessID := sess["query_id"].(string)
	pidOf := func() string {
		msgs := c.messages(c.send("GET", jsPopPath(src, "", 10, false, 1000, "consumerGroup", "peek", "autoAck", "true"), ""))
		return msgs[0].PartitionID
	}
	pid := pidOf()
	st := c.streamsResult(c.streamsPost("/streams/v1/state/get", jsObj("query_id", sessID, "partition_id", pid, "keys", raw("[]"))))
	rows := st["rows"].([]any)
	if len(rows) != 2 {
		t.Fatalf("session shard = %v", rows)
	}
	for i, u := range []string{"alice", "bob"} {
		row := rows[i].(map[string]any)
		acc := row["value"].(map[string]any)["acc"].(map[string]any)
		want := map[string][2]float64{"alice": {2, 3}, "bob": {2, 30}}[u]
		if row["key"] != "sess:1000\u001fopen\u001f"+u || acc["count"] != want[0] || acc["sum"] != want[1] {
			t.Fatalf("session row %d = %v", i, row)
		}
	}
	if other := c.streamsResult(c.streamsPost("/streams/v1/state/get", jsObj("query_id", each["query_id"], "partition_id", pid, "keys", raw("[]")))); len(other["rows"].([]any)) != 0 {
		t.Fatalf("the foreach query shares the session shard: %v", other)
	}
	// The session flush (ack null): whole-shard read, close alice's.
	res := c.streamsResult(c.streamsPost("/streams/v1/cycle", jsObj("query_id", sessID, "partition_id", pid,
		"consumer_group", "streams.test-js-session",
		"state_ops", []any{map[string]any{"type": "delete", "key": "sess:1000\u001fopen\u001falice"}},
		"push_items", []any{map[string]any{"queue": "test-js-session-sink", "partition": "Default", "payload": map[string]any{"count": 2, "sum": 3}}},
		"ack", nil, "release_lease", true)))
	if res["success"] != true || res["ack_result"] != nil {
		t.Fatalf("session flush = %v", res)
	}
	// JS passes ack || null: an explicit null is the same.
	res = c.streamsResult(c.streamsPost("/streams/v1/cycle", jsObj("query_id", sessID, "partition_id", pid,
		"consumer_group", "streams.test-js-session", "state_ops", []any{}, "push_items", []any{}, "ack", raw("null"), "release_lease", true)))
	if res["success"] != true || res["state_ops_applied"] != float64(0) {
		t.Fatalf("empty flush = %v", res)
	}

	// recovery.js: a new shape with reset:true wipes state, keeps the id.
	r := c.streamsPost("/streams/v1/queries", jsObj("name", "test-js-session", "source_queue", src,
		"sink_queue", "never", "config_hash", strings.Repeat("3c", 32), "reset", false))
	var body struct{ Error string }
	json.Unmarshal(r.body, &body)
	if r.status != http.StatusConflict || !regexp.MustCompile(`(?i)config_hash mismatch`).MatchString(body.Error) {
		t.Fatalf("recoveryConfigHashMismatchRejects = %d %s", r.status, r.body)
	}
	reset := register("test-js-session", "never", strings.Repeat("3c", 32), true)
	if reset["query_id"] != sessID || reset["reset"] != true {
		t.Fatalf("reset = %v", reset)
	}
	st = c.streamsResult(c.streamsPost("/streams/v1/state/get", jsObj("query_id", sessID, "partition_id", pid, "keys", raw("[]"))))
	if len(st["rows"].([]any)) != 0 {
		t.Fatalf("state after reset = %v", st)
	}
	if sinkMsgs := c.messages(c.send("GET", jsPopPath("test-js-session-sink", "", 50, false, 1000), "")); len(sinkMsgs) != 1 {
		t.Fatalf("session sink holds %d", len(sinkMsgs))
	}
}

// pyObj is a Python dict: its keys in insertion order.
type pyObj []any

// pyDumps is json.dumps, which the Python runtime's httpx client sends for
// json=: ", " and ": " between items, everything outside printable ASCII
// escaped as \uXXXX.
func pyDumps(v any) string {
	switch x := v.(type) {
	case pyObj:
		parts := make([]string, 0, len(x)/2)
		for i := 0; i+1 < len(x); i += 2 {
			parts = append(parts, pyDumps(x[i])+": "+pyDumps(x[i+1]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyDumps(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		var b strings.Builder
		b.WriteByte('"')
		for _, r := range x {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20 || r > 0x7e:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		return b.String()
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case int:
		return fmt.Sprint(x)
	case int64:
		return fmt.Sprint(x)
	}
	panic(fmt.Sprintf("pyDumps: %T", v))
}

// pyWindow is one window row as the Python sliding reducer keeps it.
type pyWindow struct {
	key             string
	start, end, n   int64
	seeded, touched bool
}

// pyFoldSliding is the Python runtime's sliding window (size 4 s, slide
// 2 s) with aggregate {count, sum of v = 1} over one partition's batch:
// seed every loaded row, fold each message into its two windows, and at
// the batch's newest createdAt close what has ended (emit, and delete if
// it was loaded) and upsert the rest it touched. It returns the cycle's
// state_ops and push_items.
func pyFoldSliding(t *testing.T, rows []any, msgs []sdkMessage, sink, partition string) (ops, items []any) {
	t.Helper()
	const size, slide = 4000, 2000
	var order []string
	acc := map[string]*pyWindow{}
	for _, r := range rows {
		row := r.(map[string]any)
		v := row["value"].(map[string]any)
		a := v["acc"].(map[string]any)
		k := row["key"].(string)
		acc[k] = &pyWindow{key: k, start: int64(v["windowStart"].(float64)), end: int64(v["windowEnd"].(float64)),
			n: int64(a["count"].(float64)), seeded: true}
		order = append(order, k)
	}
	clock := int64(math.MinInt64)
	for _, m := range msgs {
		at, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
		if err != nil {
			t.Fatal(err)
		}
		ts := at.UnixMilli()
		clock = max(clock, ts)
		latest := ts / slide * slide
		for i := range int64(size / slide) {
			start := latest - i*slide
			if ts < start || ts >= start+size {
				continue
			}
			k := "slide:4:2\u001f" + time.UnixMilli(start).UTC().Format("2006-01-02T15:04:05.000Z") + "\u001f" + m.PartitionID
			w := acc[k]
			if w == nil {
				w = &pyWindow{key: k, start: start, end: start + size}
				acc[k] = w
				order = append(order, k)
			}
			w.n++
			w.touched = true
		}
	}
	ops, items = []any{}, []any{}
	for _, k := range order {
		w := acc[k]
		switch {
		case w.end <= clock:
			items = append(items, pyObj{"queue", sink, "partition", partition, "payload", pyObj{"count", w.n, "sum", w.n}})
			if w.seeded {
				ops = append(ops, pyObj{"type", "delete", "key", k})
			}
		case w.touched:
			ops = append(ops, pyObj{"type", "upsert", "key", k,
				"value", pyObj{"acc", pyObj{"count", w.n, "sum", w.n}, "windowStart", w.start, "windowEnd", w.end}})
		}
	}
	return ops, items
}

// The Python runtime, Queen's test_slidingEventsAppearInOverlappingWindows
// (window 4 s, slide 2 s, idle flush): its main loop and its idle-flush
// timer are two asyncio tasks, each of which reads the shard and commits
// later, so their requests interleave. Replayed here in the orders that
// emitted one window twice (the sink got counts 2,2,4,4,4,2): the flush
// committing after the batch cycle that closed the same window, the flush
// committing while a batch is in flight, a flush retried after a lost
// reply, and a flush computed before a late event was folded into its
// window. Every window reaches the sink once, with all of its events.
func TestSDKPyStreamsSlidingWindowIsEmittedOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	c0 := clock.NewManual(t0)
	s := combtest.MustServer(t, combtest.Options{Clock: c0})
	c := sdk{t: t, base: s.URL, http: s.HTTP.Client()}
	const name, src, sink = "slidingEventsAppearInOverlappingWindows-q", "sliding-src", "sliding-sink"
	reg := c.streamsResult(c.streamsPost("/streams/v1/queries", pyDumps(pyObj{"name", name, "source_queue", src,
		"config_hash", strings.Repeat("5e", 32), "reset", true, "sink_queue", sink})))
	qid, _ := reg["query_id"].(string)
	if reg["success"] != true || qid == "" {
		t.Fatalf("register = %v", reg)
	}
	group := "streams." + name
	at := func(ms int64) { c0.Set(t0.Add(time.Duration(ms) * time.Millisecond)) }
	pushed := 0
	push := func() {
		pushed++
		c.send("POST", "/api/v1/push", goPushBody(src, "p", fmt.Sprintf(`{"v": 1, "i": %d}`, pushed)))
	}
	// The main loop's pop and whole-shard read.
	pop := func() ([]sdkMessage, []any) {
		msgs := c.messages(c.send("GET", "/api/v1/pop/queue/"+src+"?batch=50&wait=true&timeout=1000&consumerGroup="+
			url.QueryEscape(group)+"&partitions=4", ""))
		if len(msgs) == 0 {
			t.Fatal("the main loop popped nothing")
		}
		st := c.streamsResult(c.streamsPost("/streams/v1/state/get", pyDumps(pyObj{"query_id", qid,
			"partition_id", msgs[0].PartitionID, "keys", []any{}})))
		return msgs, st["rows"].([]any)
	}
	var pid string
	// The main loop's cycle, folded from what it read.
	commit := func(msgs []sdkMessage, rows []any) {
		t.Helper()
		ops, items := pyFoldSliding(t, rows, msgs, sink, "p")
		last := msgs[len(msgs)-1]
		res := c.streamsResult(c.streamsPost("/streams/v1/cycle", pyDumps(pyObj{"query_id", qid, "partition_id", pid,
			"consumer_group", group, "state_ops", ops, "push_items", items,
			"ack", pyObj{"transactionId", last.TransactionID, "leaseId", last.LeaseID, "status", "completed", "count", len(msgs)},
			"release_lease", true})))
		if res["success"] != true {
			t.Fatalf("batch cycle = %v", res)
		}
	}
	// The flush timer's ripe read, and the cycle it builds from it.
	ripe := func(nowMs int64) string {
		st := c.streamsResult(c.streamsPost("/streams/v1/state/get", pyDumps(pyObj{"query_id", qid, "partition_id", pid,
			"keys", []any{}, "key_prefix", "slide:4:2\u001f", "ripe_at_or_before", t0.UnixMilli() + nowMs})))
		var ops, items []any
		for _, r := range st["rows"].([]any) {
			row := r.(map[string]any)
			a := row["value"].(map[string]any)["acc"].(map[string]any)
			n := int64(a["count"].(float64))
			ops = append(ops, pyObj{"type", "delete", "key", row["key"]})
			items = append(items, pyObj{"queue", sink, "partition", "p", "payload", pyObj{"count", n, "sum", n}})
		}
		if len(ops) == 0 {
			return ""
		}
		return pyDumps(pyObj{"query_id", qid, "partition_id", pid, "consumer_group", group, "state_ops", ops,
			"push_items", items, "ack", nil, "release_lease", true})
	}
	flush := func(body string) map[string]any {
		t.Helper()
		if body == "" {
			t.Fatal("the flush found nothing ripe")
		}
		res := c.streamsResult(c.streamsPost("/streams/v1/cycle", body))
		if res["success"] != true { // a failed flush counts in errorsTotal
			t.Fatalf("flush cycle = %v", res)
		}
		return res
	}
	applied := func(res map[string]any) bool { return res["state_ops_applied"] != float64(0) }

	// 10:00:00.5, e1: windows [58,02) and [00,04) open.
	at(500)
	push()
	msgs, rows := pop()
	pid = msgs[0].PartitionID
	commit(msgs, rows)

	// 10:00:02.3, e2: the main loop pops and reads; the flush reads [58,02)
	// as ripe; the batch cycle closes it, then the flush commits.
	at(2300)
	push()
	msgs, rows = pop()
	body := ripe(2300)
	commit(msgs, rows)
	if res := flush(body); applied(res) {
		t.Errorf("a flush closed a window the batch cycle had closed: %v", res)
	}

	// 10:00:04.4, e3: the flush reads [00,04) as ripe and commits while the
	// batch is in flight; the batch cycle then closes the window.
	at(4400)
	push()
	msgs, rows = pop()
	if res := flush(ripe(4400)); applied(res) {
		t.Errorf("a flush applied while a batch was in flight: %v", res)
	}
	commit(msgs, rows)

	// 10:00:06.5, quiet: the flush closes [02,06); its retry (the reply was
	// lost) must not emit it again.
	at(6500)
	body = ripe(6500)
	if res := flush(body); !applied(res) {
		t.Fatalf("the flush of a quiet partition did not apply: %v", res)
	}
	if res := flush(body); applied(res) {
		t.Errorf("a retried flush applied twice: %v", res)
	}

	// 10:00:07.9, e4 belongs to [04,08): the main loop pops it and reads;
	// by 08.3 the flush reads [04,08) as ripe; the batch cycle folds e4
	// into it at 08.31, and only then does the flush commit.
	at(7900)
	push()
	msgs, rows = pop()
	at(8300)
	body = ripe(8300)
	at(8310)
	commit(msgs, rows)
	if res := flush(body); applied(res) {
		t.Errorf("a flush read before a late event closed its window without it: %v", res)
	}
	at(8400)
	if res := flush(ripe(8400)); !applied(res) {
		t.Fatalf("the next flush did not close [04,08): %v", res)
	}

	out := c.messages(c.send("GET", "/api/v1/pop/queue/"+sink+"?batch=50&wait=false&timeout=1000&consumerGroup=check&autoAck=true", ""))
	var counts []float64
	for _, m := range out {
		counts = append(counts, goData(t, m)["count"].(float64))
	}
	// [58,02) e1; [00,04) e1 e2; [02,06) e2 e3; [04,08) e3 e4.
	if want := []float64{1, 2, 2, 2}; !slices.Equal(counts, want) {
		t.Fatalf("the sink got windows of counts %v, want %v", counts, want)
	}
}
