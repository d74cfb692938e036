package httpd_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

func item(queue string, payload any, kv ...any) map[string]any {
	m := map[string]any{"queue": queue, "payload": payload}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestPushPopAckRoundTrip(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	res := s.Push(item("orders", map[string]any{"test": "data", "value": 42}, "transactionId", "tx-1"))
	if len(res) != 1 || res[0]["status"] != "queued" || res[0]["transactionId"] != "tx-1" || res[0]["transaction_id"] != "tx-1" ||
		res[0]["index"] != 0.0 || res[0]["queueName"] != "orders" || res[0]["message_id"] == "" || res[0]["partition_id"] == "" {
		t.Fatalf("push result = %v", res)
	}
	// Poppable at once with wait=false once the push was answered.
	pop := s.Pop("/api/v1/pop/queue/orders?wait=false")
	if pop.Status != http.StatusOK || len(pop.Messages) != 1 {
		t.Fatalf("pop = %+v", pop)
	}
	m := pop.Messages[0]
	if string(m.Data) != `{"test":"data","value":42}` || m.TransactionID != "tx-1" || m.Partition != "Default" ||
		m.Queue != "orders" || m.ConsumerGroup != "__QUEUE_MODE__" || m.LeaseID == "" || m.LeaseID != pop.LeaseID ||
		m.ID != res[0]["message_id"] || m.PartitionID != res[0]["partition_id"] {
		t.Fatalf("message = %+v", m)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z", m.CreatedAt); err != nil {
		t.Errorf("createdAt %q is not RFC 3339 with microseconds: %v", m.CreatedAt, err)
	}
	// The partition is leased: nothing more for this group.
	if p := s.Pop("/api/v1/pop/queue/orders"); p.Status != http.StatusNoContent {
		t.Fatalf("second pop while leased = %d", p.Status)
	}
	ack := s.Ack(m, "completed", "")
	if ack["success"] != true || ack["leaseReleased"] != true || ack["error"] != nil || ack["queueName"] != "orders" || ack["partitionName"] != "Default" {
		t.Fatalf("ack = %v", ack)
	}
	if p := s.Pop("/api/v1/pop/queue/orders"); p.Status != http.StatusNoContent {
		t.Fatalf("pop after ack = %d, want 204", p.Status)
	}
}

func TestPopOfUnknownQueueOrPartitionIs204(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	for _, path := range []string{"/api/v1/pop/queue/nope", "/api/v1/pop/queue/nope/partition/p1", "/api/v1/pop?namespace=nope"} {
		if p := s.Pop(path + "?wait=false"); p.Status != http.StatusNoContent {
			t.Errorf("%s = %d, want 204", path, p.Status)
		}
	}
	s.Push(item("known", 1))
	if p := s.Pop("/api/v1/pop/queue/known/partition/other"); p.Status != http.StatusNoContent {
		t.Errorf("unknown partition of a known queue = %d, want 204", p.Status)
	}
}

func TestDuplicateTransactionID(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	first := s.Push(item("q", 1, "transactionId", "test-transaction-id"))
	again := s.Push(item("q", 2, "transactionId", "test-transaction-id"))
	if first[0]["status"] != "queued" || again[0]["status"] != "duplicate" || again[0]["message_id"] != first[0]["message_id"] {
		t.Fatalf("first %v, again %v", first, again)
	}
	// Same key on another partition is another key.
	other := s.Push(item("q", 3, "transactionId", "test-transaction-id", "partition", "1"))
	if other[0]["status"] != "queued" {
		t.Fatalf("same id on another partition = %v", other)
	}
	// Inside one request the first wins, and an existing key wins over all.
	intra := s.Push(item("q", 4, "transactionId", "x"), item("q", 5, "transactionId", "x"), item("q", 6, "transactionId", "x"))
	if intra[0]["status"] != "queued" || intra[1]["status"] != "duplicate" || intra[2]["status"] != "duplicate" ||
		intra[1]["message_id"] != intra[0]["message_id"] {
		t.Fatalf("intra-batch = %v", intra)
	}
	pop := s.Pop("/api/v1/pop/queue/q/partition/Default?batch=10")
	var got []string
	for _, m := range pop.Messages {
		got = append(got, string(m.Data))
	}
	if strings.Join(got, ",") != "1,4" {
		t.Errorf("stored payloads = %v, want [1 4]", got)
	}
}

func TestConcurrentPushesOfOneKeyStoreExactlyOne(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	var wg sync.WaitGroup
	results := make([]map[string]any, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.Push(item("q", i, "transactionId", "same"))[0]
		}()
	}
	wg.Wait()
	queued := 0
	for _, r := range results {
		if r["status"] == "queued" {
			queued++
		}
		if r["message_id"] != results[0]["message_id"] {
			t.Errorf("message ids differ: %v vs %v", r["message_id"], results[0]["message_id"])
		}
	}
	if queued != 1 {
		t.Errorf("%d queued, want exactly 1", queued)
	}
}

func TestPayloadsRoundTripExactly(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	big := make([]int, 10000)
	for i := range big {
		big[i] = i
	}
	bigJSON, _ := json.Marshal(big)
	cases := []struct{ body, want string }{
		{`{"queue":"p","payload":null}`, `null`},
		{`{"queue":"p","payload":{}}`, `{}`},
		{`{"queue":"p"}`, `null`},
		{`{"queue":"p","payload":"text \u00e9"}`, `"text \u00e9"`},
		{`{"queue":"p","payload":` + string(bigJSON) + `}`, string(bigJSON)},
	}
	for _, c := range cases {
		if r := s.Do("POST", "/api/v1/push", `{"items":[`+c.body+`]}`); r.Status != http.StatusCreated {
			t.Fatalf("push %s: %d %s", c.body, r.Status, r.Body)
		}
	}
	pop := s.Pop("/api/v1/pop/queue/p?batch=10")
	if len(pop.Messages) != len(cases) {
		t.Fatalf("popped %d, want %d", len(pop.Messages), len(cases))
	}
	for i, c := range cases {
		if got := string(pop.Messages[i].Data); got != c.want {
			t.Errorf("payload %d = %.60s, want %.60s", i, got, c.want)
		}
	}
}

func TestBadInputIsA4xxJSONErrorAndWritesNothing(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpdConfig) { c.MaxBodyBytes = 1 << 20 }})
	big := `{"items":[{"queue":"bad","payload":"` + strings.Repeat("x", 2<<20) + `"}]}`
	cases := []struct {
		name, method, path, body string
		status                   int
		err                      string
	}{
		{"malformed push", "POST", "/api/v1/push", `{"items":[`, 400, "Invalid JSON body"},
		{"empty push body", "POST", "/api/v1/push", ``, 400, "Request body is required"},
		{"no items", "POST", "/api/v1/push", `{}`, 400, "items array is required"},
		{"items not array", "POST", "/api/v1/push", `{"items":{"queue":"bad"}}`, 400, "items array is required"},
		{"queue number", "POST", "/api/v1/push", `{"items":[{"queue":"bad","payload":1},{"queue":7}]}`, 400, "Queue must be a string"},
		{"queue missing", "POST", "/api/v1/push", `{"items":[{"payload":1}]}`, 400, "Queue must be a string"},
		{"partition number", "POST", "/api/v1/push", `{"items":[{"queue":"bad","partition":1}]}`, 400, "Partition must be a string"},
		{"txn number", "POST", "/api/v1/push", `{"items":[{"queue":"bad","transactionId":5}]}`, 400, "TransactionId must be a string"},
		{"trace number", "POST", "/api/v1/push", `{"items":[{"queue":"bad","traceId":5}]}`, 400, "TraceId must be a string"},
		{"trace not uuid", "POST", "/api/v1/push", `{"items":[{"queue":"bad","traceId":"nope"}]}`, 400, "TraceId must be a valid UUID"},
		{"trailing garbage", "POST", "/api/v1/push", `{"items":[]} {}`, 400, "Invalid JSON body"},
		{"too big", "POST", "/api/v1/push", big, 413, "Request body larger than"},
		{"ack no txn", "POST", "/api/v1/ack", `{"partitionId":"p"}`, 400, "transactionId is required"},
		{"ack no partition", "POST", "/api/v1/ack", `{"transactionId":"t"}`, 400, "partitionId is required to ensure message uniqueness"},
		{"ack malformed", "POST", "/api/v1/ack", `nope`, 400, "Invalid JSON body"},
		{"ack batch missing", "POST", "/api/v1/ack/batch", `{}`, 400, "acknowledgments array is required"},
		{"ack batch item", "POST", "/api/v1/ack/batch", `{"acknowledgments":[{"transactionId":"t"}]}`, 400, "partitionId is required"},
		{"tx missing", "POST", "/api/v1/transaction", `{}`, 400, "operations array required"},
		{"tx empty", "POST", "/api/v1/transaction", `{"operations":[]}`, 400, "operations array cannot be empty"},
		{"configure no queue", "POST", "/api/v1/configure", `{"options":{}}`, 400, "queue is required"},
		{"configure bad option", "POST", "/api/v1/configure", `{"queue":"bad","options":{"leaseTime":"soon"}}`, 400, "options.leaseTime"},
		{"configure negative", "POST", "/api/v1/configure", `{"queue":"bad","options":{"retryLimit":-1}}`, 400, "options.retryLimit"},
		{"extend bad seconds", "POST", "/api/v1/lease/x/extend", `{"seconds":"x"}`, 400, "seconds"},
		{"unknown route", "GET", "/api/v1/nothing-here", ``, 404, "Not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.Do(c.method, c.path, c.body)
			if r.Status != c.status {
				t.Fatalf("status = %d, want %d (%s)", r.Status, c.status, r.Body)
			}
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("body %q is not JSON: %v", r.Body, err)
			}
			if msg, _ := body["error"].(string); !strings.Contains(msg, c.err) {
				t.Errorf("error = %q, want it to contain %q", msg, c.err)
			}
		})
	}
	// None of the refused pushes stored anything, not even the valid items
	// that shared a request with a bad one.
	if p := s.Pop("/api/v1/pop/queue/bad"); p.Status != http.StatusNoContent {
		t.Errorf("a refused request left messages behind: %+v", p)
	}
	var queues int
	if err := combtest.ReadDB(t, s.Broker.DatabasePath()).QueryRow(`SELECT COUNT(*) FROM queues WHERE name = 'bad'`).Scan(&queues); err != nil || queues != 0 {
		t.Errorf("queues named bad = %d (%v), want 0", queues, err)
	}
}

func TestLongPollIsWokenByAPush(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	got := make(chan combtest.PopReply, 1)
	start := time.Now()
	go func() { got <- s.Pop("/api/v1/pop/queue/lp?wait=true&timeout=20000") }()
	combtest.CheckFor(t, 5*time.Second, func() error {
		if n := s.Broker.Parked(); n != 1 {
			return fmt.Errorf("%d parked pops", n)
		}
		return nil
	})
	s.Push(item("lp", map[string]any{"delayed": true}))
	select {
	case p := <-got:
		if p.Status != http.StatusOK || len(p.Messages) != 1 || string(p.Messages[0].Data) != `{"delayed":true}` {
			t.Fatalf("woken pop = %+v", p)
		}
		if waited := time.Since(start); waited > 10*time.Second {
			t.Errorf("pop took %v: it was not woken by the push", waited)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("parked pop was not woken by a push")
	}
}

func TestLongPollTimesOutWith204(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	start := time.Now()
	p := s.Pop("/api/v1/pop/queue/idle?wait=true&timeout=300")
	if p.Status != http.StatusNoContent {
		t.Fatalf("status = %d", p.Status)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("answered after %v, before its timeout", waited)
	}
}

func TestExpiredLeaseIsRedeliveredAndItsAckRefused(t *testing.T) {
	c := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c})
	if r := s.Do("POST", "/api/v1/configure", `{"queue":"lease","options":{"leaseTime":60}}`); r.Status != 200 {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	s.Push(item("lease", 1), item("lease", 2))
	first := s.Pop("/api/v1/pop/queue/lease?batch=10")
	if len(first.Messages) != 2 {
		t.Fatalf("first pop = %+v", first)
	}
	c.Advance(59 * time.Second)
	if p := s.Pop("/api/v1/pop/queue/lease"); p.Status != http.StatusNoContent {
		t.Fatalf("pop inside the lease = %d", p.Status)
	}
	c.Advance(2 * time.Second)
	again := s.Pop("/api/v1/pop/queue/lease?batch=10")
	if len(again.Messages) != 2 || again.LeaseID == first.LeaseID || again.Messages[0].TransactionID != first.Messages[0].TransactionID {
		t.Fatalf("redelivery = %+v", again)
	}
	if again.Messages[0].RetryCount != 0 {
		t.Errorf("an expired lease charged the retry budget: retryCount %d", again.Messages[0].RetryCount)
	}
	stale := s.Ack(first.Messages[0], "completed", "")
	if stale["success"] != false || stale["error"] != "Invalid or expired lease" {
		t.Fatalf("ack with the expired lease = %v", stale)
	}
	// The refused ack moved nothing: the new lease still acks both.
	for _, m := range again.Messages {
		if a := s.Ack(m, "completed", ""); a["success"] != true {
			t.Fatalf("ack = %v", a)
		}
	}
	if p := s.Pop("/api/v1/pop/queue/lease"); p.Status != http.StatusNoContent {
		t.Fatalf("pop after acks = %d", p.Status)
	}
}

func TestFailedAcksRetryTheBatchThenDeadLetter(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Do("POST", "/api/v1/configure", `{"queue":"r","options":{"retryLimit":2}}`)
	s.Push(item("r", map[string]any{"n": 1}, "transactionId", "boom"))
	for round := range 3 {
		p := s.Pop("/api/v1/pop/queue/r?consumerGroup=g")
		if len(p.Messages) != 1 || p.Messages[0].RetryCount != round {
			t.Fatalf("round %d: pop = %+v", round, p)
		}
		a := s.Ack(p.Messages[0], "failed", "g")
		if a["success"] != true || a["dlq"] != (round == 2) {
			t.Fatalf("round %d: ack = %v", round, a)
		}
	}
	if p := s.Pop("/api/v1/pop/queue/r?consumerGroup=g"); p.Status != http.StatusNoContent {
		t.Fatalf("a dead-lettered message was delivered again: %+v", p)
	}
	var errMsg string
	var retries int
	err := combtest.ReadDB(t, s.Broker.DatabasePath()).QueryRow(`SELECT error_message, retry_count FROM dlq WHERE txn_id = 'boom' AND group_name = 'g'`).Scan(&errMsg, &retries)
	if err != nil || errMsg != "Retries exhausted" || retries != 2 {
		t.Fatalf("dlq row = %q, %d (%v)", errMsg, retries, err)
	}
	// Other groups are not affected.
	if p := s.Pop("/api/v1/pop/queue/r?consumerGroup=other"); len(p.Messages) != 1 {
		t.Fatalf("another group's pop = %+v", p)
	}
}

func TestFailedAckOfAWholeBatchRedeliversTheSameBatch(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(item("b", 1), item("b", 2), item("b", 3))
	p := s.Pop("/api/v1/pop/queue/b?batch=10")
	body := map[string]any{"consumerGroup": nil}
	var acks []map[string]any
	for _, m := range p.Messages {
		acks = append(acks, map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID, "status": "failed", "error": "nope"})
	}
	body["acknowledgments"] = acks
	if r := s.Do("POST", "/api/v1/ack/batch", body); r.Status != 200 {
		t.Fatalf("ack batch: %d %s", r.Status, r.Body)
	}
	again := s.Pop("/api/v1/pop/queue/b?batch=10")
	if len(again.Messages) != 3 || again.Messages[0].RetryCount != 1 {
		t.Fatalf("redelivered batch = %+v", again)
	}
}

func TestAckOfUnknownMessageChangesNothing(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(item("u", 1))
	p := s.Pop("/api/v1/pop/queue/u")
	r := s.Do("POST", "/api/v1/ack", map[string]any{"transactionId": "nope", "partitionId": p.Messages[0].PartitionID})
	var out []map[string]any
	r.JSON(t, &out)
	if r.Status != 200 || len(out) != 1 || out[0]["success"] != false || out[0]["error"] != "Message not found" {
		t.Fatalf("ack unknown = %d %s", r.Status, r.Body)
	}
	// Still leased by the original pop.
	if again := s.Pop("/api/v1/pop/queue/u"); again.Status != http.StatusNoContent {
		t.Fatal("an unknown ack released the lease")
	}
}

func TestTransactionIsAllOrNothing(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(item("src", map[string]any{"value": 1}))
	p := s.Pop("/api/v1/pop/queue/src")
	m := p.Messages[0]
	bad := map[string]any{"operations": []any{
		map[string]any{"type": "push", "items": []any{item("sink", 2)}},
		map[string]any{"type": "ack", "transactionId": "missing", "partitionId": m.PartitionID, "status": "completed"},
	}}
	r := s.Do("POST", "/api/v1/transaction", bad)
	out := r.Map(t)
	if r.Status != 200 || out["success"] != false || out["error"] != "ACK operation failed: Message not found" {
		t.Fatalf("failing transaction = %d %s", r.Status, r.Body)
	}
	if p := s.Pop("/api/v1/pop/queue/sink"); p.Status != http.StatusNoContent {
		t.Fatalf("a rolled-back transaction left its push behind: %+v", p)
	}
	good := map[string]any{"operations": []any{
		map[string]any{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": "completed"},
		map[string]any{"type": "push", "items": []any{item("sink", map[string]any{"value": 2})}},
	}, "requiredLeases": []string{m.LeaseID}}
	r = s.Do("POST", "/api/v1/transaction", good)
	out = r.Map(t)
	if out["success"] != true || out["transactionId"] == "" {
		t.Fatalf("transaction = %s", r.Body)
	}
	if p := s.Pop("/api/v1/pop/queue/sink"); len(p.Messages) != 1 || string(p.Messages[0].Data) != `{"value":2}` {
		t.Fatalf("sink = %+v", p)
	}
	// The ack released the source's lease and advanced its cursor.
	if p := s.Pop("/api/v1/pop/queue/src"); p.Status != http.StatusNoContent {
		t.Fatalf("source still delivers: %+v", p)
	}
	// A push whose transactionId exists fails the whole transaction.
	dup := map[string]any{"operations": []any{
		map[string]any{"type": "push", "items": []any{item("sink", 3, "transactionId", "fixed")}},
	}}
	if out := s.Do("POST", "/api/v1/transaction", dup).Map(t); out["success"] != true {
		t.Fatalf("first push = %v", out)
	}
	if out := s.Do("POST", "/api/v1/transaction", dup).Map(t); out["success"] != false {
		t.Fatalf("a transaction re-pushing an existing id succeeded: %v", out)
	}
}

func TestTransactionFailedAckDeadLettersAtOnce(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Do("POST", "/api/v1/configure", `{"queue":"tq","options":{"retryLimit":0}}`)
	s.Push(item("tq", 1))
	m := s.Pop("/api/v1/pop/queue/tq").Messages[0]
	out := s.Do("POST", "/api/v1/transaction", map[string]any{"operations": []any{
		map[string]any{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": "failed"},
	}, "requiredLeases": []string{m.LeaseID}}).Map(t)
	if out["success"] != true {
		t.Fatalf("transaction = %v", out)
	}
	if p := s.Pop("/api/v1/pop/queue/tq"); p.Status != http.StatusNoContent {
		t.Fatal("message still in the source")
	}
	var msg string
	if err := combtest.ReadDB(t, s.Broker.DatabasePath()).QueryRow(`SELECT error_message FROM dlq`).Scan(&msg); err != nil || msg != "Unknown error" {
		t.Fatalf("dlq error = %q (%v)", msg, err)
	}
}

func TestMultiPartitionPopSharesOneLease(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	for _, p := range []string{"p1", "p2", "p3"} {
		s.Push(item("mp", 1, "partition", p), item("mp", 2, "partition", p))
	}
	pop := s.Pop("/api/v1/pop/queue/mp?batch=100&partitions=3")
	parts, leases := map[string]bool{}, map[string]bool{}
	for _, m := range pop.Messages {
		parts[m.PartitionID], leases[m.LeaseID] = true, true
	}
	if len(pop.Messages) != 6 || len(parts) != 3 || len(leases) != 1 || pop.PartitionsClaimed != 3 {
		t.Fatalf("pop = %d messages, %d partitions, %d leases, claimed %d", len(pop.Messages), len(parts), len(leases), pop.PartitionsClaimed)
	}
	// Global cap across partitions, and a single partition without partitions=.
	s.Push(item("cap", 1, "partition", "a"), item("cap", 2, "partition", "a"), item("cap", 3, "partition", "b"), item("cap", 4, "partition", "b"))
	if p := s.Pop("/api/v1/pop/queue/cap?batch=3&partitions=2"); len(p.Messages) != 3 {
		t.Fatalf("capped pop = %d messages", len(p.Messages))
	}
	// Extending the shared lease touches every partition it holds.
	r := s.Do("POST", "/api/v1/lease/"+pop.LeaseID+"/extend", `{}`)
	var ext []map[string]any
	r.JSON(t, &ext)
	if r.Status != 200 || ext[0]["success"] != true || ext[0]["expiresAt"] == nil {
		t.Fatalf("extend = %s", r.Body)
	}
	if out := s.Do("POST", "/api/v1/lease/no-such-lease/extend", ``); !strings.Contains(string(out.Body), "Lease not found") {
		t.Fatalf("extend unknown = %s", out.Body)
	}
}

func TestAutoAckAdvancesWithoutALease(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(item("aa", 1), item("aa", 2))
	p := s.Pop("/api/v1/pop/queue/aa?batch=1&autoAck=true")
	if len(p.Messages) != 1 || p.LeaseID != "" || p.Messages[0].LeaseID != "" {
		t.Fatalf("autoAck pop = %+v", p)
	}
	next := s.Pop("/api/v1/pop/queue/aa?batch=5&autoAck=true")
	if len(next.Messages) != 1 || string(next.Messages[0].Data) != "2" {
		t.Fatalf("next pop = %+v", next)
	}
}

func TestConsumerGroupsFanOutAndQueueModeCompetes(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	for i := range 5 {
		s.Push(item("fan", i))
	}
	for _, g := range []string{"g1", "g2"} {
		if p := s.Pop("/api/v1/pop/queue/fan?batch=10&consumerGroup=" + g + "&subscriptionMode=from_beginning"); len(p.Messages) != 5 {
			t.Fatalf("group %s got %d, want all 5", g, len(p.Messages))
		}
	}
	if p := s.Pop("/api/v1/pop/queue/fan?batch=10"); len(p.Messages) != 5 {
		t.Fatalf("queue mode got %d", len(p.Messages))
	}
}

func TestSubscriptionModesOnFirstContact(t *testing.T) {
	c := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c})
	for i := range 5 {
		s.Push(item("sub", i))
	}
	c.Advance(time.Minute)
	for _, q := range []string{"consumerGroup=new&subscriptionMode=new", "consumerGroup=now&subscriptionFrom=now",
		"consumerGroup=junk&subscriptionFrom=not-a-time"} {
		if p := s.Pop("/api/v1/pop/queue/sub?batch=10&" + q); p.Status != http.StatusNoContent {
			t.Fatalf("%s first pop = %d messages, want none", q, len(p.Messages))
		}
	}
	cut := c.Now()
	c.Advance(time.Minute)
	for i := range 3 {
		s.Push(item("sub", 10+i))
	}
	for _, q := range []string{"consumerGroup=new&subscriptionMode=new", "consumerGroup=now&subscriptionFrom=now",
		"consumerGroup=junk", "consumerGroup=ts&subscriptionFrom=" + cut.Format(time.RFC3339)} {
		p := s.Pop("/api/v1/pop/queue/sub?batch=10&" + q)
		if len(p.Messages) != 3 || string(p.Messages[0].Data) != "10" {
			t.Fatalf("%s = %d messages, want the 3 new", q, len(p.Messages))
		}
	}
	// A mode passed to a group that already exists changes nothing.
	if p := s.Pop("/api/v1/pop/queue/sub?batch=10&consumerGroup=new&subscriptionMode=all"); p.Status != http.StatusNoContent {
		t.Fatalf("re-registering moved the cursor: %+v", p)
	}
	// Queue mode ignores subscription modes and reads the backlog.
	if p := s.Pop("/api/v1/pop/queue/sub?batch=100&subscriptionMode=new"); len(p.Messages) != 8 {
		t.Fatalf("queue mode got %d, want 8", len(p.Messages))
	}
}

func TestFirstContactIsRegisteredBeforeTheLongPollParks(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	for i := range 5 {
		s.Push(item("sn", i))
	}
	got := make(chan combtest.PopReply, 1)
	go func() {
		got <- s.Pop("/api/v1/pop/queue/sn?batch=10&wait=true&timeout=10000&consumerGroup=late&subscriptionMode=new")
	}()
	combtest.CheckFor(t, 5*time.Second, func() error {
		if s.Broker.Parked() != 1 {
			return fmt.Errorf("not parked")
		}
		return nil
	})
	s.Push(item("sn", "new-1"), item("sn", "new-2"))
	p := <-got
	if len(p.Messages) != 2 || string(p.Messages[0].Data) != `"new-1"` {
		t.Fatalf("pop = %+v, want exactly the two pushed while parked", p)
	}
}

func TestLaterPartitionIsSeededFromTheStoredSubscription(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(item("lp2", "old", "partition", "a"))
	if p := s.Pop("/api/v1/pop/queue/lp2?consumerGroup=g&subscriptionMode=new"); p.Status != http.StatusNoContent {
		t.Fatal("new group saw history")
	}
	// A partition created after the group subscribed: all of its messages
	// came after the subscription, so none is skipped.
	s.Push(item("lp2", "b1", "partition", "b"), item("lp2", "b2", "partition", "b"))
	p := s.Pop("/api/v1/pop/queue/lp2?consumerGroup=g&batch=10")
	if len(p.Messages) != 2 || p.Messages[0].Partition != "b" {
		t.Fatalf("later partition = %+v", p)
	}
}

func TestConfigureEchoesEveryOptionAndReplacesThemAll(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	r := s.Do("POST", "/api/v1/configure", `{"queue":"cfg","namespace":"billing","task":"invoice","options":{"leaseTime":60,"retryLimit":"5","priority":10,"maxSize":1000,"encryptionEnabled":false,"unknownKey":1}}`)
	out := r.Map(t)
	if r.Status != 200 || out["configured"] != true || out["queue"] != "cfg" || out["namespace"] != "billing" || out["task"] != "invoice" ||
		out["queueId"] == "" || out["partitionId"] == "" {
		t.Fatalf("configure = %d %s", r.Status, r.Body)
	}
	want := map[string]any{"priority": 10.0, "leaseTime": 60.0, "retryLimit": 5.0, "retryDelay": 1000.0, "maxSize": 1000.0, "ttl": 3600.0,
		"deadLetterQueue": false, "dlqAfterMaxRetries": false, "delayedProcessing": 0.0, "windowBuffer": 0.0, "retentionSeconds": 0.0,
		"completedRetentionSeconds": 0.0, "retentionEnabled": false, "encryptionEnabled": false, "maxWaitTimeSeconds": 0.0}
	opts := out["options"].(map[string]any)
	if len(opts) != len(want) {
		t.Errorf("options has %d keys, want %d: %v", len(opts), len(want), opts)
	}
	for k, v := range want {
		if opts[k] != v {
			t.Errorf("options.%s = %#v, want %#v", k, opts[k], v)
		}
	}
	// Full replace: omitted options go back to their defaults.
	out = s.Do("POST", "/api/v1/configure", `{"queue":"cfg"}`).Map(t)
	if o := out["options"].(map[string]any); o["leaseTime"] != 300.0 || o["priority"] != 0.0 || out["namespace"] != "" {
		t.Errorf("after replace: %v", out)
	}
	if r := s.Do("POST", "/api/v1/configure", `{"queue":""}`); r.Status != 200 {
		t.Errorf("configure of queue \"\" = %d %s", r.Status, r.Body)
	}
}

func TestDelayedProcessingAndWindowBuffer(t *testing.T) {
	c := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: c})
	s.Do("POST", "/api/v1/configure", `{"queue":"delay","options":{"delayedProcessing":2}}`)
	s.Do("POST", "/api/v1/configure", `{"queue":"window","options":{"windowBuffer":2}}`)
	s.Push(item("delay", 1))
	for i := range 3 {
		s.Push(item("window", i))
		c.Advance(500 * time.Millisecond)
	}
	if p := s.Pop("/api/v1/pop/queue/delay"); p.Status != http.StatusNoContent {
		t.Fatal("delayed message visible early")
	}
	if p := s.Pop("/api/v1/pop/queue/window?batch=4"); p.Status != http.StatusNoContent {
		t.Fatal("window released early")
	}
	c.Advance(2500 * time.Millisecond)
	if p := s.Pop("/api/v1/pop/queue/delay"); len(p.Messages) != 1 {
		t.Fatalf("delayed after 2.5 s = %+v", p)
	}
	if p := s.Pop("/api/v1/pop/queue/window?batch=4"); len(p.Messages) != 3 {
		t.Fatalf("window after 2.5 s = %d messages, want 3", len(p.Messages))
	}
}

func TestNamespacePopServesMatchingQueues(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(item("billing.invoice.eu", "x"))
	p := s.Pop("/api/v1/pop?namespace=billing&task=invoice")
	if len(p.Messages) != 1 || p.Messages[0].Queue != "billing.invoice.eu" {
		t.Fatalf("namespace pop = %+v", p)
	}
	if r := s.Do("GET", "/api/v1/pop", nil); r.Status != 400 {
		t.Errorf("namespace pop without filters = %d", r.Status)
	}
}

func TestStrictFIFOUnderConcurrentWorkers(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	const n = 100
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = item("fifo", i)
	}
	s.Push(items...)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p := s.Pop("/api/v1/pop/queue/fifo?wait=true&timeout=300")
				if p.Status == http.StatusNoContent {
					return
				}
				var v int
				json.Unmarshal(p.Messages[0].Data, &v)
				// Record before acking: the lease makes the partition ours.
				mu.Lock()
				order = append(order, v)
				mu.Unlock()
				s.Ack(p.Messages[0], "completed", "")
			}
		}()
	}
	wg.Wait()
	if len(order) != n {
		t.Fatalf("handled %d, want %d", len(order), n)
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("order[%d] = %d: FIFO broken", i, v)
		}
	}
}

func TestCORSAndHealth(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	r := s.Do("OPTIONS", "/api/v1/push", nil)
	if r.Status != 204 || len(r.Body) != 0 {
		t.Errorf("OPTIONS = %d %q", r.Status, r.Body)
	}
	h := s.Do("GET", "/health", nil).Map(t)
	if h["status"] != "healthy" || h["database"] != "connected" {
		t.Errorf("health = %v", h)
	}
}

func TestFailedAcksOfAReleasedBatchSucceedAcrossRequests(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(item("rel", 1), item("rel", 2), item("rel", 3))
	p := s.Pop("/api/v1/pop/queue/rel?batch=10")
	for i, m := range p.Messages {
		// One request per message, as a consumer nacking one by one sends.
		a := s.Ack(m, "failed", "")
		if a["success"] != true {
			t.Fatalf("failed ack %d of the batch = %v", i, a)
		}
	}
	again := s.Pop("/api/v1/pop/queue/rel?batch=10")
	if len(again.Messages) != 3 || again.Messages[0].RetryCount != 1 {
		t.Fatalf("redelivery = %+v, want the same 3 with one retry charged", again)
	}
	// A completed ack with the dropped lease is still refused.
	if a := s.Ack(p.Messages[0], "completed", ""); a["success"] != false || a["error"] != "Invalid or expired lease" {
		t.Fatalf("completed ack with the released lease = %v", a)
	}
}

func TestPopBatchIsBounded(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	items := make([]map[string]any, 0, combtype.MaxPopBatch+5)
	for i := range combtype.MaxPopBatch + 5 {
		items = append(items, item("big", i))
	}
	for len(items) > 0 { // a push holds at most broker.MaxPushItems
		n := min(len(items), broker.MaxPushItems)
		s.Push(items[:n]...)
		items = items[n:]
	}
	p := s.Pop("/api/v1/pop/queue/big?batch=100000000&autoAck=true")
	if len(p.Messages) != combtype.MaxPopBatch {
		t.Fatalf("a huge batch delivered %d messages, want the bound %d", len(p.Messages), combtype.MaxPopBatch)
	}
	if rest := s.Pop("/api/v1/pop/queue/big?batch=100&autoAck=true"); len(rest.Messages) != 5 {
		t.Fatalf("the rest = %d, want 5", len(rest.Messages))
	}
}

// Replies carry their length, so a pop of 100 messages goes out in one
// piece instead of chunks (net/http chunks past its 2 KB buffer).
func TestRepliesCarryTheirLength(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	items := make([]map[string]any, 100)
	for i := range items {
		items[i] = map[string]any{"queue": "orders", "payload": map[string]any{"i": i, "pad": strings.Repeat("x", 200)}}
	}
	s.Push(items...)
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/api/v1/pop/queue/orders?batch=100&wait=false", ""},
		{"POST", "/api/v1/push", `{"items":[{"queue":"orders","payload":1}]}`},
		{"POST", "/api/v1/push", `{"items":5}`}, // an error reply
	} {
		var body io.Reader
		if req.body != "" {
			body = strings.NewReader(req.body)
		}
		r, err := http.NewRequest(req.method, s.URL+req.path, body)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		resp, err := s.HTTP.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.TransferEncoding) != 0 || resp.ContentLength != int64(len(data)) || len(data) == 0 {
			t.Errorf("%s %s: %d, Transfer-Encoding %v, Content-Length %d, body %d bytes", req.method, req.path,
				resp.StatusCode, resp.TransferEncoding, resp.ContentLength, len(data))
		}
	}
}
