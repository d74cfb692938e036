package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

// comb streams lists the registered streaming queries by name (table and
// JSON), and comb streams delete removes one, which the listing then
// lacks; an unknown name is an error naming it.
func TestStreamsListsAndDeletesQueries(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	for _, q := range []map[string]any{
		{"name": "orders.per_customer", "source_queue": "orders", "sink_queue": "totals", "config_hash": "h1"},
		{"name": "audit.tail", "source_queue": "audit", "config_hash": "h2"},
	} {
		if r := srv.Do("POST", "/streams/v1/queries", q); r.Status != 200 {
			t.Fatalf("register %v: %d %s", q["name"], r.Status, r.Body)
		}
	}
	out, err := runComb(t, srv, nil, "streams")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "audit.tail") || !strings.Contains(lines[1], "audit") ||
		!strings.HasPrefix(lines[2], "orders.per_customer") || !strings.Contains(lines[2], "totals") {
		t.Fatalf("comb streams:\n%s", out)
	}
	out, err = runComb(t, srv, nil, "streams", "--output", "json")
	var page struct {
		Queries []struct {
			Name       string `json:"name"`
			ConfigHash string `json:"configHash"`
		} `json:"queries"`
	}
	if err != nil || json.Unmarshal([]byte(out), &page) != nil || len(page.Queries) != 2 || page.Queries[1].ConfigHash != "h1" {
		t.Fatalf("comb streams --output json: %v\n%s", err, out)
	}

	out, err = runComb(t, srv, nil, "streams", "delete", "orders.per_customer")
	if err != nil || !strings.Contains(out, "deleted streaming query orders.per_customer") {
		t.Fatalf("comb streams delete: %v\n%s", err, out)
	}
	if out, err := runComb(t, srv, nil, "streams"); err != nil || strings.Contains(out, "orders.per_customer") || !strings.Contains(out, "audit.tail") {
		t.Fatalf("comb streams after the delete: %v\n%s", err, out)
	}
	if _, err := runComb(t, srv, nil, "streams", "delete", "orders.per_customer"); err == nil || !strings.Contains(err.Error(), "Streaming query not found") {
		t.Fatalf("deleting it again: %v", err)
	}
}
