package httpd_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
)

// tenantMsg is a popped message with the fields this test checks.
type tenantMsg struct {
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	LeaseID       string          `json:"leaseId"`
	Data          json.RawMessage `json:"data"`
	ProducerSub   *string         `json:"producerSub"`
}

func (m tenantMsg) pop() combtest.PopMessage {
	return combtest.PopMessage{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}
}

// popAll pops up to 100 messages of queue for group ("" = queue mode).
func popAll(t *testing.T, c *combtest.Client, queue, group string) []tenantMsg {
	t.Helper()
	path := "/api/v1/pop/queue/" + queue + "?batch=100"
	if group != "" {
		path += "&consumerGroup=" + group
	}
	r := c.Do("GET", path, nil)
	switch r.Status {
	case http.StatusNoContent:
		return nil
	case http.StatusOK:
	default:
		t.Fatalf("pop %s: %d %s", path, r.Status, r.Body)
	}
	var out struct {
		Messages []tenantMsg `json:"messages"`
	}
	r.JSON(t, &out)
	return out.Messages
}

// owners lists the "tenant" field of each message's payload.
func owners(t *testing.T, msgs []tenantMsg) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		var p struct {
			Tenant string `json:"tenant"`
		}
		if err := json.Unmarshal(m.Data, &p); err != nil {
			t.Fatalf("payload %s: %v", m.Data, err)
		}
		out = append(out, p.Tenant)
	}
	return out
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestTenantsIsolated runs two tenants side by side over HTTP, each with a
// queue "orders" and a group "workers", and checks that nothing one does is
// seen or changed by the other, nor by the default tenant, on every route
// family the server registers.
func TestTenantsIsolated(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	routes := httpd.NewHandler(srv.Broker, httpd.Config{}).Routes()
	has := func(route string) bool { return slices.Contains(routes, route) }
	needs := func(t *testing.T, rs ...string) {
		t.Helper()
		for _, r := range rs {
			if !has(r) {
				t.Skipf("%s is not registered", r)
			}
		}
	}
	A := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("alice", "admin", "acme"))))
	B := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("bob", "admin", "globex"))))
	D := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("dee", "admin", ""))))

	// Each tenant configures its own "orders": A dead-letters on the first
	// failure, B retries.
	queueID := map[string]string{}
	for name, c := range map[string]*combtest.Client{"A": A, "B": B} {
		retry := map[string]int{"A": 0, "B": 3}[name]
		r := c.Do("POST", "/api/v1/configure", map[string]any{"queue": "orders", "options": map[string]any{"retryLimit": retry}})
		if r.Status != http.StatusOK {
			t.Fatalf("configure as %s: %d %s", name, r.Status, r.Body)
		}
		m := r.Map(t)
		queueID[name] = m["queueId"].(string)
		if got := m["options"].(map[string]any)["retryLimit"]; got != float64(retry) {
			t.Errorf("configure as %s: retryLimit %v, want %d", name, got, retry)
		}
	}
	if queueID["A"] == queueID["B"] {
		t.Fatalf("both tenants got queue %s", queueID["A"])
	}

	// Same transaction ids in both tenants: dedup keys are per tenant.
	item := func(tenant, txn string) map[string]any {
		return map[string]any{"queue": "orders", "transactionId": txn, "payload": map[string]any{"tenant": tenant, "txn": txn}}
	}
	for _, res := range A.Push(item("acme", "t1"), item("acme", "t2"), item("acme", "t3")) {
		if res["status"] != "queued" {
			t.Errorf("push as A: %v", res)
		}
	}
	for _, res := range B.Push(item("globex", "t1"), item("globex", "t2")) {
		if res["status"] != "queued" {
			t.Errorf("push as B: %v (a transactionId of another tenant deduplicated it)", res)
		}
	}

	var aMsgs, bMsgs []tenantMsg
	t.Run("pop", func(t *testing.T) {
		aMsgs = popAll(t, A, "orders", "workers")
		bMsgs = popAll(t, B, "orders", "workers")
		if got := owners(t, aMsgs); !slices.Equal(got, repeat("acme", 3)) {
			t.Errorf("A popped %v", got)
		}
		if got := owners(t, bMsgs); !slices.Equal(got, repeat("globex", 2)) {
			t.Errorf("B popped %v", got)
		}
		if got := popAll(t, D, "orders", "workers"); len(got) != 0 {
			t.Errorf("default tenant popped %v", owners(t, got))
		}
		if got := popAll(t, D, "orders", ""); len(got) != 0 {
			t.Errorf("default tenant popped in queue mode %v", owners(t, got))
		}
		// A namespace pop looks only at the caller's queues.
		A.Push(map[string]any{"queue": "shop.jobs", "payload": map[string]any{"tenant": "acme"}})
		for name, c := range map[string]*combtest.Client{"B": B, "default": D} {
			if r := c.Do("GET", "/api/v1/pop?namespace=shop&batch=10", nil); r.Status != http.StatusNoContent {
				t.Errorf("%s's namespace pop reached A's queue: %d %s", name, r.Status, r.Body)
			}
		}
		if r := A.Do("GET", "/api/v1/pop?namespace=shop&batch=10&autoAck=true", nil); r.Status != http.StatusOK {
			t.Errorf("A's namespace pop: %d %s", r.Status, r.Body)
		}
		for _, m := range aMsgs {
			if m.ProducerSub == nil || *m.ProducerSub != "alice" {
				t.Errorf("A's message producerSub %v, want alice", m.ProducerSub)
			}
		}
	})
	if len(aMsgs) != 3 || len(bMsgs) != 2 {
		t.FailNow()
	}

	t.Run("ack, lease and transaction across tenants", func(t *testing.T) {
		if res := B.Ack(aMsgs[0].pop(), "completed", "workers"); res["success"] != false {
			t.Errorf("B acked A's message: %v", res)
		}
		r := B.Do("POST", "/api/v1/ack/batch", map[string]any{"consumerGroup": "workers", "acknowledgments": []any{
			map[string]any{"transactionId": aMsgs[1].TransactionID, "partitionId": aMsgs[1].PartitionID, "status": "completed"}}})
		if r.Status != http.StatusOK || strings.Contains(string(r.Body), `"success":true`) {
			t.Errorf("B batch-acked A's message: %d %s", r.Status, r.Body)
		}
		r = B.Do("POST", "/api/v1/lease/"+aMsgs[0].LeaseID+"/extend", map[string]any{"seconds": 60})
		if r.Status != http.StatusOK || strings.Contains(string(r.Body), `"success":true`) {
			t.Errorf("B extended A's lease: %d %s", r.Status, r.Body)
		}
		r = B.Do("POST", "/api/v1/transaction", map[string]any{"operations": []any{map[string]any{"type": "ack",
			"transactionId": aMsgs[2].TransactionID, "partitionId": aMsgs[2].PartitionID, "status": "completed", "consumerGroup": "workers"}}})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"success":false`) {
			t.Errorf("B's transaction acked A's message: %d %s", r.Status, r.Body)
		}
		// A's lease is intact: it extends, and A's acks all land.
		r = A.Do("POST", "/api/v1/lease/"+aMsgs[0].LeaseID+"/extend", map[string]any{"seconds": 60})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"success":true`) {
			t.Errorf("A could not extend its lease: %d %s", r.Status, r.Body)
		}
		for _, m := range aMsgs {
			if res := A.Ack(m.pop(), "completed", "workers"); res["success"] != true {
				t.Errorf("A's ack: %v", res)
			}
		}
		for _, m := range bMsgs {
			if res := B.Ack(m.pop(), "completed", "workers"); res["success"] != true {
				t.Errorf("B's ack: %v", res)
			}
		}
		if got := popAll(t, A, "orders", "workers"); len(got) != 0 {
			t.Errorf("A's workers got %v after acking everything", owners(t, got))
		}
		if got := popAll(t, B, "orders", "workers"); len(got) != 0 {
			t.Errorf("B's workers got %v after acking everything", owners(t, got))
		}
	})

	// A second group per tenant, so listings can tell whose groups they show.
	popAll(t, A, "orders", "acme-only")
	popAll(t, B, "orders", "globex-only")

	t.Run("consumer-group listings", func(t *testing.T) {
		needs(t, "GET /api/v1/consumer-groups", "GET /api/v1/consumer-groups/:group")
		list := func(c *combtest.Client) []string {
			r := c.Do("GET", "/api/v1/consumer-groups", nil)
			if r.Status != http.StatusOK {
				t.Fatalf("list groups: %d %s", r.Status, r.Body)
			}
			var groups []struct {
				Name      string `json:"name"`
				QueueName string `json:"queueName"`
			}
			r.JSON(t, &groups)
			var names []string
			for _, g := range groups {
				if g.QueueName != "shop.jobs" { // A's namespace-pop queue
					names = append(names, g.Name+"@"+g.QueueName)
				}
			}
			slices.Sort(names)
			return names
		}
		if got, want := list(A), []string{"acme-only@orders", "workers@orders"}; !slices.Equal(got, want) {
			t.Errorf("A's groups %v, want %v", got, want)
		}
		if got, want := list(B), []string{"globex-only@orders", "workers@orders"}; !slices.Equal(got, want) {
			t.Errorf("B's groups %v, want %v", got, want)
		}
		if got := list(D); len(got) != 0 {
			t.Errorf("default tenant's groups %v", got)
		}
		consumed := func(c *combtest.Client, group string) (total float64, parts int) {
			r := c.Do("GET", "/api/v1/consumer-groups/"+group, nil)
			if r.Status != http.StatusOK {
				t.Fatalf("get group: %d %s", r.Status, r.Body)
			}
			var out map[string]struct {
				Partitions []struct {
					TotalConsumed float64 `json:"totalConsumed"`
				} `json:"partitions"`
			}
			r.JSON(t, &out)
			for _, q := range out {
				for _, p := range q.Partitions {
					total += p.TotalConsumed
					parts++
				}
			}
			return total, parts
		}
		if n, p := consumed(A, "workers"); n != 3 || p != 1 {
			t.Errorf("A's workers consumed %v over %d partitions, want 3 over 1", n, p)
		}
		if n, p := consumed(B, "workers"); n != 2 || p != 1 {
			t.Errorf("B's workers consumed %v over %d partitions, want 2 over 1", n, p)
		}
		if _, p := consumed(B, "acme-only"); p != 0 {
			t.Errorf("B sees A's group acme-only on %d partitions", p)
		}
	})

	t.Run("seek", func(t *testing.T) {
		needs(t, "POST /api/v1/consumer-groups/:group/queues/:queue/seek",
			"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek")
		back := map[string]any{"timestamp": "2000-01-01T00:00:00Z"}
		// B rewinds its workers: only B's cursor moves.
		if r := B.Do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", back); r.Status != http.StatusOK {
			t.Fatalf("B's seek: %d %s", r.Status, r.Body)
		}
		if got := popAll(t, A, "orders", "workers"); len(got) != 0 {
			t.Errorf("B's seek moved A's cursor: A got %v", owners(t, got))
		}
		got := popAll(t, B, "orders", "workers")
		if !slices.Equal(owners(t, got), repeat("globex", 2)) {
			t.Errorf("B after its seek got %v", owners(t, got))
		}
		for _, m := range got {
			B.Ack(m.pop(), "completed", "workers")
		}
		// A rewinds one partition: B is untouched.
		if r := A.Do("POST", "/api/v1/consumer-groups/workers/queues/orders/partitions/Default/seek", back); r.Status != http.StatusOK {
			t.Fatalf("A's partition seek: %d %s", r.Status, r.Body)
		}
		if got := popAll(t, B, "orders", "workers"); len(got) != 0 {
			t.Errorf("A's seek moved B's cursor: B got %v", owners(t, got))
		}
		got = popAll(t, A, "orders", "workers")
		if !slices.Equal(owners(t, got), repeat("acme", 3)) {
			t.Errorf("A after its seek got %v", owners(t, got))
		}
		for _, m := range got {
			A.Ack(m.pop(), "completed", "workers")
		}
		// The default tenant has no "orders" to seek.
		if r := D.Do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", map[string]any{"toEnd": true}); r.Status != http.StatusNotFound {
			t.Errorf("default tenant's seek of orders: %d %s, want 404", r.Status, r.Body)
		}
		if r := D.Do("POST", "/api/v1/consumer-groups/workers/queues/orders/partitions/Default/seek", map[string]any{"toEnd": true}); r.Status != http.StatusNotFound {
			t.Errorf("default tenant's partition seek of orders: %d %s, want 404", r.Status, r.Body)
		}
	})

	t.Run("snapshots", func(t *testing.T) {
		needs(t, "POST /api/v1/consumer-groups/:group/queues/:queue/snapshots", "GET /api/v1/snapshots",
			"GET /api/v1/snapshots/:name", "PUT /api/v1/snapshots/:name", "DELETE /api/v1/snapshots/:name",
			"POST /api/v1/consumer-groups/:group/queues/:queue/seek")
		snap := func(c *combtest.Client, name, owner string) {
			t.Helper()
			r := c.Do("POST", "/api/v1/consumer-groups/workers/queues/orders/snapshots",
				map[string]any{"name": name, "labels": map[string]string{"owner": owner}})
			if r.Status != http.StatusCreated {
				t.Fatalf("%s's snapshot %s: %d %s", owner, name, r.Status, r.Body)
			}
		}
		seek := func(c *combtest.Client, body map[string]any) *combtest.Response {
			return c.Do("POST", "/api/v1/consumer-groups/workers/queues/orders/seek", body)
		}
		// A saves its workers' position at the start, then goes back to the end.
		if r := seek(A, map[string]any{"timestamp": "2000-01-01T00:00:00Z"}); r.Status != http.StatusOK {
			t.Fatalf("A's seek: %d %s", r.Status, r.Body)
		}
		snap(A, "early", "acme")
		snap(A, "shared-name", "acme")
		if r := seek(A, map[string]any{"toEnd": true}); r.Status != http.StatusOK {
			t.Fatalf("A's seek to end: %d %s", r.Status, r.Body)
		}
		// Names are per tenant: B may reuse one of A's.
		snap(B, "shared-name", "globex")

		for name, c := range map[string]*combtest.Client{"B": B, "default": D} {
			if r := c.Do("GET", "/api/v1/snapshots", nil); r.Status != http.StatusOK || strings.Contains(string(r.Body), "acme") {
				t.Errorf("%s's snapshot list: %d %s", name, r.Status, r.Body)
			}
			if r := c.Do("GET", "/api/v1/snapshots/early", nil); r.Status != http.StatusNotFound {
				t.Errorf("%s reading A's snapshot: %d %s, want 404", name, r.Status, r.Body)
			}
		}
		// B cannot seek to A's snapshot, and its own same-named one holds B's
		// position (the end), not A's.
		if r := seek(B, map[string]any{"snapshot": "early"}); r.Status != http.StatusNotFound {
			t.Errorf("B seeking to A's snapshot: %d %s, want 404", r.Status, r.Body)
		}
		if r := seek(B, map[string]any{"snapshot": "shared-name"}); r.Status != http.StatusOK {
			t.Errorf("B seeking to its snapshot: %d %s", r.Status, r.Body)
		}
		if got := popAll(t, B, "orders", "workers"); len(got) != 0 {
			t.Errorf("B's snapshot restored A's position: B got %v", owners(t, got))
		}
		// B's update and delete touch only B's snapshot.
		if r := B.Do("PUT", "/api/v1/snapshots/shared-name", map[string]any{"labels": map[string]string{"owner": "mallory"}}); r.Status != http.StatusOK {
			t.Errorf("B's update: %d %s", r.Status, r.Body)
		}
		if r := B.Do("DELETE", "/api/v1/snapshots/shared-name", nil); r.Status != http.StatusOK {
			t.Errorf("B's delete: %d %s", r.Status, r.Body)
		}
		if r := B.Do("DELETE", "/api/v1/snapshots/early", nil); r.Status != http.StatusNotFound {
			t.Errorf("B deleting A's snapshot: %d %s, want 404", r.Status, r.Body)
		}
		r := A.Do("GET", "/api/v1/snapshots/shared-name", nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "acme") || strings.Contains(string(r.Body), "mallory") {
			t.Errorf("A's snapshot after B's update and delete: %d %s", r.Status, r.Body)
		}
		// A's own snapshot still rewinds A.
		if r := seek(A, map[string]any{"snapshot": "early"}); r.Status != http.StatusOK {
			t.Fatalf("A seeking to its snapshot: %d %s", r.Status, r.Body)
		}
		got := popAll(t, A, "orders", "workers")
		if !slices.Equal(owners(t, got), repeat("acme", 3)) {
			t.Errorf("A after seeking to its snapshot got %v", owners(t, got))
		}
		for _, m := range got {
			A.Ack(m.pop(), "completed", "workers")
		}
	})

	t.Run("subscription", func(t *testing.T) {
		needs(t, "POST /api/v1/consumer-groups/:group/subscription")
		rows := func(c *combtest.Client) any {
			r := c.Do("POST", "/api/v1/consumer-groups/workers/subscription", map[string]any{"subscriptionTimestamp": time.Now().UTC().Format(time.RFC3339)})
			if r.Status != http.StatusOK {
				t.Fatalf("subscription: %d %s", r.Status, r.Body)
			}
			return r.Map(t)["rowsUpdated"]
		}
		if got := rows(B); got != float64(1) {
			t.Errorf("B's subscription update touched %v rows, want 1 (its own)", got)
		}
		if got := rows(D); got != float64(0) {
			t.Errorf("default tenant's subscription update touched %v rows, want 0", got)
		}
	})

	t.Run("dlq", func(t *testing.T) {
		needs(t, "GET /api/v1/dlq")
		// A fails one message in queue mode; retryLimit 0 dead-letters it.
		msgs := popAll(t, A, "orders", "")
		if len(msgs) != 3 {
			t.Fatalf("A's queue-mode pop: %d messages", len(msgs))
		}
		if res := A.Ack(msgs[0].pop(), "failed", ""); res["success"] != true || res["dlq"] != true {
			t.Fatalf("A's failed ack: %v", res)
		}
		for _, m := range msgs[1:] {
			A.Ack(m.pop(), "completed", "")
		}
		dlq := func(c *combtest.Client) (total float64, owners []string) {
			r := c.Do("GET", "/api/v1/dlq?queue=orders", nil)
			if r.Status != http.StatusOK {
				t.Fatalf("dlq: %d %s", r.Status, r.Body)
			}
			var out struct {
				Total    float64     `json:"total"`
				Messages []tenantMsg `json:"messages"`
			}
			r.JSON(t, &out)
			for _, m := range out.Messages {
				owners = append(owners, string(m.Data))
			}
			return out.Total, owners
		}
		if n, got := dlq(A); n != 1 || len(got) != 1 || !strings.Contains(got[0], "acme") {
			t.Errorf("A's DLQ: total %v, %v", n, got)
		}
		for name, c := range map[string]*combtest.Client{"B": B, "default": D} {
			if n, got := dlq(c); n != 0 || len(got) != 0 {
				t.Errorf("%s's DLQ shows %v: %v", name, n, got)
			}
		}
		if has("POST /api/v1/dlq/redrive") {
			r := B.Do("POST", "/api/v1/dlq/redrive", map[string]any{"queue": "orders"})
			if r.Status == http.StatusOK && r.Map(t)["redriven"] != float64(0) {
				t.Errorf("B's redrive of orders moved A's dead letters: %s", r.Body)
			}
			if n, _ := dlq(A); n != 1 {
				t.Errorf("after B's redrive A's DLQ holds %v", n)
			}
		}
	})

	t.Run("group deletes", func(t *testing.T) {
		needs(t, "DELETE /api/v1/consumer-groups/:group", "DELETE /api/v1/consumer-groups/:group/queues/:queue")
		if r := B.Do("DELETE", "/api/v1/consumer-groups/acme-only", nil); r.Status != http.StatusOK || r.Map(t)["deletedPartitions"] != float64(0) {
			t.Errorf("B deleting A's group: %d %s", r.Status, r.Body)
		}
		if r := B.Do("DELETE", "/api/v1/consumer-groups/workers/queues/orders", nil); r.Status != http.StatusOK || r.Map(t)["deletedPartitions"] != float64(1) {
			t.Errorf("B deleting its workers on orders: %d %s", r.Status, r.Body)
		}
		// A's workers still stand at the end: nothing is redelivered.
		if got := popAll(t, A, "orders", "workers"); len(got) != 0 {
			t.Errorf("B's group delete reset A's workers: A got %v", owners(t, got))
		}
		if has("GET /api/v1/consumer-groups") {
			r := A.Do("GET", "/api/v1/consumer-groups", nil)
			if !strings.Contains(string(r.Body), `"acme-only"`) {
				t.Errorf("A's group acme-only is gone after B deleted its namesake: %s", r.Body)
			}
		}
	})

	t.Run("resources", func(t *testing.T) {
		needs(t, "GET /api/v1/resources/queues", "GET /api/v1/resources/queues/:queue")
		ids := func(c *combtest.Client) []string {
			r := c.Do("GET", "/api/v1/resources/queues", nil)
			if r.Status != http.StatusOK {
				t.Fatalf("queues: %d %s", r.Status, r.Body)
			}
			var out struct {
				Queues []struct {
					ID string `json:"id"`
				} `json:"queues"`
			}
			r.JSON(t, &out)
			var ids []string
			for _, q := range out.Queues {
				ids = append(ids, q.ID)
			}
			return ids
		}
		if got := ids(A); len(got) != 2 || !slices.Contains(got, queueID["A"]) || slices.Contains(got, queueID["B"]) {
			t.Errorf("A's queues %v, want orders (%s) and shop.jobs", got, queueID["A"])
		}
		if got := ids(B); !slices.Equal(got, []string{queueID["B"]}) {
			t.Errorf("B's queues %v, want [%s]", got, queueID["B"])
		}
		if got := ids(D); len(got) != 0 {
			t.Errorf("default tenant's queues %v", got)
		}
		if r := A.Do("GET", "/api/v1/resources/queues/orders", nil); r.Status != http.StatusOK || r.Map(t)["id"] != queueID["A"] {
			t.Errorf("A's orders: %d %s", r.Status, r.Body)
		}
		if r := D.Do("GET", "/api/v1/resources/queues/orders", nil); r.Status != http.StatusNotFound {
			t.Errorf("default tenant's orders: %d %s, want 404", r.Status, r.Body)
		}
		for _, p := range []string{"/api/v1/resources/namespaces", "/api/v1/resources/tasks", "/api/v1/resources/overview"} {
			if !has("GET " + p) {
				continue
			}
			if r := D.Do("GET", p, nil); r.Status != http.StatusOK || strings.Contains(string(r.Body), "orders") {
				t.Errorf("default tenant's %s: %d %s", p, r.Status, r.Body)
			}
		}
	})

	t.Run("messages", func(t *testing.T) {
		needs(t, "GET /api/v1/messages", "GET /api/v1/messages/:partitionId/:transactionId")
		list := func(c *combtest.Client) []string {
			r := c.Do("GET", "/api/v1/messages?queue=orders&from=2000-01-01", nil)
			if r.Status != http.StatusOK {
				t.Fatalf("messages: %d %s", r.Status, r.Body)
			}
			var out struct {
				Messages []struct {
					PartitionID string `json:"partitionId"`
				} `json:"messages"`
			}
			r.JSON(t, &out)
			var ps []string
			for _, m := range out.Messages {
				ps = append(ps, m.PartitionID)
			}
			return ps
		}
		if got := list(A); !slices.Equal(got, repeat(aMsgs[0].PartitionID, 3)) {
			t.Errorf("A's messages in partitions %v", got)
		}
		if got := list(D); len(got) != 0 {
			t.Errorf("default tenant's messages %v", got)
		}
		one := "/api/v1/messages/" + aMsgs[0].PartitionID + "/" + aMsgs[0].TransactionID
		if r := A.Do("GET", one, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "acme") {
			t.Errorf("A reading its message: %d %s", r.Status, r.Body)
		}
		if r := B.Do("GET", one, nil); r.Status != http.StatusNotFound {
			t.Errorf("B reading A's message: %d %s, want 404", r.Status, r.Body)
		}
		if has("DELETE /api/v1/messages/:partitionId/:transactionId") {
			if r := B.Do("DELETE", one, nil); r.Status == http.StatusOK && r.Map(t)["success"] == true {
				t.Errorf("B deleted A's message: %s", r.Body)
			}
			if r := A.Do("GET", one, nil); r.Status != http.StatusOK {
				t.Errorf("A's message after B's delete: %d %s", r.Status, r.Body)
			}
		}
	})

	t.Run("status", func(t *testing.T) {
		needs(t, "GET /api/v1/status/queues", "GET /api/v1/status/queues/:queue")
		if r := D.Do("GET", "/api/v1/status/queues", nil); r.Status != http.StatusOK || strings.Contains(string(r.Body), "orders") {
			t.Errorf("default tenant's status/queues: %d %s", r.Status, r.Body)
		}
		if r := D.Do("GET", "/api/v1/status/queues/orders", nil); r.Status != http.StatusNotFound {
			t.Errorf("default tenant's status of orders: %d %s, want 404", r.Status, r.Body)
		}
		r := A.Do("GET", "/api/v1/status/queues/orders", nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), queueID["A"]) || strings.Contains(string(r.Body), queueID["B"]) {
			t.Errorf("A's status of orders: %d %s", r.Status, r.Body)
		}
	})

	t.Run("traces", func(t *testing.T) {
		needs(t, "POST /api/v1/traces")
		r := B.Do("POST", "/api/v1/traces", map[string]any{"transactionId": aMsgs[0].TransactionID, "partitionId": aMsgs[0].PartitionID,
			"consumerGroup": "workers", "eventType": "info", "data": map[string]any{"by": "bob"}})
		if r.Status == http.StatusCreated {
			t.Errorf("B traced A's message: %s", r.Body)
		}
		if r := A.Do("POST", "/api/v1/traces", map[string]any{"transactionId": aMsgs[0].TransactionID, "partitionId": aMsgs[0].PartitionID,
			"consumerGroup": "workers", "eventType": "info", "traceNames": []string{"acme-trace"}, "data": map[string]any{"by": "alice"}}); r.Status != http.StatusCreated {
			t.Errorf("A tracing its message: %d %s", r.Status, r.Body)
		}
		for _, p := range []string{"/api/v1/traces/" + aMsgs[0].PartitionID + "/" + aMsgs[0].TransactionID,
			"/api/v1/traces/by-name/acme-trace", "/api/v1/traces/names"} {
			if r := B.Do("GET", p, nil); r.Status == http.StatusOK && (strings.Contains(string(r.Body), "alice") || strings.Contains(string(r.Body), "acme-trace")) {
				t.Errorf("B reads A's traces at %s: %s", p, r.Body)
			}
		}
	})

	t.Run("delete queue", func(t *testing.T) {
		needs(t, "DELETE /api/v1/resources/queues/:queue")
		if r := B.Do("DELETE", "/api/v1/resources/queues/orders", nil); r.Status != http.StatusOK || r.Map(t)["existed"] != true {
			t.Fatalf("B deleting its orders: %d %s", r.Status, r.Body)
		}
		if r := D.Do("DELETE", "/api/v1/resources/queues/orders", nil); r.Status != http.StatusOK || r.Map(t)["existed"] != false {
			t.Errorf("default tenant deleting orders: %d %s, want existed:false", r.Status, r.Body)
		}
		// A's queue and its data are intact: a rewound group reads all 3.
		got := popAll(t, A, "orders", "fresh-group")
		if !slices.Equal(owners(t, got), repeat("acme", 3)) {
			t.Errorf("after B deleted its orders, A's new group got %v", owners(t, got))
		}
	})

	t.Run("maintenance buffer", func(t *testing.T) {
		needs(t, "POST /api/v1/system/maintenance")
		set := func(on bool) {
			t.Helper()
			if r := A.Do("POST", "/api/v1/system/maintenance", map[string]any{"enabled": on}); r.Status != http.StatusOK {
				t.Fatalf("maintenance %v: %d %s", on, r.Status, r.Body)
			}
		}
		set(true)
		buffered := func(tenant string) map[string]any {
			return map[string]any{"queue": "parked", "transactionId": "m1", "payload": map[string]any{"tenant": tenant}}
		}
		for name, push := range map[string]func() []map[string]any{
			"A": func() []map[string]any { return A.Push(buffered("acme")) },
			"B": func() []map[string]any { return B.Push(buffered("globex")) },
		} {
			if res := push(); res[0]["status"] != "buffered" {
				t.Errorf("%s's push in maintenance: %v", name, res)
			}
		}
		set(false)
		// Drained into each pusher's own tenant, deduplicated per tenant,
		// stamped with each pusher's sub.
		for _, tc := range []struct {
			c          *combtest.Client
			owner, sub string
		}{{A, "acme", "alice"}, {B, "globex", "bob"}} {
			got := popAll(t, tc.c, "parked", "")
			if !slices.Equal(owners(t, got), []string{tc.owner}) {
				t.Errorf("%s's parked messages %v", tc.owner, owners(t, got))
			} else if got[0].ProducerSub == nil || *got[0].ProducerSub != tc.sub {
				t.Errorf("%s's drained message producerSub %v, want %s", tc.owner, got[0].ProducerSub, tc.sub)
			}
		}
		if got := popAll(t, D, "parked", ""); len(got) != 0 {
			t.Errorf("default tenant got parked messages %v", owners(t, got))
		}
	})

	t.Run("metrics", func(t *testing.T) {
		needs(t, "GET /metrics/prometheus")
		// Public: without a token it names no tenant's queues at all.
		if r := srv.Do("GET", "/metrics/prometheus", nil); r.Status != http.StatusOK {
			t.Fatalf("metrics: %d", r.Status)
		} else if strings.Contains(string(r.Body), `queue="orders"`) || strings.Contains(string(r.Body), `tenant="acme"`) {
			t.Errorf("an unauthenticated scrape names tenants' queues:\n%s", r.Body)
		}
		// With a tenant's token, its own series and nobody else's.
		r := A.Do("GET", "/metrics/prometheus", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("metrics: %d", r.Status)
		}
		if strings.Contains(string(r.Body), `tenant="globex"`) {
			t.Errorf("A's scrape shows B's series:\n%s", r.Body)
		}
		seen := map[string]bool{}
		acme := false
		for _, line := range strings.Split(string(r.Body), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if strings.Contains(line, `queue="orders"`) && !strings.Contains(line, `tenant="`) {
				t.Errorf("metric names a queue without its tenant: %s", line)
			}
			acme = acme || strings.Contains(line, `tenant="acme"`) && strings.Contains(line, `queue="orders"`)
			// Two tenants' "orders" must not collapse into one series twice.
			series := line[:strings.LastIndexByte(line, ' ')]
			if seen[series] {
				t.Errorf("series exposed twice: %s", series)
			}
			seen[series] = true
		}
		if !acme {
			t.Errorf("no series for A's orders in:\n%s", r.Body)
		}
	})
}
