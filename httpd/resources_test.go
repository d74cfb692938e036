package httpd_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

var sixCounts = []string{"total", "pending", "processing", "completed", "failed", "deadLetter"}

// opCounts reads a six-counter object as ints.
func opCounts(t *testing.T, what string, v any) map[string]int {
	t.Helper()
	opKeys(t, what, v, sixCounts...)
	out := map[string]int{}
	for k, n := range v.(map[string]any) {
		out[k] = int(n.(float64))
	}
	return out
}

func wantCounts(t *testing.T, what string, got map[string]int, total, pending, processing, completed, dead int) {
	t.Helper()
	want := map[string]int{"total": total, "pending": pending, "processing": processing, "completed": completed,
		"failed": 0, "deadLetter": dead}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func opPartition(t *testing.T, detail map[string]any, name string) map[string]any {
	t.Helper()
	for _, p := range detail["partitions"].([]any) {
		if pm := p.(map[string]any); pm["name"] == name {
			return pm
		}
	}
	t.Fatalf("no partition %q in %v", name, detail)
	return nil
}

func TestResourcesQueueDetail(t *testing.T) {
	s, clk := opServer(t)
	opConfigure(t, s, "orders", map[string]any{"leaseTime": 30})
	for i := range 5 {
		s.Push(opItem("orders", "", fmt.Sprintf("d%d", i), i))
	}
	clk.Advance(time.Minute)
	s.Push(opItem("orders", "p2", "x1", 1), opItem("orders", "p2", "x2", 2), opItem("orders", "p2", "x3", 3))

	// Queue mode on Default: 3 leased, the first completed, the last
	// dead-lettered (an ack may not reach past its batch).
	pop := s.Pop("/api/v1/pop/queue/orders/partition/Default?batch=3")
	s.Ack(pop.Messages[0], "completed", "")
	s.Do("POST", "/api/v1/ack", map[string]any{"transactionId": "d2", "partitionId": pop.Messages[0].PartitionID, "status": "dlq"})

	d := opGet(t, s, "/api/v1/resources/queues/orders")
	opKeys(t, "queue detail", d, "id", "name", "namespace", "task", "createdAt", "partitions", "totals")
	if d["name"] != "orders" || d["createdAt"] != "2026-07-30T08:00:00.000Z" {
		t.Errorf("detail = %v", d)
	}
	def := opPartition(t, d, "Default")
	opKeys(t, "partition", def, "id", "name", "createdAt", "stats", "oldestMessage", "newestMessage")
	// d2 was dead-lettered while d1 was unacked: the cursor moved to 2, so
	// d0-d2 are completed and d3, d4 pending.
	wantCounts(t, "Default", opCounts(t, "stats", def["stats"]), 5, 2, 0, 3, 1)
	if def["oldestMessage"] != "2026-07-30T08:00:00.000Z" || def["newestMessage"] != "2026-07-30T08:00:00.000Z" {
		t.Errorf("Default times = %v / %v", def["oldestMessage"], def["newestMessage"])
	}
	p2 := opPartition(t, d, "p2")
	wantCounts(t, "p2", opCounts(t, "stats", p2["stats"]), 3, 3, 0, 0, 0)
	if p2["newestMessage"] != "2026-07-30T08:01:00.000Z" {
		t.Errorf("p2 newest = %v", p2["newestMessage"])
	}
	wantCounts(t, "totals", opCounts(t, "totals", d["totals"]), 8, 5, 0, 3, 1)

	// A live lease is processing; once it expires it is pending again.
	pop = s.Pop("/api/v1/pop/queue/orders/partition/p2?batch=2")
	if len(pop.Messages) != 2 {
		t.Fatalf("pop p2 = %+v", pop)
	}
	d = opGet(t, s, "/api/v1/resources/queues/orders")
	wantCounts(t, "p2 leased", opCounts(t, "stats", opPartition(t, d, "p2")["stats"]), 3, 1, 2, 0, 0)
	clk.Advance(31 * time.Second)
	d = opGet(t, s, "/api/v1/resources/queues/orders")
	wantCounts(t, "p2 expired", opCounts(t, "stats", opPartition(t, d, "p2")["stats"]), 3, 3, 0, 0, 0)

	opWantError(t, s.Do("GET", "/api/v1/resources/queues/nope", nil), http.StatusNotFound, "Queue not found")
	if r := s.Do("GET", "/api/v1/resources/queues/nope", nil); string(r.Body) != `{"error":"Queue not found"}` {
		t.Errorf("404 body = %s", r.Body)
	}
}

func TestResourcesBusModeUsesLeastAdvancedGroup(t *testing.T) {
	s, _ := opServer(t)
	for i := range 4 {
		s.Push(opItem("bus", "", fmt.Sprintf("b%d", i), i))
	}
	fast := s.Pop("/api/v1/pop/queue/bus?batch=4&consumerGroup=fast")
	s.Ack(fast.Messages[3], "completed", "fast")
	slow := s.Pop("/api/v1/pop/queue/bus?batch=1&consumerGroup=slow")
	d := opGet(t, s, "/api/v1/resources/queues/bus")
	// slow holds a lease on b0 and nothing completed: that is the status.
	wantCounts(t, "bus", opCounts(t, "totals", d["totals"]), 4, 3, 1, 0, 0)
	s.Ack(slow.Messages[0], "completed", "slow")
	d = opGet(t, s, "/api/v1/resources/queues/bus")
	wantCounts(t, "bus after slow ack", opCounts(t, "totals", d["totals"]), 4, 3, 0, 1, 0)
	// A queue-mode cursor, once there is one, decides instead.
	s.Pop("/api/v1/pop/queue/bus?batch=2&autoAck=true")
	d = opGet(t, s, "/api/v1/resources/queues/bus")
	wantCounts(t, "bus with queue mode", opCounts(t, "totals", d["totals"]), 4, 2, 0, 2, 0)
}

func TestResourcesQueuesListing(t *testing.T) {
	s, clk := opServer(t)
	for _, name := range []string{"billing.invoice", "billing.refund", "shipping.label", "plain"} {
		s.Push(opItem(name, "", "t", 1))
		clk.Advance(time.Second)
	}
	s.Push(opItem("billing.invoice", "eu", "t", 1))

	r := opGet(t, s, "/api/v1/resources/queues")
	opKeys(t, "queues reply", r, "queues")
	qs := r["queues"].([]any)
	var names []string
	for _, q := range qs {
		names = append(names, q.(map[string]any)["name"].(string))
	}
	if fmt.Sprint(names) != "[plain shipping.label billing.refund billing.invoice]" {
		t.Fatalf("newest first = %v", names)
	}
	inv := qs[3].(map[string]any)
	opKeys(t, "queue", inv, "id", "name", "namespace", "task", "createdAt", "partitions", "messages")
	opKeys(t, "queue messages", inv["messages"], "total", "pending", "processing")
	if inv["namespace"] != "billing" || inv["task"] != "invoice" || inv["partitions"] != 2.0 ||
		inv["messages"].(map[string]any)["total"] != 2.0 || inv["createdAt"] != "2026-07-30T08:00:00.000Z" {
		t.Errorf("billing.invoice = %v", inv)
	}
	for query, want := range map[string]string{
		"namespace=billing":              "[billing.refund billing.invoice]",
		"task=label":                     "[shipping.label]",
		"namespace=billing&task=invoice": "[billing.invoice]",
		"limit=2":                        "[plain shipping.label]",
		"limit=2&offset=3":               "[billing.invoice]",
		"offset=3":                       "[billing.invoice]",
		"namespace=none":                 "[]",
	} {
		var got []string
		for _, q := range opGet(t, s, "/api/v1/resources/queues?"+query)["queues"].([]any) {
			got = append(got, q.(map[string]any)["name"].(string))
		}
		if fmt.Sprint(got) != want && !(want == "[]" && got == nil) {
			t.Errorf("%s = %v, want %s", query, got, want)
		}
	}
	opWantError(t, s.Do("GET", "/api/v1/resources/queues?limit=junk", nil), 400, `limit must be a non-negative integer (got "junk")`)
}

func TestResourcesOverviewNamespacesTasks(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("billing.invoice", "", "a", 1), opItem("billing.invoice", "", "b", 2), opItem("billing.refund", "", "c", 3))
	s.Push(opItem("shipping.label", "p1", "d", 4), opItem("shipping.label", "p2", "e", 5))
	clk.Advance(10 * time.Second)
	pop := s.Pop("/api/v1/pop/queue/billing.invoice?batch=1")
	s.Ack(pop.Messages[0], "completed", "")

	o := opGet(t, s, "/api/v1/resources/overview")
	opKeys(t, "overview", o, "queues", "partitions", "namespaces", "tasks", "messages", "lag", "throughput", "timestamp", "statsAge")
	opKeys(t, "lag", o["lag"], "time", "offset")
	opKeys(t, "lag.time", o["lag"].(map[string]any)["time"], "avg", "median", "min", "max")
	opKeys(t, "lag.offset", o["lag"].(map[string]any)["offset"], "avg", "median", "min", "max")
	opKeys(t, "throughput", o["throughput"], "ingestedPerSecond", "processedPerSecond")
	if o["queues"] != 3.0 || o["partitions"] != 4.0 || o["namespaces"] != 2.0 || o["tasks"] != 3.0 ||
		o["timestamp"] != "2026-07-30T08:00:10.000Z" || o["statsAge"] != 0.0 {
		t.Errorf("overview = %v", o)
	}
	wantCounts(t, "overview messages", opCounts(t, "messages", o["messages"]), 5, 4, 0, 1, 0)
	// One cursor (queue mode on billing.invoice), one message behind, 10 s old.
	off := o["lag"].(map[string]any)["offset"].(map[string]any)
	age := o["lag"].(map[string]any)["time"].(map[string]any)
	if off["max"] != 1.0 || off["avg"] != 1.0 || age["max"] != 10.0 {
		t.Errorf("lag = %v / %v", off, age)
	}
	if in := o["throughput"].(map[string]any)["ingestedPerSecond"]; in != 5.0/60 {
		t.Errorf("ingestedPerSecond = %v", in)
	}

	ns := opGet(t, s, "/api/v1/resources/namespaces")
	opKeys(t, "namespaces reply", ns, "namespaces")
	list := ns["namespaces"].([]any)
	if len(list) != 2 {
		t.Fatalf("namespaces = %v", list)
	}
	opKeys(t, "namespace", list[0], "namespace", "queues", "partitions", "messages")
	opKeys(t, "namespace messages", list[0].(map[string]any)["messages"], "total", "pending")
	b := list[0].(map[string]any)
	if b["namespace"] != "billing" || b["queues"] != 2.0 || b["partitions"] != 2.0 ||
		b["messages"].(map[string]any)["total"] != 3.0 || b["messages"].(map[string]any)["pending"] != 2.0 {
		t.Errorf("billing = %v", b)
	}
	tasks := opGet(t, s, "/api/v1/resources/tasks")
	opKeys(t, "tasks reply", tasks, "tasks")
	tl := tasks["tasks"].([]any)
	if len(tl) != 3 {
		t.Fatalf("tasks = %v", tl)
	}
	opKeys(t, "task", tl[0], "task", "queues", "partitions", "messages")
	if tl[1].(map[string]any)["task"] != "label" || tl[1].(map[string]any)["partitions"] != 2.0 {
		t.Errorf("tasks = %v", tl)
	}
}

func TestDeleteQueue(t *testing.T) {
	s, clk := opServer(t)
	s.Push(opItem("gone", "", "a", 1), opItem("gone", "p2", "b", 2), opItem("other", "", "o", 3))
	leased := s.Pop("/api/v1/pop/queue/gone/partition/Default") // a live lease
	s.Pop("/api/v1/pop/queue/gone/partition/p2?consumerGroup=g&subscriptionMode=new")
	opDeadLetter(t, s, clk, "gone", "p2", "")
	if got := opDLQ(t, s, "queue=gone"); got.Total != 1 {
		t.Fatalf("DLQ before delete = %d", got.Total)
	}

	r := s.Do("DELETE", "/api/v1/resources/queues/gone", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	m := r.Map(t)
	opKeys(t, "delete reply", m, "deleted", "queue", "existed")
	if m["deleted"] != true || m["queue"] != "gone" || m["existed"] != true {
		t.Fatalf("delete = %v", m)
	}
	opWantError(t, s.Do("GET", "/api/v1/resources/queues/gone", nil), http.StatusNotFound, "Queue not found")
	if got := opDLQ(t, s, "queue=gone"); got.Total != 0 {
		t.Errorf("DLQ after delete = %d", got.Total)
	}
	// An ack of a message of the deleted queue finds nothing.
	if ack := s.Ack(leased.Messages[0], "completed", ""); ack["success"] != false || ack["error"] != "Message not found" {
		t.Errorf("ack after delete = %v", ack)
	}
	// Deleting again, or something unknown, is still 200.
	if m := s.Do("DELETE", "/api/v1/resources/queues/gone", nil).Map(t); m["deleted"] != true || m["existed"] != false {
		t.Errorf("second delete = %v", m)
	}

	// The recreated queue starts empty: same transactionIds are new again,
	// the old group's subscription (mode new) is gone, nothing is leased.
	res := s.Push(opItem("gone", "", "a", 10))
	if res[0]["status"] != "queued" {
		t.Fatalf("push after delete = %v", res)
	}
	pop := s.Pop("/api/v1/pop/queue/gone?batch=10")
	if len(pop.Messages) != 1 || string(pop.Messages[0].Data) != "10" {
		t.Fatalf("pop after recreate = %+v", pop)
	}
	if g := s.Pop("/api/v1/pop/queue/gone?batch=10&consumerGroup=g"); len(g.Messages) != 1 {
		t.Fatalf("group g after recreate got %d messages, want 1 (subscription reset to all)", len(g.Messages))
	}
	d := opGet(t, s, "/api/v1/resources/queues/gone")
	if len(d["partitions"].([]any)) != 1 {
		t.Errorf("recreated queue partitions = %v", d["partitions"])
	}
	wantCounts(t, "recreated", opCounts(t, "totals", d["totals"]), 1, 0, 1, 0, 0)
	// Other queues are untouched.
	if o := s.Pop("/api/v1/pop/queue/other"); len(o.Messages) != 1 {
		t.Errorf("other queue = %+v", o)
	}
	// A parked long-poll on a deleted queue is not an error.
	if p := s.Pop("/api/v1/pop/queue/gone/partition/p2?wait=true&timeout=50"); p.Status != http.StatusNoContent {
		t.Errorf("pop of deleted partition = %d", p.Status)
	}
}

func TestDeleteQueueWakesParkedPops(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(opItem("w", "", "a", 1))
	s.Pop("/api/v1/pop/queue/w") // leases the only partition
	done := make(chan int, 1)
	go func() {
		r := s.Do("GET", "/api/v1/pop/queue/w?wait=true&timeout=20000", nil)
		done <- r.Status
	}()
	combtest.CheckFor(t, 5*time.Second, func() error {
		if s.Broker.Parked() != 1 {
			return fmt.Errorf("%d pops parked", s.Broker.Parked())
		}
		return nil
	})
	s.Do("DELETE", "/api/v1/resources/queues/w", nil)
	s.Push(opItem("w", "", "b", 2))
	select {
	case st := <-done:
		if st != http.StatusOK {
			t.Fatalf("parked pop answered %d, want the recreated queue's message", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("parked pop did not wake after the queue was deleted and recreated")
	}
}
