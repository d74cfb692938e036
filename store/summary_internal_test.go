package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// A store opened over a tenant larger than the live limit sums its Summary
// in the background at once, so the first read after a restart is
// answered from it instead of waiting for a sum; small tenants are not
// summed ahead.
func TestOpenSumsLargeTenantsAhead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	opts := Options{Path: path, LiveSummaryPartitions: 2}
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"big", "small"} {
		n := 3
		if tenant == "small" {
			n = 1
		}
		var items []combtype.PushItem
		for i := range n {
			items = append(items, combtype.PushItem{Queue: fmt.Sprintf("q%d", i), TxnID: "t", Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, tenant, items); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.tot.mu.Lock()
		big, small := s.tot.tenants["big"], s.tot.tenants["small"]
		s.tot.mu.Unlock()
		if small != nil {
			t.Fatal("a tenant under the live limit was summed ahead")
		}
		if big != nil {
			if big.sum.Counts.Total != 3 || !big.sum.Summarized {
				t.Fatalf("summed ahead: %+v", big.sum.Overview)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the large tenant was not summed ahead")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sum, err := s.Summary(ctx, "big")
	if err != nil || !sum.Summarized || len(sum.Queues) != 3 {
		t.Fatalf("Summary after the restart: %+v, %v", sum, err)
	}
}
