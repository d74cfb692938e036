package httpd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

type messagesReply struct {
	Messages []map[string]any `json:"messages"`
	Mode     map[string]any   `json:"mode"`
}

func opMessages(t *testing.T, s *combtest.Server, query string) messagesReply {
	t.Helper()
	r := s.Do("GET", "/api/v1/messages?"+query, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("messages %s: %d %s", query, r.Status, r.Body)
	}
	opKeys(t, "messages reply", r.Map(t), "messages", "mode")
	var out messagesReply
	r.JSON(t, &out)
	return out
}

func txnsOf(msgs []map[string]any) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m["transactionId"].(string))
	}
	return out
}

func TestMessagesList(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("billing.invoice", "archive", "old", 0))
	clk.Advance(2 * time.Hour)
	for i := 1; i <= 3; i++ {
		s.Push(opItem("billing.invoice", "", fmt.Sprintf("a%d", i), i))
		clk.Advance(time.Second)
	}
	s.Push(opItem("billing.invoice", "eu", "e1", 1), opItem("shipping.label", "", "s1", 1))
	clk.Advance(time.Second)
	// a1 completed, a2 leased (processing), a3 pending; e1 dead-lettered.
	pop := s.Pop("/api/v1/pop/queue/billing.invoice/partition/Default?batch=1")
	s.Ack(pop.Messages[0], "completed", "")
	s.Pop("/api/v1/pop/queue/billing.invoice/partition/Default?batch=1")
	opDeadLetter(t, s, clk, "billing.invoice", "eu", "")

	got := opMessages(t, s, "")
	// Newest first; "old" is outside the default hour.
	if want := []string{"s1", "e1", "a3", "a2", "a1"}; !slices.Equal(txnsOf(got.Messages), want) &&
		!slices.Equal(txnsOf(got.Messages), []string{"e1", "s1", "a3", "a2", "a1"}) {
		t.Fatalf("messages = %v, want %v", txnsOf(got.Messages), want)
	}
	opKeys(t, "mode", got.Mode, "hasQueueMode", "busGroupsCount", "type")
	if got.Mode["hasQueueMode"] != true || got.Mode["type"] != "queue" || got.Mode["busGroupsCount"] != 0.0 {
		t.Errorf("mode = %v", got.Mode)
	}
	byTxn := map[string]map[string]any{}
	for _, m := range got.Messages {
		byTxn[m["transactionId"].(string)] = m
	}
	a2 := byTxn["a2"]
	opKeys(t, "message", a2, "id", "transactionId", "partitionId", "queuePath", "queue", "partition", "namespace", "task",
		"status", "queueStatus", "busStatus", "traceId", "producerSub", "queuePriority", "createdAt", "leaseExpiresAt")
	opKeys(t, "busStatus", a2["busStatus"], "consumedBy", "totalGroups")
	if a2["queuePath"] != "billing.invoice/Default" || a2["namespace"] != "billing" || a2["task"] != "invoice" ||
		a2["status"] != "processing" || a2["queueStatus"] != "processing" || a2["leaseExpiresAt"] != "2026-07-30T10:05:04.000Z" ||
		a2["createdAt"] != "2026-07-30T10:00:01.000Z" {
		t.Errorf("a2 = %v", a2)
	}
	for txn, want := range map[string]string{"a1": "completed", "a3": "pending", "e1": "dead_letter", "s1": "pending"} {
		if byTxn[txn]["status"] != want {
			t.Errorf("%s status = %v, want %s", txn, byTxn[txn]["status"], want)
		}
	}
	if byTxn["e1"]["queueStatus"] != "dead_letter" {
		t.Errorf("a dead letter of the queue mode has queueStatus %v", byTxn["e1"]["queueStatus"])
	}
	if byTxn["s1"]["queueStatus"] != nil {
		t.Errorf("a queue no queue-mode pop touched has queueStatus %v", byTxn["s1"]["queueStatus"])
	}

	for query, want := range map[string][]string{
		"queue=billing.invoice&partition=Default": {"a3", "a2", "a1"},
		"ns=shipping":                                              {"s1"},
		"namespace=shipping":                                       {"s1"},
		"task=invoice&partition=eu":                                {"e1"},
		"status=pending&queue=billing.invoice":                     {"a3"},
		"status=completed":                                         {"a1"},
		"status=dead_letter":                                       {"e1"},
		"queue=billing.invoice&partition=Default&limit=1":          {"a3"},
		"queue=billing.invoice&partition=Default&limit=2&offset=1": {"a2", "a1"},
		"queue=billing.invoice&partition=Default&offset=5":         nil,
		"queue=billing.invoice&partition=archive&from=2026-07-30":  {"old"},
		"queue=billing.invoice&to=" + url.QueryEscape("2026-07-30T10:00:01Z") + "&from=2026-07-30": {"a2", "a1", "old"},
		"queue=nope": nil,
	} {
		if got := txnsOf(opMessages(t, s, query).Messages); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", query, got, want)
		}
	}
	opWantError(t, s.Do("GET", "/api/v1/messages?status=failed", nil), http.StatusBadRequest, "status must be one of")
	opWantError(t, s.Do("GET", "/api/v1/messages?from=soon", nil), http.StatusBadRequest, "from and to")
}

func TestMessagesListBusMode(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("bus", "", "m1", 1), opItem("bus", "", "m2", 2))
	for _, g := range []string{"g1", "g2"} {
		p := s.Pop("/api/v1/pop/queue/bus?batch=1&consumerGroup=" + g)
		if g == "g1" {
			s.Ack(p.Messages[0], "completed", g)
		}
	}
	got := opMessages(t, s, "queue=bus")
	if got.Mode["type"] != "bus" || got.Mode["busGroupsCount"] != 2.0 || got.Mode["hasQueueMode"] != false {
		t.Errorf("mode = %v", got.Mode)
	}
	m1 := got.Messages[1]
	bs := m1["busStatus"].(map[string]any)
	// g1 passed m1, g2 holds it leased: not completed until every group passed.
	if m1["transactionId"] != "m1" || bs["consumedBy"] != 1.0 || bs["totalGroups"] != 2.0 || m1["status"] != "processing" {
		t.Errorf("m1 = %v", m1)
	}
}

func TestMessageDetail(t *testing.T) {
	s, clk := opServer(t)
	opConfigure(t, s, "d", map[string]any{"leaseTime": 60, "retryLimit": 5, "priority": 7})
	res := s.Push(opItem("d", "", "t1", map[string]any{"k": []int{1, 2}}), opItem("d", "", "t2", nil))
	pid := res[0]["partition_id"].(string)
	s.Pop("/api/v1/pop/queue/d?batch=1&consumerGroup=g")

	r := s.Do("GET", "/api/v1/messages/"+pid+"/t1", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	m := r.Map(t)
	opKeys(t, "message detail", m, "id", "transactionId", "partitionId", "queuePath", "queue", "partition", "namespace",
		"task", "status", "payload", "isEncrypted", "traceId", "producerSub", "createdAt", "errorMessage", "retryCount",
		"leaseExpiresAt", "queueConfig", "mode", "consumerGroups")
	opKeys(t, "queueConfig", m["queueConfig"], "leaseTime", "retryLimit", "retryDelay", "ttl", "priority")
	opKeys(t, "mode", m["mode"], "hasQueueMode", "busGroupsCount", "consumedByGroups", "type")
	if p, _ := json.Marshal(m["payload"]); string(p) != `{"k":[1,2]}` {
		t.Errorf("payload = %s", p)
	}
	if m["id"] != res[0]["message_id"] || m["status"] != "processing" || m["leaseExpiresAt"] != "2026-07-30T08:01:00.000Z" ||
		m["isEncrypted"] != false || m["errorMessage"] != nil || m["queuePath"] != "d/Default" ||
		m["queueConfig"].(map[string]any)["retryLimit"] != 5.0 || m["queueConfig"].(map[string]any)["priority"] != 7.0 {
		t.Errorf("detail = %v", m)
	}
	groups := m["consumerGroups"].([]any)
	if len(groups) != 1 {
		t.Fatalf("consumerGroups = %v", groups)
	}
	opKeys(t, "consumer group", groups[0], "name", "consumed", "leaseExpiresAt")
	if g := groups[0].(map[string]any); g["name"] != "g" || g["consumed"] != false || g["leaseExpiresAt"] == nil {
		t.Errorf("group = %v", g)
	}
	// null payloads come back as null.
	if p := s.Do("GET", "/api/v1/messages/"+pid+"/t2", nil).Map(t); p["payload"] != nil || p["status"] != "pending" {
		t.Errorf("t2 = %v", p)
	}
	// After a dead-letter the error text and retry count show.
	clk.Advance(time.Second)
	s.Do("POST", "/api/v1/ack", map[string]any{"transactionId": "t1", "partitionId": pid, "status": "dlq",
		"error": "bad input", "consumerGroup": "g"})
	if p := s.Do("GET", "/api/v1/messages/"+pid+"/t1", nil).Map(t); p["status"] != "dead_letter" || p["errorMessage"] != "bad input" {
		t.Errorf("after dlq = %v", p)
	}
	for _, path := range []string{"/api/v1/messages/" + pid + "/nope", "/api/v1/messages/not-a-uuid/t1",
		"/api/v1/messages/00000000-0000-0000-0000-000000000000/t1", "/api/v1/messages/%20/%00"} {
		r := s.Do("GET", path, nil)
		if r.Status != http.StatusNotFound || string(r.Body) != `{"error":"Message not found"}` {
			t.Errorf("GET %s = %d %s", path, r.Status, r.Body)
		}
	}
	// Routes the SDKs call but Queen does not serve (docs/wire.md, Routes).
	for _, c := range [][2]string{{"POST", "/api/v1/messages/" + pid + "/t1/retry"}, {"POST", "/api/v1/messages/" + pid + "/t1/dlq"},
		{"GET", "/api/v1/resources/partitions"}, {"DELETE", "/api/v1/queues/d/clear"}} {
		if r := s.Do(c[0], c[1], nil); r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), `"error"`) {
			t.Errorf("%s %s = %d %s", c[0], c[1], r.Status, r.Body)
		}
	}
}

func deleteMsg(t *testing.T, s *combtest.Server, pid, txn string) map[string]any {
	t.Helper()
	r := s.Do("DELETE", "/api/v1/messages/"+pid+"/"+txn, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("delete %s: %d %s", txn, r.Status, r.Body)
	}
	m := r.Map(t)
	opKeys(t, "delete reply", m, "success", "partitionId", "transactionId", "message")
	return m
}

func popTxns(p combtest.PopReply) []string {
	var out []string
	for _, m := range p.Messages {
		out = append(out, m.TransactionID)
	}
	return out
}

func TestDeleteMessageIsSkippedOnDelivery(t *testing.T) {
	s, _ := opServer(t)
	var pid string
	for i := 1; i <= 6; i++ {
		pid = s.Push(opItem("tomb", "", fmt.Sprintf("m%d", i), i))[0]["partition_id"].(string)
	}
	// First, middle and last of the first five.
	for _, txn := range []string{"m1", "m3", "m5"} {
		if m := deleteMsg(t, s, pid, txn); m["success"] != true || m["message"] != "Message deleted successfully" ||
			m["transactionId"] != txn || m["partitionId"] != pid {
			t.Fatalf("delete %s = %v", txn, m)
		}
	}
	if m := deleteMsg(t, s, pid, "m3"); m["success"] != false || m["message"] != "Message not found" {
		t.Fatalf("second delete = %v", m)
	}
	if m := deleteMsg(t, s, pid, "nope"); m["success"] != false {
		t.Fatalf("delete of unknown = %v", m)
	}
	opWantError(t, s.Do("GET", "/api/v1/messages/"+pid+"/m3", nil), http.StatusNotFound, "Message not found")
	if got := txnsOf(opMessages(t, s, "queue=tomb").Messages); !slices.Equal(got, []string{"m6", "m4", "m2"}) {
		t.Fatalf("listing after delete = %v", got)
	}

	// batch=1 skips the deleted head at once.
	p := s.Pop("/api/v1/pop/queue/tomb?batch=1")
	if got := popTxns(p); !slices.Equal(got, []string{"m2"}) {
		t.Fatalf("pop batch=1 = %v", got)
	}
	if ack := s.Ack(p.Messages[0], "completed", ""); ack["leaseReleased"] != true {
		t.Fatalf("ack = %v", ack)
	}
	// batch=2: m3 is skipped before the span and m5 inside it; deleted
	// messages do not count against the batch.
	p = s.Pop("/api/v1/pop/queue/tomb?batch=2")
	if got := popTxns(p); !slices.Equal(got, []string{"m4", "m6"}) {
		t.Fatalf("pop batch=2 = %v", got)
	}
	s.Ack(p.Messages[0], "completed", "")
	if ack := s.Ack(p.Messages[1], "completed", ""); ack["leaseReleased"] != true {
		t.Fatalf("acking every delivered message must release the lease: %v", ack)
	}
	if p := s.Pop("/api/v1/pop/queue/tomb"); p.Status != http.StatusNoContent {
		t.Fatalf("pop after all = %d", p.Status)
	}
	s.Push(opItem("tomb", "", "m7", 7))
	if p := s.Pop("/api/v1/pop/queue/tomb"); !slices.Equal(popTxns(p), []string{"m7"}) {
		t.Fatalf("pop of a later message = %v", popTxns(p))
	}
	// A group that starts later skips them as well, and sees the rest.
	g := s.Pop("/api/v1/pop/queue/tomb?batch=10&consumerGroup=late")
	if got := popTxns(g); !slices.Equal(got, []string{"m2", "m4", "m6", "m7"}) {
		t.Fatalf("late group = %v", got)
	}
	s.Ack(g.Messages[0], "completed", "late")
	if ack := s.Ack(g.Messages[3], "completed", "late"); ack["leaseReleased"] != true {
		t.Fatalf("late group ack = %v", ack)
	}
}

func TestDeleteMessageTailAndAutoAck(t *testing.T) {
	s, _ := opServer(t)
	var pid string
	for i := 1; i <= 3; i++ {
		pid = s.Push(opItem("tail", "", fmt.Sprintf("m%d", i), i))[0]["partition_id"].(string)
	}
	for _, txn := range []string{"m1", "m2", "m3"} {
		deleteMsg(t, s, pid, txn)
	}
	// Everything deleted: nothing to deliver, no lease held, and a later
	// push is delivered at once.
	if p := s.Pop("/api/v1/pop/queue/tail?batch=5"); p.Status != http.StatusNoContent {
		t.Fatalf("pop of deleted messages = %+v", p)
	}
	s.Push(opItem("tail", "", "m4", 4), opItem("tail", "", "m5", 5), opItem("tail", "", "m6", 6))
	deleteMsg(t, s, pid, "m5")
	p := s.Pop("/api/v1/pop/queue/tail?batch=5&autoAck=true")
	if got := popTxns(p); !slices.Equal(got, []string{"m4", "m6"}) {
		t.Fatalf("autoAck pop = %v", got)
	}
	if p := s.Pop("/api/v1/pop/queue/tail"); p.Status != http.StatusNoContent {
		t.Fatalf("pop after autoAck = %d", p.Status)
	}
	d := opGet(t, s, "/api/v1/resources/queues/tail")
	wantCounts(t, "tail", opCounts(t, "totals", d["totals"]), 6, 0, 0, 6, 0)
}

// A message deleted while in flight was already delivered: acking it still
// works, and acking the whole batch releases the lease.
func TestDeleteMessageInFlight(t *testing.T) {
	s, _ := opServer(t)
	s.Push(opItem("fl", "", "m1", 1), opItem("fl", "", "m2", 2))
	p := s.Pop("/api/v1/pop/queue/fl?batch=2")
	deleteMsg(t, s, p.Messages[1].PartitionID, "m2")
	s.Ack(p.Messages[0], "completed", "")
	if ack := s.Ack(p.Messages[1], "completed", ""); ack["success"] != true || ack["leaseReleased"] != true {
		t.Fatalf("ack of the deleted in-flight message = %v", ack)
	}
}

// The message listing of a queue with more partitions than are walked by
// their own index (it then walks the newest segments of the whole log)
// pages exactly as the partition-by-partition walk does: newest first,
// every message once across pages, deleted ones left out, status filters
// and the mode over the whole queue.
func TestMessagesListManyPartitionsPagesAsFew(t *testing.T) {
	s, clk := opServer(t)
	const parts = 300
	var want []string // newest first
	for i := range parts {
		txn := fmt.Sprintf("w%03d", i)
		s.Push(opItem("wide", fmt.Sprintf("p%03d", i), txn, i), opItem("narrow", "", fmt.Sprintf("n%03d", i), i))
		want = append([]string{txn}, want...)
		clk.Advance(time.Millisecond)
	}
	// Queue mode consumes the oldest partition's message, a bus group
	// leases one more; the newest message is deleted.
	first := s.Pop("/api/v1/pop/queue/wide/partition/p000?batch=1")
	s.Ack(first.Messages[0], "completed", "")
	s.Pop("/api/v1/pop/queue/wide/partition/p001?batch=1&consumerGroup=g")
	newest := opMessages(t, s, "queue=wide&limit=1")
	deleteMsg(t, s, newest.Messages[0]["partitionId"].(string), "w299")
	want = want[1:]

	for _, limit := range []int{7, 100} {
		var got []string
		for off := 0; ; off += limit {
			page := opMessages(t, s, fmt.Sprintf("queue=wide&from=2000-01-01&limit=%d&offset=%d", limit, off))
			if page.Mode["hasQueueMode"] != true || page.Mode["busGroupsCount"] != 1.0 || page.Mode["type"] != "hybrid" {
				t.Fatalf("limit %d offset %d: mode = %v", limit, off, page.Mode)
			}
			got = append(got, txnsOf(page.Messages)...)
			if len(page.Messages) < limit {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: pages hold %d messages %v…, want %d %v…", limit, len(got), got[:min(5, len(got))], len(want), want[:5])
		}
	}
	if got := txnsOf(opMessages(t, s, "queue=wide&from=2000-01-01&status=completed").Messages); !slices.Equal(got, []string{"w000"}) {
		t.Errorf("completed = %v, want [w000]", got)
	}
	// One partition is walked by its own index: the same message, the same mode of that partition.
	one := opMessages(t, s, "queue=wide&partition=p001&from=2000-01-01")
	if got := txnsOf(one.Messages); !slices.Equal(got, []string{"w001"}) || one.Messages[0]["status"] != "pending" {
		t.Errorf("partition p001 = %v", one.Messages)
	}
	if one.Mode["hasQueueMode"] != true || one.Mode["busGroupsCount"] != 1.0 {
		t.Errorf("partition p001 mode = %v", one.Mode)
	}
	// Without a queue both queues are listed, newest first, still exactly once.
	all := opMessages(t, s, "from=2000-01-01&limit=4")
	if got := txnsOf(all.Messages); len(got) != 4 || got[0] != "n299" ||
		!slices.Equal(got[1:3], []string{"w298", "n298"}) && !slices.Equal(got[1:3], []string{"n298", "w298"}) {
		t.Errorf("all queues = %v", got)
	}
}
