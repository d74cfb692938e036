package httpd_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
)

// TestAnAnonymousScrapeNamesNoQueueOrGroupOfTheDefaultTenant: the default
// tenant's series carry tenant="" like the cluster totals do, yet they are
// a tenant's, so a scrape without a token must not see them; a token of the
// default tenant sees them, another tenant's token does not.
func TestAnAnonymousScrapeNamesNoQueueOrGroupOfTheDefaultTenant(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	D := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("dee", "admin", ""))))
	A := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("alice", "admin", "acme"))))

	// A queue with a group that has not consumed everything, and the queue
	// named "" that JS clients configure: it has depth series only.
	for _, q := range []string{"payroll", ""} {
		if r := D.Do("POST", "/api/v1/configure", map[string]any{"queue": q}); r.Status != http.StatusOK {
			t.Fatalf("configure %q: %d %s", q, r.Status, r.Body)
		}
	}
	D.Push(map[string]any{"queue": "payroll", "payload": map[string]any{"n": 1}}, map[string]any{"queue": "payroll", "payload": map[string]any{"n": 2}})
	D.Pop("/api/v1/pop/queue/payroll?batch=1&consumerGroup=salaries")

	anon := srv.Do("GET", "/metrics/prometheus", nil)
	if anon.Status != http.StatusOK {
		t.Fatalf("anonymous scrape: %d %s", anon.Status, anon.Body)
	}
	body := string(anon.Body)
	for _, leak := range []string{`queue="payroll"`, `consumer_group="salaries"`, "comb_queue_messages_pushed_total{", "comb_queue_depth{", "comb_consumer_group_lag{"} {
		if strings.Contains(body, leak) {
			t.Errorf("an anonymous scrape shows %s:\n%s", leak, body)
		}
	}
	// The server totals stay public: they name no queue.
	if !strings.Contains(body, "comb_messages_pushed_total 2\n") {
		t.Errorf("an anonymous scrape lost the server totals:\n%s", body)
	}

	own := string(D.Do("GET", "/metrics/prometheus", nil).Body)
	for _, want := range []string{
		`comb_queue_messages_pushed_total{queue="payroll",tenant=""} 2`,
		`comb_queue_depth{queue="",tenant=""} 0`,
		`comb_consumer_group_lag{consumer_group="salaries",queue="payroll",tenant=""}`,
	} {
		if !strings.Contains(own, want) {
			t.Errorf("the default tenant's scrape lacks %s:\n%s", want, own)
		}
	}
	other := string(A.Do("GET", "/metrics/prometheus", nil).Body)
	if strings.Contains(other, `queue="payroll"`) {
		t.Errorf("another tenant's scrape shows the default tenant's queues:\n%s", other)
	}
}
