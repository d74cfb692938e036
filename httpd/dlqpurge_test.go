package httpd_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
)

// purge sends DELETE /api/v1/dlq?query as c and decodes a 200 reply.
func purge(t *testing.T, c *combtest.Client, query string) (deleted, remaining int) {
	t.Helper()
	r := c.Do("DELETE", "/api/v1/dlq?"+query, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("purge %s: %d %s", query, r.Status, r.Body)
	}
	var out struct {
		Success            bool
		Deleted, Remaining int
	}
	r.JSON(t, &out)
	opKeys(t, "purge reply", r.Map(t), "success", "deleted", "remaining")
	if !out.Success {
		t.Fatalf("purge %s: %s", query, r.Body)
	}
	return out.Deleted, out.Remaining
}

// dlqTxns lists the transaction ids in the DLQ, oldest failure first.
func dlqTxns(t *testing.T, s *combtest.Server) []string {
	t.Helper()
	var out []string
	for _, m := range opDLQ(t, s, "limit=1000").Messages {
		out = append(out, m["transactionId"].(string))
	}
	slices.Reverse(out)
	return out
}

// purgeFixture dead-letters, one second apart from opT0: a1 and a1b of a/p1
// for g1 (+1s, +2s), a2 of a/p2 for g2 (+3s), b1 and b2 of b in queue mode
// (+4s, +5s).
func purgeFixture(t *testing.T) *combtest.Server {
	t.Helper()
	s, clk := opServer(t)
	s.Push(opItem("a", "p1", "a1", 1), opItem("a", "p1", "a1b", 2), opItem("a", "p2", "a2", 3),
		opItem("b", "", "b1", 4), opItem("b", "", "b2", 5))
	opDeadLetter(t, s, clk, "a", "p1", "g1")
	opDeadLetter(t, s, clk, "a", "p2", "g2")
	opDeadLetter(t, s, clk, "b", "", "")
	if got := dlqTxns(t, s); !slices.Equal(got, []string{"a1", "a1b", "a2", "b1", "b2"}) {
		t.Fatalf("seeded DLQ = %v", got)
	}
	return s
}

func TestADLQPurgeDeletesOnlyWhatItsFiltersMatch(t *testing.T) {
	s := purgeFixture(t)
	at := func(d time.Duration) string { return url.QueryEscape(opT0.Add(d).Format(time.RFC3339)) }

	steps := []struct {
		query              string
		deleted, remaining int
		left               []string
	}{
		{"queue=a&partition=p2", 1, 0, []string{"a1", "a1b", "b1", "b2"}},
		{"queue=a&consumerGroup=g2", 0, 0, []string{"a1", "a1b", "b1", "b2"}},
		{"from=" + at(4*time.Second) + "&to=" + at(4*time.Second), 1, 0, []string{"a1", "a1b", "b2"}},
		{"queue=nope", 0, 0, []string{"a1", "a1b", "b2"}},
		// A limit takes the oldest failures first and says what is left.
		{"all=true&limit=1", 1, 2, []string{"a1b", "b2"}},
		{"consumerGroup=g1&all=false", 1, 0, []string{"b2"}},
	}
	for _, st := range steps {
		deleted, remaining := purge(t, s.Client, st.query)
		if deleted != st.deleted || remaining != st.remaining {
			t.Fatalf("purge %s: deleted %d, remaining %d, want %d and %d", st.query, deleted, remaining, st.deleted, st.remaining)
		}
		if got := dlqTxns(t, s); !slices.Equal(got, st.left) {
			t.Fatalf("after purge %s the DLQ holds %v, want %v", st.query, got, st.left)
		}
	}

	// Explicit ids, as the listing reports them, narrow the filters.
	s2 := purgeFixture(t)
	var ids []string
	for _, m := range opDLQ(t, s2, "queue=a").Messages {
		ids = append(ids, m["id"].(string))
	}
	if deleted, remaining := purge(t, s2.Client, "queue=b&ids="+ids[0]); deleted != 0 || remaining != 0 {
		t.Fatalf("ids of queue a under queue=b: deleted %d, remaining %d", deleted, remaining)
	}
	if deleted, _ := purge(t, s2.Client, "ids="+ids[0]+","+ids[1]); deleted != 2 {
		t.Fatalf("two ids deleted %d rows", deleted)
	}
	if got := dlqTxns(t, s2); !slices.Equal(got, []string{"a1", "b1", "b2"}) {
		t.Fatalf("after purging a2 and a1b by id: %v", got)
	}
	if deleted, remaining := purge(t, s2.Client, "all=true"); deleted != 3 || remaining != 0 {
		t.Fatalf("all=true: deleted %d, remaining %d", deleted, remaining)
	}
}

func TestADLQPurgeRefusesBadInputAndDeletesNothing(t *testing.T) {
	s := purgeFixture(t)
	cases := []struct{ query, text string }{
		{"", "a purge needs a filter"},
		{"all=false", "a purge needs a filter"},
		{"limit=5", "a purge needs a filter"},
		{"all=yes", "all must be true or false"},
		{"from=yesterday", "from and to must be"},
		{"queue=a&to=2026-13-40", "from and to must be"},
		{"queue=a&limit=-1", "limit must be a non-negative integer"},
		{"queue=a&limit=ten", "limit must be a non-negative integer"},
		{"ids=", "ids must be a comma-separated list"},
		{"ids=x,,y", "ids must be a comma-separated list"},
		// A misspelt filter would widen the purge: refused, not ignored.
		{"consumergroup=g1", `unknown parameter "consumergroup"`},
		{"queue=a&grp=g1", `unknown parameter "grp"`},
	}
	for _, c := range cases {
		opWantError(t, s.Do("DELETE", "/api/v1/dlq?"+c.query, nil), http.StatusBadRequest, c.text)
	}
	if got := dlqTxns(t, s); len(got) != 5 {
		t.Fatalf("after refused purges the DLQ holds %v, want all 5", got)
	}
}

// TestADLQPurgeIsAdminOnlyAndStaysInItsTenant: only an admin token may
// purge, and an admin of one tenant, even with all=true, never reaches
// another tenant's dead letters.
func TestADLQPurgeIsAdminOnlyAndStaysInItsTenant(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	client := func(role, tenant string) *combtest.Client {
		return as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("u-"+role+"-"+tenant, role, tenant))))
	}
	acme, beta := client("admin", "acme"), client("admin", "beta")
	for _, c := range []*combtest.Client{acme, beta} {
		c.Push(map[string]any{"queue": "orders", "transactionId": "o1", "payload": 1},
			map[string]any{"queue": "orders", "transactionId": "o2", "payload": 2})
		pop := c.Pop("/api/v1/pop/queue/orders?batch=10")
		if len(pop.Messages) != 2 {
			t.Fatalf("popped %d", len(pop.Messages))
		}
		for _, m := range pop.Messages {
			if r := c.Do("POST", "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
				"leaseId": m.LeaseID, "status": "dlq"}); r.Status != http.StatusOK {
				t.Fatalf("dlq ack: %d %s", r.Status, r.Body)
			}
		}
	}
	total := func(c *combtest.Client) int {
		var out struct{ Total int }
		r := c.Do("GET", "/api/v1/dlq", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("dlq: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &out)
		return out.Total
	}

	for _, role := range []string{"read-only", "read-write"} {
		r := client(role, "acme").Do("DELETE", "/api/v1/dlq?queue=orders", nil)
		opWantError(t, r, http.StatusForbidden, "Insufficient permissions")
	}
	opWantError(t, as(srv, nil).Do("DELETE", "/api/v1/dlq?all=true", nil), http.StatusUnauthorized, "")
	if total(acme) != 2 || total(beta) != 2 {
		t.Fatalf("refused purges deleted something: acme %d, beta %d", total(acme), total(beta))
	}

	if deleted, remaining := purge(t, beta, "all=true"); deleted != 2 || remaining != 0 {
		t.Fatalf("beta's purge: deleted %d, remaining %d", deleted, remaining)
	}
	if got := total(acme); got != 2 {
		t.Fatalf("beta's purge left acme %d dead letters, want 2", got)
	}
	if deleted, _ := purge(t, beta, "queue=orders"); deleted != 0 {
		t.Fatalf("beta's second purge deleted %d of acme's rows", deleted)
	}
}
