package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

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
