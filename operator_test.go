package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// runComb runs "comb args..." with COMB_URL pointing at srv and returns stdout.
func runComb(t *testing.T, srv *combtest.Server, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		if k == "COMB_URL" {
			return srv.URL
		}
		return env[k]
	}}
	err := m.Run(context.Background(), args)
	return out.String(), err
}

func opPush(srv *combtest.Server, queue string, from, n int) {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queue, "payload": map[string]any{"n": from + i}}
	}
	srv.Push(items...)
}

func opDrain(t *testing.T, srv *combtest.Server, queue, group string) int {
	t.Helper()
	n := 0
	for {
		p := srv.Pop("/api/v1/pop/queue/" + queue + "?batch=100&consumerGroup=" + group)
		if p.Status == http.StatusNoContent {
			return n
		}
		n += len(p.Messages)
		srv.Ack(p.Messages[len(p.Messages)-1], "completed", group)
	}
}

func TestGroupsCommand(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC))
	srv := combtest.MustServer(t, combtest.Options{Clock: clk})
	out, err := runComb(t, srv, nil, "groups")
	if err != nil || !strings.Contains(out, "0 group/queue pairs") {
		t.Fatalf("groups on an empty server: %v\n%s", err, out)
	}
	opPush(srv, "orders", 0, 5)
	opDrain(t, srv, "orders", "billing")
	opPush(srv, "orders", 5, 3)
	clk.Advance(10 * time.Minute)
	opDrain(t, srv, "orders", "audit")

	out, err = runComb(t, srv, nil, "groups")
	if err != nil {
		t.Fatalf("groups: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "GROUP") || !strings.Contains(out, "2 group/queue pairs") {
		t.Fatalf("groups output:\n%s", out)
	}
	audit, billing := strings.Fields(lines[1]), strings.Fields(lines[2])
	if strings.Join(audit, " ") != "audit orders 1 0 0 0s Stable" {
		t.Errorf("audit row = %q", lines[1])
	}
	if strings.Join(billing, " ") != "billing orders 1 1 3 10m0s Lagging" {
		t.Errorf("billing row = %q", lines[2])
	}
	out, err = runComb(t, srv, nil, "groups", "--json")
	var raw []map[string]any
	if err != nil || json.Unmarshal([]byte(out), &raw) != nil || len(raw) != 2 {
		t.Fatalf("groups --json: %v\n%s", err, out)
	}
	if _, err := runComb(t, srv, nil, "groups", "extra"); err == nil {
		t.Fatal("groups accepted an argument")
	}
}

func TestSeekCommand(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	opPush(srv, "orders", 0, 5)
	if n := opDrain(t, srv, "orders", "billing"); n != 5 {
		t.Fatalf("drained %d", n)
	}

	out, err := runComb(t, srv, nil, "seek", "--group", "billing", "--queue", "orders", "--offset", "1", "--dry-run")
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

	out, err = runComb(t, srv, nil, "seek", "--group", "billing", "--queue", "orders", "--timestamp", "2000-01-01")
	if err != nil || json.Unmarshal([]byte(out), &reply) != nil || reply["partitionsUpdated"] != 1.0 ||
		reply["targetTimestamp"] != "2000-01-01T00:00:00.000Z" {
		t.Fatalf("seek to a timestamp: %v\n%s", err, out)
	}
	if n := opDrain(t, srv, "orders", "billing"); n != 5 {
		t.Fatalf("replayed %d, want 5", n)
	}
	out, err = runComb(t, srv, nil, "seek", "--group", "billing", "--queue", "orders", "--partition", "Default", "--offset", "2")
	if err != nil || !strings.Contains(out, `"updated": true`) {
		t.Fatalf("partition seek: %v\n%s", err, out)
	}
	if r := srv.Do("POST", "/api/v1/consumer-groups/billing/queues/orders/snapshots", map[string]any{"name": "mid"}); r.Status != 201 {
		t.Fatalf("snapshot: %d %s", r.Status, r.Body)
	}
	if n := opDrain(t, srv, "orders", "billing"); n != 2 {
		t.Fatalf("replayed %d after offset 2, want 2", n)
	}
	out, err = runComb(t, srv, nil, "seek", "--group", "billing", "--queue", "orders", "--to-end")
	if err != nil || !strings.Contains(out, `"seekToEnd": true`) {
		t.Fatalf("seek to end: %v\n%s", err, out)
	}
	// Back to the snapshot taken at committed 2.
	out, err = runComb(t, srv, nil, "seek", "--group", "billing", "--queue", "orders", "--snapshot", "mid")
	if err != nil || !strings.Contains(out, `"snapshot": "mid"`) {
		t.Fatalf("seek to a snapshot: %v\n%s", err, out)
	}
	if n := opDrain(t, srv, "orders", "billing"); n != 2 {
		t.Fatalf("seek to the snapshot replayed %d, want 2", n)
	}

	// The server's refusals come back as errors, with the answer printed.
	out, err = runComb(t, srv, nil, "seek", "--group", "billing", "--queue", "nope", "--to-end")
	if err == nil || !strings.Contains(err.Error(), "Queue not found or has no partitions (HTTP 404)") ||
		!strings.Contains(out, `"success": false`) {
		t.Fatalf("seek of an unknown queue: %v\n%s", err, out)
	}
	if _, err := runComb(t, srv, nil, "seek", "--group", "billing", "--queue", "orders", "--offset", "99"); err == nil ||
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
		if _, err := runComb(t, srv, nil, args...); err == nil {
			t.Errorf("comb %v succeeded", args)
		}
	}
}

func TestOperatorCommandsSendTheToken(t *testing.T) {
	var got []string
	srv := combtest.MustServer(t, combtest.Options{})
	inner := srv.HTTP.Config.Handler
	srv.HTTP.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		inner.ServeHTTP(w, r)
	})
	opPush(srv, "orders", 0, 1)
	env := map[string]string{"COMB_TOKEN": "tok-9"}
	if _, err := runComb(t, srv, env, "groups"); err != nil {
		t.Fatal(err)
	}
	if _, err := runComb(t, srv, env, "seek", "--group", "g", "--queue", "orders", "--to-end"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1] != "Bearer tok-9" || got[2] != "Bearer tok-9" {
		t.Fatalf("Authorization headers = %q", got)
	}
}
