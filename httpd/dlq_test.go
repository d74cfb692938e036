package httpd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

func TestDLQListShapeAndOrder(t *testing.T) {
	s, clk := opServer(t)
	// A fresh queue has an empty DLQ, not an error.
	if got := opDLQ(t, s, "queue=orders&limit=10&offset=0"); got.Total != 0 || len(got.Messages) != 0 || got.Limit != 10 {
		t.Fatalf("fresh DLQ = %+v", got)
	}
	s.Push(opItem("orders", "", "t1", map[string]any{"message": "one"}), opItem("orders", "", "t2", nil),
		opItem("orders", "", "t3", map[string]any{}))
	popped := opDeadLetter(t, s, clk, "orders", "", "")

	r := s.Do("GET", "/api/v1/dlq?queue=orders", nil)
	m := r.Map(t)
	if m["total"] != 3.0 || m["limit"] != 100.0 || m["offset"] != 0.0 {
		t.Fatalf("dlq = %s", r.Body)
	}
	opKeys(t, "pagination", m["pagination"], "limit", "offset")
	msgs := m["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	opKeys(t, "dlq message", msgs[0], "id", "transactionId", "partitionId", "queue", "partition", "consumerGroup",
		"errorMessage", "retryCount", "data", "traceId", "producerSub", "createdAt", "failedAt")
	// Newest failure first; payloads round-trip exactly, null and {} included.
	var got dlqReply
	r.JSON(t, &got)
	wantTxn := []string{"t3", "t2", "t1"}
	wantData := []string{`{}`, `null`, `{"message":"one"}`}
	for i, msg := range got.Messages {
		data, _ := json.Marshal(msg["data"])
		if msg["transactionId"] != wantTxn[i] || string(data) != wantData[i] {
			t.Errorf("message %d = %v, want %s with %s", i, msg, wantTxn[i], wantData[i])
		}
	}
	first := got.Messages[2]
	if first["id"] != popped[0].ID || first["partitionId"] != popped[0].PartitionID || first["queue"] != "orders" ||
		first["partition"] != "Default" || first["consumerGroup"] != "__QUEUE_MODE__" || first["errorMessage"] != "boom t1" ||
		first["producerSub"] != nil || first["retryCount"] != 0.0 {
		t.Errorf("oldest = %v", first)
	}
	if first["failedAt"] != "2026-07-30T08:00:01.000Z" || first["createdAt"] != "2026-07-30T08:00:00.000Z" {
		t.Errorf("times = %v / %v", first["createdAt"], first["failedAt"])
	}
	// limit and offset page; total counts every match.
	if page := opDLQ(t, s, "queue=orders&limit=1&offset=1"); page.Total != 3 || len(page.Messages) != 1 ||
		page.Messages[0]["transactionId"] != "t2" || page.Limit != 1 || page.Offset != 1 {
		t.Errorf("page = %+v", page)
	}
	// Malformed or negative paging is refused, naming the parameter.
	opWantError(t, s.Do("GET", "/api/v1/dlq?queue=orders&limit=x", nil), http.StatusBadRequest, `limit must be a non-negative integer (got "x")`)
	opWantError(t, s.Do("GET", "/api/v1/dlq?queue=orders&offset=-4", nil), http.StatusBadRequest, `offset must be a non-negative integer (got "-4")`)
}

func TestDLQFilters(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("a", "p1", "a1", 1), opItem("a", "p2", "a2", 2), opItem("b", "", "b1", 3))
	opDeadLetter(t, s, clk, "a", "p1", "g1") // failed at +1s
	opDeadLetter(t, s, clk, "a", "p2", "g2") // +2s
	opDeadLetter(t, s, clk, "b", "", "")     // +3s

	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{"b1", "a2", "a1"}},
		{"queue=a", []string{"a2", "a1"}},
		{"queue=a&consumerGroup=g1", []string{"a1"}},
		{"consumerGroup=__QUEUE_MODE__", []string{"b1"}},
		{"queue=a&partition=p2", []string{"a2"}},
		{"from=" + url.QueryEscape("2026-07-30T08:00:02Z"), []string{"b1", "a2"}},
		{"to=" + url.QueryEscape("2026-07-30T08:00:02Z"), []string{"a2", "a1"}},
		{"from=2026-07-30T08:00:02Z&to=2026-07-30T08:00:02.5Z", []string{"a2"}},
		{"from=2026-07-31", nil},
		{"queue=nope", nil},
	}
	for _, c := range cases {
		got := opDLQ(t, s, c.query)
		var txns []string
		for _, m := range got.Messages {
			txns = append(txns, m["transactionId"].(string))
		}
		if !slices.Equal(txns, c.want) || got.Total != len(c.want) {
			t.Errorf("%q: %v (total %d), want %v", c.query, txns, got.Total, c.want)
		}
	}
	opWantError(t, s.Do("GET", "/api/v1/dlq?from=yesterday", nil), http.StatusBadRequest, "from and to")
}

func TestDLQRedrive(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("jobs", "", "j1", map[string]any{"n": 1}), opItem("jobs", "p2", "j2", map[string]any{"n": 2}))
	opDeadLetter(t, s, clk, "jobs", "Default", "")
	opDeadLetter(t, s, clk, "jobs", "p2", "")
	before := opDLQ(t, s, "queue=jobs")
	rowOf := map[string]string{}
	for _, m := range before.Messages {
		rowOf[m["transactionId"].(string)] = m["id"].(string)
	}

	r := s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "jobs"})
	if r.Status != http.StatusOK {
		t.Fatalf("redrive: %d %s", r.Status, r.Body)
	}
	res := r.Map(t)
	opKeys(t, "redrive reply", res, "success", "queue", "redriven", "duplicates", "deleted", "remaining")
	if res["success"] != true || res["redriven"] != 2.0 || res["deleted"] != 2.0 || res["remaining"] != 0.0 || res["duplicates"] != 0.0 {
		t.Fatalf("redrive = %v", res)
	}
	if got := opDLQ(t, s, "queue=jobs"); got.Total != 0 {
		t.Fatalf("DLQ after redrive = %+v", got)
	}
	// The messages are back, on their partitions, as new messages with
	// derived transactionIds and the original payloads.
	for _, c := range []struct{ path, txn, data string }{
		{"/api/v1/pop/queue/jobs/partition/Default", "j1", `{"n":1}`},
		{"/api/v1/pop/queue/jobs/partition/p2", "j2", `{"n":2}`},
	} {
		pop := s.Pop(c.path)
		if pop.Status != http.StatusOK || len(pop.Messages) != 1 {
			t.Fatalf("pop %s after redrive = %+v", c.path, pop)
		}
		m := pop.Messages[0]
		if !strings.HasPrefix(m.TransactionID, c.txn+":redrive:") || string(m.Data) != c.data || m.ID == rowOf[c.txn] {
			t.Errorf("redriven %s = %+v", c.txn, m)
		}
	}
	// A second re-drive finds nothing.
	r = s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "jobs"})
	if res := r.Map(t); res["redriven"] != 0.0 || res["deleted"] != 0.0 {
		t.Fatalf("second redrive = %v", res)
	}
}

func TestDLQRedriveSelection(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("sel", "", "s1", 1), opItem("sel", "", "s2", 2), opItem("sel", "", "s3", 3))
	// Both groups dead-letter every message: six rows for three messages.
	opDeadLetter(t, s, clk, "sel", "", "ga")
	opDeadLetter(t, s, clk, "sel", "", "gb")
	rows := opDLQ(t, s, "queue=sel&consumerGroup=ga")
	var s1 string
	for _, m := range rows.Messages {
		if m["transactionId"] == "s1" {
			s1 = m["id"].(string)
		}
	}

	// By id and group: only ga's row of s1.
	res := s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "sel", "consumerGroup": "ga", "ids": []string{s1}}).Map(t)
	if res["redriven"] != 1.0 || res["deleted"] != 1.0 || res["remaining"] != 0.0 {
		t.Fatalf("redrive by id = %v", res)
	}
	if got := opDLQ(t, s, "queue=sel"); got.Total != 5 {
		t.Fatalf("rows left = %d, want 5", got.Total)
	}
	// An explicit empty id list re-drives nothing.
	if res := s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "sel", "ids": []string{}}).Map(t); res["deleted"] != 0.0 {
		t.Fatalf("empty ids = %v", res)
	}
	// limit counts messages: s1 (gb's row) and s2 (two rows) become two
	// new messages; remaining says what is left. Rows of two groups for one
	// message become one new message.
	res = s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "sel", "limit": 2}).Map(t)
	if res["redriven"] != 2.0 || res["deleted"] != 3.0 || res["remaining"] != 2.0 {
		t.Fatalf("limited redrive = %v", res)
	}
	res = s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "sel"}).Map(t)
	if res["redriven"] != 1.0 || res["deleted"] != 2.0 || res["remaining"] != 0.0 {
		t.Fatalf("final redrive = %v", res)
	}
	pop := s.Pop("/api/v1/pop/queue/sel?batch=100&consumerGroup=fresh")
	counts := map[string]int{}
	for _, m := range pop.Messages {
		orig, _, _ := strings.Cut(m.TransactionID, ":redrive:")
		counts[orig]++
	}
	// 3 originals, then s1 twice (ga's row alone, then gb's), s2 and s3 once.
	if want := map[string]int{"s1": 3, "s2": 2, "s3": 2}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("messages by original = %v, want %v", counts, want)
	}
}

func TestDLQRedriveIsDeduplicated(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("dd", "", "x", 1))
	opDeadLetter(t, s, clk, "dd", "", "")
	// Simulate a re-drive that committed and whose answer was lost: its
	// derived key is already in the partition (the database is fresh, so
	// the DLQ row is row 1).
	if res := s.Push(opItem("dd", "", "x:redrive:1", 1)); res[0]["status"] != "queued" {
		t.Fatalf("push = %v", res)
	}
	res := s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "dd"}).Map(t)
	if res["duplicates"] != 1.0 || res["redriven"] != 0.0 || res["deleted"] != 1.0 {
		t.Fatalf("redrive over an existing key = %v", res)
	}
}

func TestDLQRedriveBadInput(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("known", "", "k", 1))
	for _, c := range []struct {
		body   any
		status int
		text   string
	}{
		{"", http.StatusBadRequest, "Request body is required"},
		{"{", http.StatusBadRequest, "Invalid JSON"},
		{map[string]any{}, http.StatusBadRequest, "queue is required"},
		{map[string]any{"queue": 7}, http.StatusBadRequest, "queue is required"},
		{map[string]any{"queue": "known", "ids": "abc"}, http.StatusBadRequest, "ids must be an array of strings"},
		{map[string]any{"queue": "known", "ids": []int{1}}, http.StatusBadRequest, "ids must be an array of strings"},
		{map[string]any{"queue": "known", "limit": -1}, http.StatusBadRequest, "limit"},
		{map[string]any{"queue": "known", "consumerGroup": 3}, http.StatusBadRequest, "must be strings"},
		{map[string]any{"queue": "unknown"}, http.StatusNotFound, "Queue not found"},
	} {
		opWantError(t, s.Do("POST", "/api/v1/dlq/redrive", c.body), c.status, c.text)
	}
}

// An encrypted queue's dead letters are stored sealed, listed in clear and
// re-driven in clear (then sealed again by the push).
func TestDLQEncryptedQueue(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	clk := clock.NewManual(opT0)
	s := combtest.MustServer(t, combtest.Options{Clock: clk, Broker: func(o *broker.Options) { o.EncryptionKey = key }})
	opConfigure(t, s, "secret", map[string]any{"encryptionEnabled": true})
	s.Push(opItem("secret", "", "e1", map[string]any{"card": "4111"}))
	opDeadLetter(t, s, clk, "secret", "", "")
	var stored []byte
	if err := combtest.ReadDB(t, s.Broker.DatabasePath()).QueryRow(`SELECT payload FROM dlq`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), "4111") {
		t.Fatalf("dead letter stored in clear: %q", stored)
	}
	got := opDLQ(t, s, "queue=secret")
	if data, _ := json.Marshal(got.Messages[0]["data"]); string(data) != `{"card":"4111"}` {
		t.Fatalf("listed data = %s", data)
	}
	s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "secret"})
	if p := s.Pop("/api/v1/pop/queue/secret"); len(p.Messages) != 1 || string(p.Messages[0].Data) != `{"card":"4111"}` {
		t.Fatalf("redriven = %+v", p)
	}
}

// A dead letter keeps at most store.MaxErrorBytes of its error, cut on a
// character and marked, and a page of dead letters counts their errors in
// its bound. Before, sixty failed acks with an error of a megabyte each
// made a page of 63 MB.
func TestDLQErrorsAreBoundedAndCountInThePage(t *testing.T) {
	s, clk := opServer(t)
	const n = 300 // errors of store.MaxErrorBytes past the page's bound
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = opItem("big", "", fmt.Sprintf("e%d", i), map[string]any{"i": i})
	}
	s.Push(items...)
	big := strings.Repeat("é", 10_000) // 20,000 bytes, two a character
	pop := s.Pop("/api/v1/pop/queue/big?batch=1000")
	if pop.Status != http.StatusOK || len(pop.Messages) != n {
		t.Fatalf("pop: %d, %d messages", pop.Status, len(pop.Messages))
	}
	for _, m := range pop.Messages {
		clk.Advance(time.Millisecond)
		r := s.Do("POST", "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"leaseId": m.LeaseID, "status": "dlq", "error": big})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"dlq":true`) {
			t.Fatalf("dlq ack: %d %.200s", r.Status, r.Body)
		}
	}
	r := s.Do("GET", "/api/v1/dlq?queue=big&limit=1000", nil)
	var got dlqReply
	r.JSON(t, &got)
	if r.Status != http.StatusOK || got.Total != n || len(got.Messages) == 0 || len(got.Messages) == n {
		t.Fatalf("page: %d, total %d, %d entries: want some of %d", r.Status, got.Total, len(got.Messages), n)
	}
	kept := 0 // what the bound counts: errors and payloads
	for _, m := range got.Messages {
		data, _ := json.Marshal(m["data"])
		e, _ := m["errorMessage"].(string)
		kept += len(e) + len(data)
	}
	if kept > store.MaxListBytes+store.MaxErrorBytes+100 || len(r.Body) > 2*store.MaxListBytes {
		t.Errorf("a page of %d entries, %d bytes of errors and payloads (%d in all), past the bound of %d",
			len(got.Messages), kept, len(r.Body), store.MaxListBytes)
	}
	e, _ := got.Messages[0]["errorMessage"].(string)
	want := " [cut from 20000 bytes]"
	if len(e) > store.MaxErrorBytes || !strings.HasSuffix(e, want) || !utf8.ValidString(e) ||
		!strings.HasPrefix(big, strings.TrimSuffix(e, want)) {
		t.Errorf("error kept: %d bytes, ends %q", len(e), e[max(0, len(e)-40):])
	}
	// Paging on reaches every entry.
	seen := len(got.Messages)
	for seen < n {
		page := opDLQ(t, s, fmt.Sprintf("queue=big&limit=1000&offset=%d", seen))
		if len(page.Messages) == 0 {
			t.Fatalf("no entries past %d of %d", seen, n)
		}
		seen += len(page.Messages)
	}
}

// A re-drive names at most combtype.MaxRedriveIDs ids, over HTTP (refused
// before the ids are decoded) and from Go; at the bound it goes through.
// Before, a re-drive of a million ids took the server to 205 MB.
func TestDLQRedriveNamesABoundedNumberOfIDs(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("orders", "", "t1", 1))
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%08x-0000-0000-0000-00000000\",]x", i) // quotes, commas and brackets inside
		}
		return out
	}
	want := fmt.Sprintf("a re-drive names at most %d ids (got more than %d); split them over several calls",
		combtype.MaxRedriveIDs, combtype.MaxRedriveIDs)
	opWantError(t, s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "orders", "ids": ids(combtype.MaxRedriveIDs + 1)}),
		http.StatusBadRequest, want)
	if _, err := s.Broker.DLQRedrive(context.Background(), combtype.RedriveRequest{Queue: "orders", IDs: ids(3 * combtype.MaxRedriveIDs)}); err == nil || err.Error() != want {
		t.Errorf("broker.DLQRedrive of %d ids: %v, want %q", 3*combtype.MaxRedriveIDs, err, want)
	}
	r := s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "orders", "ids": ids(combtype.MaxRedriveIDs)})
	if r.Status != http.StatusOK || r.Map(t)["redriven"] != 0.0 {
		t.Errorf("a re-drive at the bound: %d %.200s", r.Status, r.Body)
	}
}

// A re-drive takes about 16 MiB of payload at a time, each message whole,
// and leaves the rest for the next call (before, all of up to 10,000 at
// once, held together in its commit); and the transactionIds it writes
// stay within the 255 bytes every client's are held to (before, an id
// near the bound came back 10 bytes past it, and longer at every round).
func TestDLQRedriveIsBoundedInBytesAndInIDLength(t *testing.T) {
	s, clk := opServer(t)
	for i := range 20 {
		s.Push(opItem("big", "", fmt.Sprintf("b%02d", i), strings.Repeat("x", 1_000_000)))
	}
	for opDLQ(t, s, "queue=big").Total < 20 {
		opDeadLetter(t, s, clk, "big", "", "")
	}
	first := s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "big"}).Map(t)
	if first["redriven"].(float64) >= 20 || first["redriven"].(float64) < 10 || first["remaining"].(float64) != 20-first["redriven"].(float64) {
		t.Errorf("first re-drive of 20 MB = %v, want about 16 MB of it and the rest remaining", first)
	}
	second := s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "big"}).Map(t)
	if first["redriven"].(float64)+second["redriven"].(float64) != 20 || second["remaining"] != 0.0 {
		t.Errorf("second re-drive = %v after %v, want the rest", second, first)
	}

	long := strings.Repeat("t", 250)
	s.Push(opItem("ids", "", long, map[string]any{"n": 1}))
	for round := range 3 {
		opDeadLetter(t, s, clk, "ids", "", "")
		if res := s.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "ids"}).Map(t); res["redriven"] != 1.0 {
			t.Fatalf("round %d: re-drive = %v", round, res)
		}
	}
	pop := s.Pop("/api/v1/pop/queue/ids?batch=10")
	if pop.Status != http.StatusOK || len(pop.Messages) != 1 {
		t.Fatalf("pop after three re-drives = %+v", pop)
	}
	if id := pop.Messages[0].TransactionID; len(id) > 255 || !strings.HasPrefix(id, "sha256-") || !strings.Contains(id, ":redrive:") {
		t.Errorf("after three re-drives of a 250-byte id: %q (%d bytes), want at most 255", id, len(id))
	}
}
