package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

func TestSeekCommand(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	opPush(srv, "orders", 0, 5)
	if n := opDrain(t, srv, "orders", "billing"); n != 5 {
		t.Fatalf("drained %d", n)
	}

	out, err := runComb(t, srv, nil, "seek", "--output", "json", "--group", "billing", "--queue", "orders", "--offset", "1", "--dry-run")
	var reply map[string]any
	if err != nil || json.Unmarshal([]byte(out), &reply) != nil || reply["dryRun"] != true || reply["partitionsUpdated"] != 0.0 {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if p := reply["partitions"].([]any)[0].(map[string]any); p["redeliver"] != 3.0 {
		t.Fatalf("dry run detail = %v", p)
	}
	if n := opDrain(t, srv, "orders", "billing"); n != 0 {
		t.Fatalf("dry run moved the cursor: %d redelivered", n)
	}

	out, err = runComb(t, srv, nil, "seek", "--output", "json", "--group", "billing", "--queue", "orders", "--timestamp", "2000-01-01")
	if err != nil || json.Unmarshal([]byte(out), &reply) != nil || reply["partitionsUpdated"] != 1.0 ||
		reply["targetTimestamp"] != "2000-01-01T00:00:00.000Z" {
		t.Fatalf("seek to a timestamp: %v\n%s", err, out)
	}
	if n := opDrain(t, srv, "orders", "billing"); n != 5 {
		t.Fatalf("replayed %d, want 5", n)
	}
	out, err = runComb(t, srv, nil, "seek", "--output", "json", "--group", "billing", "--queue", "orders", "--partition", "Default", "--offset", "2")
	if err != nil || !strings.Contains(out, `"updated":true`) {
		t.Fatalf("partition seek: %v\n%s", err, out)
	}
	if r := srv.Do("POST", "/api/v1/consumer-groups/billing/queues/orders/snapshots", map[string]any{"name": "mid"}); r.Status != 201 {
		t.Fatalf("snapshot: %d %s", r.Status, r.Body)
	}
	if n := opDrain(t, srv, "orders", "billing"); n != 2 {
		t.Fatalf("replayed %d after offset 2, want 2", n)
	}
	out, err = runComb(t, srv, nil, "seek", "--output", "json", "--group", "billing", "--queue", "orders", "--to-end")
	if err != nil || !strings.Contains(out, `"seekToEnd":true`) {
		t.Fatalf("seek to end: %v\n%s", err, out)
	}
	// Back to the snapshot taken at committed 2.
	out, err = runComb(t, srv, nil, "seek", "--output", "json", "--group", "billing", "--queue", "orders", "--snapshot", "mid")
	if err != nil || !strings.Contains(out, `"snapshot":"mid"`) {
		t.Fatalf("seek to a snapshot: %v\n%s", err, out)
	}
	if n := opDrain(t, srv, "orders", "billing"); n != 2 {
		t.Fatalf("seek to the snapshot replayed %d, want 2", n)
	}

	// The server's refusals come back as errors, with the answer printed.
	out, err = runComb(t, srv, nil, "seek", "--output", "json", "--group", "billing", "--queue", "nope", "--to-end")
	if err == nil || !strings.Contains(err.Error(), "Queue not found or has no partitions (HTTP 404)") || ExitCode(err) != ExitFindings {
		t.Fatalf("seek of an unknown queue: %v\n%s", err, out)
	}
	if _, err := runComb(t, srv, nil, "seek", "--output", "json", "--group", "billing", "--queue", "orders", "--offset", "99"); err == nil ||
		!strings.Contains(err.Error(), "outside the retained range") {
		t.Fatalf("seek past the end: %v", err)
	}
	// Refused before any request.
	for _, args := range [][]string{
		{"seek", "--queue", "orders", "--to-end"},
		{"seek", "--group", "billing", "--queue", "orders"},
		{"seek", "--group", "billing", "--queue", "orders", "--to-end", "--offset", "3"},
		{"seek", "--group", "billing", "--queue", "orders", "--offset", "x"},
	} {
		if _, err := runComb(t, srv, nil, args...); ExitCode(err) != ExitUsage {
			t.Errorf("comb %v: %v, want a usage error", args, err)
		}
	}
}
