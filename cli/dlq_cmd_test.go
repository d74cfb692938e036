package cli

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

func TestDLQCommand(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	srv.Push(map[string]any{"queue": "cli", "payload": map[string]any{"n": 1}, "transactionId": "c1"},
		map[string]any{"queue": "cli", "payload": map[string]any{"n": 2}, "transactionId": "c2"})
	pop := srv.Pop("/api/v1/pop/queue/cli?batch=10")
	for _, m := range pop.Messages {
		srv.Do("POST", "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"leaseId": m.LeaseID, "status": "dlq", "error": "bad\nrecord"})
	}

	out, err := runComb(t, srv, nil, "dlq", "--queue", "cli")
	if err != nil {
		t.Fatalf("dlq: %v", err)
	}
	if !strings.Contains(out, "c1") || !strings.Contains(out, "c2") || !strings.Contains(out, "bad record") ||
		!strings.Contains(out, "2 shown, 2 in all") {
		t.Fatalf("dlq output:\n%s", out)
	}
	out, err = runComb(t, srv, nil, "dlq", "--queue", "cli", "--limit", "1", "--json")
	if err != nil || !strings.Contains(out, `"total":2`) || strings.Count(out, `"transactionId"`) != 1 {
		t.Fatalf("dlq --json: %v\n%s", err, out)
	}

	out, err = runComb(t, srv, nil, "dlq", "redrive", "--queue", "cli")
	if err != nil || !strings.Contains(out, "re-drove 2 messages to cli") || !strings.Contains(out, "0 left") {
		t.Fatalf("redrive: %v\n%s", err, out)
	}
	if p := srv.Pop("/api/v1/pop/queue/cli?batch=10"); p.Status != http.StatusOK || len(p.Messages) != 2 {
		t.Fatalf("pop after redrive = %+v", p)
	}

	// Server errors come back with the server's text.
	if _, err := runComb(t, srv, nil, "dlq", "redrive", "--queue", "missing"); err == nil || !strings.Contains(err.Error(), "Queue not found") {
		t.Fatalf("redrive of an unknown queue: %v", err)
	}
	if _, err := runComb(t, srv, nil, "dlq", "redrive"); err == nil || !strings.Contains(err.Error(), `required flag(s) "queue" not set`) ||
		ExitCode(err) != ExitUsage {
		t.Fatalf("redrive without --queue: %v", err)
	}
}

func TestDLQCommandSendsToken(t *testing.T) {
	var got string
	srv := combtest.MustServer(t, combtest.Options{})
	inner := srv.HTTP.Config.Handler
	srv.HTTP.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		inner.ServeHTTP(w, r)
	})
	if _, err := runComb(t, srv, map[string]string{"COMB_TOKEN": "tok-123"}, "dlq"); err != nil {
		t.Fatalf("dlq: %v", err)
	}
	if got != "Bearer tok-123" {
		t.Fatalf("Authorization = %q", got)
	}
}

func TestDLQPurgeCommandDeletesWhatItsFiltersMatchInBatches(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	var items []map[string]any
	for i := range 5 {
		items = append(items, map[string]any{"queue": "cli", "partition": "a", "payload": i, "transactionId": fmt.Sprintf("a%d", i)},
			map[string]any{"queue": "cli", "partition": "b", "payload": i, "transactionId": fmt.Sprintf("b%d", i)})
	}
	srv.Push(items...)
	for _, p := range []string{"a", "b"} {
		for _, m := range srv.Pop("/api/v1/pop/queue/cli/partition/" + p + "?batch=100").Messages {
			srv.Do("POST", "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
				"leaseId": m.LeaseID, "status": "dlq"})
		}
	}
	total := func(query string) int {
		var out struct{ Total int }
		srv.Do("GET", "/api/v1/dlq?"+query, nil).JSON(t, &out)
		return out.Total
	}
	if total("") != 10 {
		t.Fatalf("seeded %d dead letters, want 10", total(""))
	}

	// No filter and no --all: refused before any request.
	if _, err := runComb(t, srv, nil, "dlq", "purge"); err == nil || !strings.Contains(err.Error(), "or --all") {
		t.Fatalf("purge without a filter: %v", err)
	}
	out, err := runComb(t, srv, nil, "dlq", "purge", "--queue", "cli", "--partition", "a", "--dry-run")
	if err != nil || !strings.Contains(out, "5 dead letters match; nothing deleted") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if total("") != 10 {
		t.Fatal("a dry run deleted something")
	}
	// --limit makes one call of that size.
	out, err = runComb(t, srv, nil, "dlq", "purge", "--queue", "cli", "--partition", "a", "--limit", "2")
	if err != nil || !strings.Contains(out, "purged 2 dead letters, 3 left") {
		t.Fatalf("purge --limit 2: %v\n%s", err, out)
	}
	if total("partition=a") != 3 || total("partition=b") != 5 {
		t.Fatalf("after purging 2 of a: a %d, b %d", total("partition=a"), total("partition=b"))
	}
	// Server errors come back with the server's text and delete nothing.
	if _, err := runComb(t, srv, nil, "dlq", "purge", "--from", "yesterday"); err == nil || !strings.Contains(err.Error(), "from and to must be") {
		t.Fatalf("purge with a bad time: %v", err)
	}
	out, err = runComb(t, srv, nil, "dlq", "purge", "--all")
	if err != nil || !strings.Contains(out, "purged 8 dead letters, 0 left") {
		t.Fatalf("purge --all: %v\n%s", err, out)
	}
	if total("") != 0 {
		t.Fatalf("%d dead letters after purge --all", total(""))
	}
}
