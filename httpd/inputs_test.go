package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// TestThePackageRefusesWhatHTTPRefusesWithTheSameError pushes each bad
// item over HTTP and through broker.Push: both refuse it, with the same
// words, naming the item and the rule, and neither stores anything.
func TestThePackageRefusesWhatHTTPRefusesWithTheSameError(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	long := strings.Repeat("é", broker.MaxNameLength+1) // 256 characters, 512 bytes
	atBound := strings.Repeat("é", broker.MaxNameLength)
	cases := []struct {
		name string
		wire map[string]any
		item combtype.PushItem
		want string
	}{
		{"empty queue", map[string]any{"queue": "", "payload": 1}, combtype.PushItem{Payload: []byte("1")},
			"Queue must be a non-empty string (items[1].queue)"},
		{"long queue", map[string]any{"queue": long, "payload": 1}, combtype.PushItem{Queue: long, Payload: []byte("1")},
			"items[1].queue is 256 characters long; at most 255 are accepted"},
		{"long partition", map[string]any{"queue": "q", "partition": long, "payload": 1},
			combtype.PushItem{Queue: "q", Partition: long, Payload: []byte("1")},
			"items[1].partition is 256 characters long; at most 255 are accepted"},
		{"long transactionId", map[string]any{"queue": "q", "transactionId": strings.Repeat("t", 1<<20), "payload": 1},
			combtype.PushItem{Queue: "q", TxnID: strings.Repeat("t", 1<<20), Payload: []byte("1")},
			"items[1].transactionId is 1048576 characters long; at most 255 are accepted"},
		{"NUL in a name", map[string]any{"queue": "q\x00r", "payload": 1}, combtype.PushItem{Queue: "q\x00r", Payload: []byte("1")},
			`items[1].queue holds a NUL character (\u0000)`},
		{"traceId not a UUID", map[string]any{"queue": "q", "traceId": "nope", "payload": 1},
			combtype.PushItem{Queue: "q", TraceID: "nope", Payload: []byte("1")}, "TraceId must be a valid UUID (items[1].traceId)"},
		{"NUL in the payload", map[string]any{"queue": "q", "payload": map[string]any{"s": "a\x00b"}},
			combtype.PushItem{Queue: "q", Payload: []byte(`{"s":"a\u0000b"}`)},
			`items[1].payload holds \u0000 at byte 7: JSON stores (PostgreSQL jsonb, so Queen) cannot hold a NUL character`},
		{"number beyond a double", map[string]any{"queue": "q", "payload": json.RawMessage(`{"n":1e400}`)},
			combtype.PushItem{Queue: "q", Payload: []byte(`{"n":1e400}`)},
			`items[1].payload holds the number 1e400 at byte 5, beyond the range of a double (about 1.8e308): JSON readers cannot hold it`},
		{"NUL in a payload key", map[string]any{"queue": "q", "payload": map[string]any{"a\x00": 1}},
			combtype.PushItem{Queue: "q", Payload: []byte(`{"a\u0000":1}`)},
			`items[1].payload holds \u0000 at byte 3: JSON stores (PostgreSQL jsonb, so Queen) cannot hold a NUL character`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good := map[string]any{"queue": "fine", "payload": 1}
			r := s.Do("POST", "/api/v1/push", map[string]any{"items": []any{good, c.wire}})
			if r.Status != http.StatusBadRequest || errorOf(t, r) != c.want {
				t.Errorf("HTTP: %d %s\nwant 400 %q", r.Status, r.Body, c.want)
			}
			_, err := s.Broker.Push(context.Background(), []combtype.PushItem{{Queue: "fine", Payload: []byte("1")}, c.item})
			var in *broker.InputError
			if !errors.As(err, &in) || !errors.Is(err, combtype.ErrInvalid) || err.Error() != c.want {
				t.Errorf("broker.Push: %v\nwant an *InputError %q", err, c.want)
			}
		})
	}
	// Nothing of the refused pushes was stored, not even their good items.
	if p := s.Pop("/api/v1/pop/queue/fine?wait=false"); p.Status != http.StatusNoContent {
		t.Errorf("pop after refused pushes = %d, %d messages", p.Status, len(p.Messages))
	}
	// A name of 255 characters, the bound, is stored and delivered.
	s.Push(map[string]any{"queue": atBound, "partition": atBound, "transactionId": atBound, "payload": 1})
	if p := s.Pop("/api/v1/pop/queue/" + url.PathEscape(atBound) + "/partition/" + url.PathEscape(atBound) + "?wait=false"); len(p.Messages) != 1 {
		t.Errorf("pop of names at the bound = %d, %d messages", p.Status, len(p.Messages))
	}
}

// TestAPushOfTooManyItemsIsRefusedNamingTheBound sends one item more than
// a push may hold, over HTTP and through broker.Push.
func TestAPushOfTooManyItemsIsRefusedNamingTheBound(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	items := make([]any, broker.MaxPushItems+1)
	goItems := make([]combtype.PushItem, len(items))
	for i := range items {
		items[i] = map[string]any{"queue": "many", "payload": i}
		goItems[i] = combtype.PushItem{Queue: "many", Payload: []byte("1")}
	}
	want := "a push holds at most 10000 items (got more than 10000); split it into smaller pushes"
	r := s.Do("POST", "/api/v1/push", map[string]any{"items": items})
	if r.Status != http.StatusBadRequest || errorOf(t, r) != want {
		t.Errorf("HTTP: %d %s\nwant 400 %q", r.Status, r.Body, want)
	}
	if _, err := s.Broker.Push(context.Background(), goItems); err == nil || err.Error() != want {
		t.Errorf("broker.Push: %v\nwant %q", err, want)
	}
	// At the bound it goes through.
	r = s.Do("POST", "/api/v1/push", map[string]any{"items": items[:broker.MaxPushItems]})
	if r.Status != http.StatusCreated {
		t.Errorf("a push of %d items = %d %.200s", broker.MaxPushItems, r.Status, r.Body)
	}
}

// TestAPackagePushThatIsNotJSONIsRefusedAndHTTPPopsGoOn is the embedder's
// mix: a Go push of a payload that is not JSON used to be stored, and then
// every HTTP pop of its partition answered 400 for ever.
func TestAPackagePushThatIsNotJSONIsRefusedAndHTTPPopsGoOn(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	ctx := context.Background()
	for _, bad := range []string{"hello not json", "hellonotjson", `{"a":1`, `1 2`, "\xff", `"\ud800"`} {
		_, err := s.Broker.Push(ctx, []combtype.PushItem{{Queue: "raw", Payload: []byte(bad)}})
		if !errors.Is(err, combtype.ErrInvalid) || !strings.HasPrefix(err.Error(), "items[0].payload ") {
			t.Errorf("broker.Push of %q: %v, want it refused naming items[0].payload", bad, err)
		}
	}
	if _, err := s.Broker.Push(ctx, []combtype.PushItem{{Queue: "raw", Payload: []byte(` {"ok": true} `)}}); err != nil {
		t.Fatal(err)
	}
	p := s.Pop("/api/v1/pop/queue/raw?wait=false")
	if p.Status != http.StatusOK || len(p.Messages) != 1 || string(p.Messages[0].Data) != `{"ok":true}` {
		t.Fatalf("HTTP pop = %d %+v", p.Status, p.Messages)
	}
}

// TestANameOverTheBoundIsRefusedOnEveryRouteThatStoresIt: a pop creates
// a group's cursors, a configure a queue, a transaction and a stream
// cycle push; each refuses a name longer than broker.MaxNameLength as a
// push does, over HTTP and from Go.
func TestANameOverTheBoundIsRefusedOnEveryRouteThatStoresIt(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	ctx := context.Background()
	long := strings.Repeat("g", broker.MaxNameLength+1)
	s.Push(item("q", 1))

	r := s.Do("GET", "/api/v1/pop/queue/q?wait=false&consumerGroup="+long, nil)
	want := "consumerGroup is 256 characters long; at most 255 are accepted"
	if r.Status != http.StatusBadRequest || errorOf(t, r) != want {
		t.Errorf("pop: %d %s, want 400 %q", r.Status, r.Body, want)
	}
	if _, err := s.Broker.Pop(ctx, combtype.PopRequest{Queue: "q", Group: long, Batch: 1}); err == nil || err.Error() != want {
		t.Errorf("broker.Pop: %v, want %q", err, want)
	}

	r = s.Do("POST", "/api/v1/configure", map[string]any{"queue": "q", "namespace": long})
	want = "namespace is 256 characters long; at most 255 are accepted"
	if r.Status != http.StatusBadRequest || errorOf(t, r) != want {
		t.Errorf("configure: %d %s, want 400 %q", r.Status, r.Body, want)
	}
	if _, _, err := s.Broker.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "q", Namespace: long}); err == nil || err.Error() != want {
		t.Errorf("broker.Configure: %v, want %q", err, want)
	}

	r = s.Do("POST", "/api/v1/transaction", map[string]any{"operations": []any{map[string]any{"type": "push",
		"items": []any{map[string]any{"queue": "q", "transactionId": long, "payload": 1}}}}})
	want = "PUSH operation failed: operations[0]: items[0].transactionId is 256 characters long; at most 255 are accepted"
	var tx struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	r.JSON(t, &tx)
	if tx.Success || tx.Error != want {
		t.Errorf("transaction: %d %s, want the failure %q", r.Status, r.Body, want)
	}
	_, err := s.Broker.Transaction(ctx, []combtype.TxOp{{Type: "push", Items: []combtype.PushItem{{Queue: "q", TxnID: long, Payload: []byte("1")}}}})
	if err == nil || err.Error() != want {
		t.Errorf("broker.Transaction: %v, want %q", err, want)
	}
	// A seek stores the group's cursors, as a pop does (before, a seek
	// stored a group of any name, NUL and invalid UTF-8 included).
	for group, want := range map[string]string{
		long:     "consumerGroup is 256 characters long; at most 255 are accepted",
		"g\x00h": `consumerGroup holds a NUL character (\u0000)`,
	} {
		for _, path := range []string{"/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/q/seek",
			"/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/q/partitions/Default/seek"} {
			r = s.Do("POST", path, map[string]any{"toEnd": true})
			if r.Status != http.StatusBadRequest || errorOf(t, r) != want {
				t.Errorf("seek %.60s: %d %s, want 400 %q", path, r.Status, r.Body, want)
			}
		}
		if _, err := s.Broker.GroupSeek(ctx, combtype.SeekRequest{Group: group, Queue: "q", Target: combtype.SeekTarget{ToEnd: true}}); err == nil || err.Error() != want {
			t.Errorf("broker.GroupSeek: %v, want %q", err, want)
		}
	}
	if r := s.Do("GET", "/api/v1/consumer-groups", nil); strings.Contains(string(r.Body), "ggg") || strings.Contains(string(r.Body), `g\u0000h`) {
		t.Errorf("groups after the refused seeks: %.300s", r.Body)
	}
	if p := s.Pop("/api/v1/pop/queue/q?batch=10&wait=false"); len(p.Messages) != 1 {
		t.Errorf("after the refusals the queue holds %d messages, want the 1 pushed", len(p.Messages))
	}
}

// TestAStoredPayloadThatIsNotJSONDoesNotFailItsPop writes, below the
// broker, a payload that is not JSON (as a file from an older comb may
// hold) and pops its partition over HTTP: the reply is valid JSON, the
// payload a string of its bytes, the message beside it delivered.
func TestAStoredPayloadThatIsNotJSONDoesNotFailItsPop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	st, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Push(context.Background(), "", []combtype.PushItem{{Queue: "old", Payload: []byte("hello not json")},
		{Queue: "old", Payload: []byte(`{"n":2}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	ts := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
	defer func() { ts.Close(); combtest.CloseBroker(t, b) }()
	c := &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}
	p := c.Pop("/api/v1/pop/queue/old?batch=10&wait=false")
	if p.Status != http.StatusOK || len(p.Messages) != 2 || string(p.Messages[0].Data) != `"hello not json"` ||
		string(p.Messages[1].Data) != `{"n":2}` {
		t.Fatalf("pop = %d %+v", p.Status, p.Messages)
	}
}

// TestACycleIsBoundedInStateOpsAndKeyLength: a stream cycle holds at most
// broker.MaxCycleStateOps state ops, each key at most
// broker.MaxStateKeyBytes bytes (what Queen's primary key on it stores
// whatever the bytes; the queendiff test checks Queen refuses past it),
// without NUL. Past a bound the cycle is refused whole, as Queen's
// failures are (200, success false, the rule named), over HTTP and
// through broker.StreamCycle, and nothing is written. Before, a cycle of
// 1,000,000 ops held the writer 15 s and the server at 346 MB, and keys
// of a megabyte were stored.
func TestACycleIsBoundedInStateOpsAndKeyLength(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	qid := register(t, s.Client, "bounds", "src", "", streamsHash("bounds"), false)["query_id"].(string)
	const shard = "6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e"
	cycle := func(ops []map[string]any) map[string]any {
		t.Helper()
		r := s.Do("POST", "/streams/v1/cycle", map[string]any{"query_id": qid, "partition_id": shard, "state_ops": ops})
		if r.Status != http.StatusOK {
			t.Fatalf("cycle: %d %.300s", r.Status, r.Body)
		}
		return r.Map(t)
	}
	upsert := func(key string) map[string]any {
		return map[string]any{"type": "upsert", "key": key, "value": map[string]any{}}
	}

	many := make([]map[string]any, broker.MaxCycleStateOps+1)
	goOps := make([]combtype.StateOp, len(many))
	for i := range many {
		many[i] = upsert(fmt.Sprintf("k%d", i))
		goOps[i] = combtype.StateOp{Type: combtype.StateUpsert, Key: fmt.Sprintf("k%d", i), Value: []byte("{}")}
	}
	wantMany := "a cycle holds at most 100000 state_ops (got more than 100000); commit them in several cycles"
	if got := cycle(many); got["success"] != false || got["error"] != wantMany {
		t.Errorf("HTTP, one op past the bound: %v\nwant error %q", got, wantMany)
	}
	res, err := s.Broker.StreamCycle(context.Background(), combtype.CycleRequest{QueryID: qid, PartitionID: shard, StateOps: goOps})
	if err != nil || res.Err == nil || res.Err.Error() != wantMany {
		t.Errorf("broker.StreamCycle, one op past the bound: %v %v\nwant %q", err, res.Err, wantMany)
	}

	atBound := strings.Repeat("é", broker.MaxStateKeyBytes/2) // 2,660 bytes
	for key, want := range map[string]string{
		atBound + "x":  "state_ops[1].key is 2661 bytes long; at most 2660 are accepted",
		"nul\x00inkey": `state_ops[1].key holds a NUL character (\u0000)`,
	} {
		if got := cycle([]map[string]any{upsert("fine"), upsert(key)}); got["success"] != false || got["error"] != want {
			t.Errorf("HTTP, key of %d bytes: %v\nwant error %q", len(key), got, want)
		}
	}
	if rows := stateRows(t, s.Client, map[string]any{"query_id": qid, "partition_id": shard}); len(rows) != 0 {
		t.Errorf("refused cycles wrote %d state rows", len(rows))
	}

	// At the bounds it goes through.
	if got := cycle(append(many[:broker.MaxCycleStateOps-1], upsert(atBound))); got["success"] != true {
		t.Errorf("a cycle of %d ops, one key of %d bytes: %v", broker.MaxCycleStateOps, len(atBound), got)
	}
	if rows := stateRows(t, s.Client, map[string]any{"query_id": qid, "partition_id": shard}); len(rows) != broker.MaxCycleStateOps {
		t.Errorf("%d state rows after the cycle at the bound, want %d", len(rows), broker.MaxCycleStateOps)
	}
}

// TestAQueryRegistrationIsBoundedInItsNamesAndHash: a streaming query's
// name and config hash are at most broker.MaxStateKeyBytes bytes (Queen
// keeps the name in a unique index, which refuses longer ones; the
// queendiff test checks it), its queues at most broker.MaxNameLength
// characters. Past a bound the registration is a 400 naming the field,
// over HTTP and through broker.StreamRegister, and nothing is stored: the
// same name registers afresh once it is within the bounds. Before, names,
// queues and hashes of a megabyte were stored.
func TestAQueryRegistrationIsBoundedInItsNamesAndHash(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	atBound := strings.Repeat("é", broker.MaxStateKeyBytes/2) // 2,660 bytes
	longQueue := strings.Repeat("q", broker.MaxNameLength+1)
	for _, c := range []struct {
		name, source, sink, hash string
		want                     string
	}{
		{atBound + "x", "src", "", "h", "name is 2661 bytes long; at most 2660 are accepted"},
		{"bounded", "src", "", atBound + "x", "config_hash is 2661 bytes long; at most 2660 are accepted"},
		{"bounded", longQueue, "", "h", "source_queue is 256 characters long; at most 255 are accepted"},
		{"bounded", "src", longQueue, "h", "sink_queue is 256 characters long; at most 255 are accepted"},
		{"nul\x00name", "src", "", "h", `name holds a NUL character (\u0000)`},
	} {
		body := map[string]any{"name": c.name, "source_queue": c.source, "config_hash": c.hash, "reset": false}
		if c.sink != "" {
			body["sink_queue"] = c.sink
		}
		r := s.Do("POST", "/streams/v1/queries", body)
		if r.Status != http.StatusBadRequest || r.Map(t)["error"] != c.want {
			t.Errorf("HTTP: %d %.200s\nwant 400 %q", r.Status, r.Body, c.want)
		}
		_, err := s.Broker.StreamRegister(context.Background(), combtype.StreamRegisterRequest{Name: c.name,
			SourceQueue: c.source, SinkQueue: c.sink, ConfigHash: c.hash})
		var in *broker.InputError
		if !errors.As(err, &in) || in.Msg != c.want {
			t.Errorf("broker.StreamRegister: %v\nwant %q", err, c.want)
		}
	}
	// Nothing was stored: "bounded" is new, and at the bounds it goes through.
	if got := register(t, s.Client, "bounded", strings.Repeat("q", broker.MaxNameLength), "", atBound, false); got["fresh"] != true {
		t.Errorf("registration at the bounds: %v, want fresh", got)
	}
	if got := register(t, s.Client, atBound, "src", "", "h", false); got["fresh"] != true {
		t.Errorf("a name at the bound: %v, want fresh", got)
	}
}

// A trace filed under more names than broker.MaxTraceNames is refused
// whole, over HTTP and from Go alike, and stores nothing; one at the
// bound is stored with every name.
func TestATraceOfTooManyNamesIsRefusedNamingTheBound(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	ctx := context.Background()
	pid, _ := s.Push(map[string]any{"queue": "q", "transactionId": "t1", "payload": 1})[0]["partition_id"].(string)
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("n%d", i)
		}
		return out
	}
	trace := func(n int) *combtest.Response {
		return s.Do("POST", "/api/v1/traces", map[string]any{"transactionId": "t1", "partitionId": pid,
			"eventType": "info", "data": map[string]any{"x": 1}, "traceNames": names(n)})
	}
	want := fmt.Sprintf("traceNames holds %d names; at most %d are accepted", broker.MaxTraceNames+1, broker.MaxTraceNames)
	if r := trace(broker.MaxTraceNames + 1); r.Status != http.StatusBadRequest || errorOf(t, r) != want {
		t.Errorf("trace: %d %s, want 400 %q", r.Status, r.Body, want)
	}
	_, err := s.Broker.TraceRecord(ctx, combtype.TraceInput{TxnID: "t1", PartitionID: pid,
		Names: names(broker.MaxTraceNames + 1), Data: []byte(`1`)})
	if err == nil || err.Error() != want {
		t.Errorf("broker.TraceRecord: %v, want %q", err, want)
	}
	if r := s.Do("GET", "/api/v1/traces/names", nil); r.Status != http.StatusOK || strings.Contains(string(r.Body), `"n0"`) {
		t.Errorf("trace names after the refusals: %d %s, want none", r.Status, r.Body)
	}
	if r := trace(broker.MaxTraceNames); r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("a trace at the bound: %d %s", r.Status, r.Body)
	}
	r := s.Do("GET", "/api/v1/traces/by-name/n99", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"n0"`) {
		t.Errorf("the trace at the bound by its last name: %d %s, want it with every name", r.Status, r.Body)
	}
}

// TestTheListsOfARequestAreBoundedAsTheyAreDecoded sends, to every route
// that takes a list and a body of more than 1 MiB, one of millions of the
// smallest entries JSON has ({}, "" or a member; a body of 6-32 MB,
// under the body bound): each is refused (or, where the list has no bound of its own,
// read) while the server allocates a few times the body, not hundreds of
// bytes an entry. Before,
// an ack batch of 3,000,000 {} took the server to 971 MB and a
// transaction of as many operations to 1.2 GB, the whole list decoded
// before its bound was checked, and a cycle of 4 million members to 523
// MB, all kept before a field was read.
func TestTheListsOfARequestAreBoundedAsTheyAreDecoded(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(item("q", 1))
	repeat := func(head, elem, tail string, n int) []byte {
		var b strings.Builder
		b.Grow(len(head) + n*(len(elem)+1) + len(tail))
		b.WriteString(head)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem)
		}
		b.WriteString(tail)
		return []byte(b.String())
	}
	pushOp := `{"type":"push","items":[` + strings.TrimSuffix(strings.Repeat(`{"queue":"q","payload":1},`, broker.MaxPushItems), ",") + `]}`
	members := func(n int) []byte {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":0`, i)
		}
		b.WriteByte('}')
		return []byte(b.String())
	}
	for _, c := range []struct {
		name, path string
		body       []byte
		status     int
		want       string // the error, when refused
	}{
		{"ack batch", "/api/v1/ack/batch", repeat(`{"acknowledgments":[`, `{}`, `]}`, 3_000_000), 400,
			"acknowledgments holds at most 20000 entries (got more than 20000); split the request"},
		{"transaction operations", "/api/v1/transaction", repeat(`{"operations":[`, `{}`, `]}`, 3_000_000), 400,
			"operations holds at most 20000 entries (got more than 20000); split the request"},
		{"transaction pushed items", "/api/v1/transaction", repeat(`{"operations":[`, pushOp, `]}`, 3), 400,
			"operations holds at most 20000 entries (got more than 20000); split the request"},
		{"transaction requiredLeases", "/api/v1/transaction",
			repeat(`{"operations":[{"type":"push","items":[{"queue":"q","payload":1}]}],"requiredLeases":[`, `""`, `]}`, 6_000_000), 200, ""},
		{"stream cycle members", "/streams/v1/cycle", members(3_000_000), 400,
			"request body holds more than 1024 members"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			resp, err := http.Post(s.HTTP.URL+c.path, "application/json", bytes.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			reply, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			runtime.ReadMemStats(&after)
			if resp.StatusCode != c.status {
				t.Errorf("%d %.300s, want %d", resp.StatusCode, reply, c.status)
			}
			if c.want != "" {
				var e struct{ Error string }
				if json.Unmarshal(reply, &e) != nil || e.Error != c.want {
					t.Errorf("%.300s, want the error %q", reply, c.want)
				}
			}
			// The body is read into one buffer: a few times its size covers
			// the reading and whatever else the server does meanwhile.
			if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*len(c.body)+16<<20); alloc > limit {
				t.Errorf("the server allocated %d MB for a body of %d MB, want at most %d MB",
					alloc>>20, len(c.body)>>20, limit>>20)
			}
		})
	}
}

// Whatever a route stores it hands back inside a reply that every JSON
// client can read, encoding/json (Queen's Go client) included, which
// refuses nesting past 10,000. A trace's data nested 9,998 deep was
// stored, and the replies that list it (inside {"traces":[{"data":…}]})
// were past the bound for every Go reader.
func TestWhatIsStoredAtTheNestingBoundReadsBackWithEncodingJSON(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	pid, _ := s.Push(map[string]any{"queue": "q", "transactionId": "t1", "payload": 1})[0]["partition_id"].(string)
	stored := 0
	for depth := 9_980; depth <= 10_000; depth++ {
		data := json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		name := fmt.Sprintf("d%d", depth)
		r := s.Do("POST", "/api/v1/traces", map[string]any{"transactionId": "t1", "partitionId": pid,
			"eventType": "info", "data": data, "traceNames": []string{name}})
		if r.Status >= 300 {
			continue
		}
		stored++
		for _, path := range []string{"/api/v1/traces/by-name/" + name, "/api/v1/traces/" + pid + "/t1"} {
			got := s.Do("GET", path, nil)
			var v any
			if err := json.Unmarshal(got.Body, &v); got.Status != http.StatusOK || err != nil {
				t.Errorf("data nested %d deep, stored (%d): %s answers %d, which encoding/json cannot read: %v",
					depth, r.Status, path, got.Status, err)
			}
		}
		if depth == 10_000 {
			break
		}
	}
	if stored == 0 {
		t.Fatal("no trace stored near the bound: the test proves nothing")
	}
}

// A pop of a queue, partition, namespace or task no queue can have (too
// long, a NUL, not UTF-8) is a pop of a queue that does not exist:
// nothing, after its wait, never a 4xx (docs/wire.md: Queen's JS
// consumer stops on one). It answered 400.
func TestAPopOfANameNoQueueCanHaveFindsNothing(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	long := strings.Repeat("q", broker.MaxNameLength+1)
	for _, path := range []string{
		"/api/v1/pop/queue/" + long + "?wait=false",
		"/api/v1/pop/queue/a%00b?wait=false",
		"/api/v1/pop/queue/%C3%28?wait=false",
		"/api/v1/pop/queue/q/partition/" + long + "?wait=false",
		"/api/v1/pop?namespace=" + long + "&wait=false",
		"/api/v1/pop?task=a%00b&wait=false",
	} {
		if r := s.Do("GET", path, nil); r.Status != http.StatusNoContent {
			t.Errorf("GET %.60s: %d %s, want 204", path, r.Status, r.Body)
		}
	}
	start := time.Now()
	if r := s.Do("GET", "/api/v1/pop/queue/"+long+"?wait=true&timeout=300", nil); r.Status != http.StatusNoContent {
		t.Errorf("a long-poll of it: %d %s, want 204", r.Status, r.Body)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("a long-poll of it answered after %v, before its timeout of 300 ms: a consumer would poll it without pause", d)
	}
	if r := s.Do("GET", "/api/v1/resources/queues", nil); !strings.Contains(string(r.Body), `"queues":[]`) {
		t.Errorf("the pops made a queue: %s", r.Body)
	}
}
