package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// Whatever keys a window is told were stored, in whatever order, it must
// answer "maybe" for each of them, and it is only of use if it answers "no"
// for keys above its floor that were never stored.
func TestRecentKeysNeverHideAStoredKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r recentKeys
	stored := map[int64][]int64{}
	ruledOut := 0
	for range 2000 {
		part := int64(rng.IntN(5))
		keys := make([]int64, 1+rng.IntN(40))
		for i := range keys {
			keys[i] = rng.Int64N(1 << 20)
		}
		r.stored(part, 0, keys)
		stored[part] = append(stored[part], keys...)
		k := r.of(part)
		for _, key := range stored[part] {
			if !k.maybe(key) {
				t.Fatalf("partition %d: stored key %d reported absent (floor %d, window %v)", part, key, k.floor, k.keys)
			}
		}
		if probe := k.floor + 1 + rng.Int64N(1<<20); !k.maybe(probe) {
			ruledOut++
		}
	}
	if ruledOut == 0 {
		t.Error("the windows never ruled out a key above their floor")
	}
}

// The windows are bounded in partitions: beyond the bound one is dropped,
// and its partition falls back to the ceiling alone.
func TestRecentKeysHoldABoundedNumberOfPartitions(t *testing.T) {
	var r recentKeys
	for p := range int64(recentKeysPartitions + 10) {
		r.stored(p, math.MinInt64, []int64{p})
	}
	if len(r) != recentKeysPartitions {
		t.Errorf("%d windows, want %d", len(r), recentKeysPartitions)
	}
}

// sameMillisecond returns two UUIDv7-shaped ids of one millisecond, the
// second with the lower key (their low bits are a hash).
func sameMillisecond(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; len(ids) < n; i++ {
		id := fmt.Sprintf("0190a0b0-c0d0-7%03x-8000-%012x", i%4096, i)
		if len(ids) == 0 || txnKey(id) < txnKey(ids[len(ids)-1]) {
			ids = append(ids, id)
		}
	}
	return ids
}

// A push whose id's key lies below the partition's ceiling but was never
// stored is decided without a lookup, and every id pushed again, in this
// process or after a restart, still answers as a duplicate of its original.
func TestDedupBelowTheCeilingNeedsNoLookupAndStaysExact(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ids := sameMillisecond(t, 3)
	push := func(s *Store, id string) (combtype.PushResult, int64) {
		t.Helper()
		before := s.wstatements.Load()
		res, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p", Payload: []byte(`{}`), TxnID: id}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0], s.wstatements.Load() - before
	}
	push(s, ids[0])
	// A key above the ceiling: no lookup, whatever the windows.
	above := "0190a0b0-c0d1-7000-8000-000000000000"
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p", Payload: []byte(`{}`), TxnID: above}}); err != nil {
		t.Fatal(err)
	}
	res, _ := push(s, "0190a0b0-c0d2-7000-8000-000000000000")
	_, aboveCost := push(s, "0190a0b0-c0d3-7000-8000-000000000000")
	if res.Status != combtype.StatusQueued {
		t.Fatalf("push above the ceiling: %+v", res)
	}
	res, cost := push(s, ids[1])
	if res.Status != combtype.StatusQueued || res.Offset != 4 {
		t.Fatalf("push below the ceiling: %+v, want queued at offset 4", res)
	}
	if cost != aboveCost {
		t.Errorf("a new key below the ceiling took %d statements, one above it %d: it was looked up", cost, aboveCost)
	}
	// Enough pushes to push ids[1] out of the partition's window.
	for i := range recentKeysPerWindow + 8 {
		push(s, fmt.Sprintf("0190a0b0-c0e0-7000-8000-%012x", i))
	}
	check := func(s *Store) {
		t.Helper()
		for i, id := range ids[:2] {
			want := []int64{0, 4}[i]
			if res, _ := push(s, id); res.Status != combtype.StatusDuplicate || res.Offset != want {
				t.Errorf("%s pushed again: %+v, want a duplicate of offset %d", id, res, want)
			}
		}
		if res, _ := push(s, ids[2]); res.Status != combtype.StatusQueued {
			t.Errorf("%s, never pushed: %+v, want queued", ids[2], res)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, id := range ids {
		want := []int64{0, 4, int64(5 + recentKeysPerWindow + 8)}[i]
		if res, _ := push(s, id); res.Status != combtype.StatusDuplicate || res.Offset != want {
			t.Errorf("after a restart, %s pushed again: %+v, want a duplicate of offset %d", id, res, want)
		}
	}
}
