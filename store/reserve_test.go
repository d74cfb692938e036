package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// TestAWriteRefusedForSpaceReportsOneFailureNotASpuriousRollback fills a
// database to its page cap. SQLite rolls a transaction back by itself when
// a write fails for lack of space, so the writer's own ROLLBACK then finds
// none: that must not be reported as a second failure ("cannot rollback -
// no transaction is active"), which retention logged every sweep.
func TestAWriteRefusedForSpaceReportsOneFailureNotASpuriousRollback(t *testing.T) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "comb.db"), MaxDBBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rnd := rand.New(rand.NewPCG(7, 8))
	var full error
	for b := 0; b < 1000 && full == nil; b++ {
		items := make([]combtype.PushItem, 20)
		for i := range items {
			raw := make([]byte, 2000)
			for j := range raw {
				raw[j] = 'a' + byte(rnd.IntN(26))
			}
			payload, _ := json.Marshal(string(raw))
			items[i] = combtype.PushItem{Queue: "q", TxnID: fmt.Sprintf("t-%d-%d", b, i), Payload: payload}
		}
		_, full = s.Push(context.Background(), "", items)
	}
	if !errors.Is(full, combtype.ErrFull) {
		t.Fatalf("push past the cap: %v", full)
	}
	if strings.Contains(full.Error(), "rollback") {
		t.Fatalf("a write refused for space reports a second failure: %v", full)
	}
}

// TestFreeSpaceIsMeasuredOncePerIntervalWhileFarAboveTheFloor: a commit of
// pushes measures the disk (a statfs) only when the last measure is older
// than diskMeasureEvery or what it left above the floor may not cover the
// commit; near the floor every commit measures, and below it pushes are
// refused as before.
func TestFreeSpaceIsMeasuredOncePerIntervalWhileFarAboveTheFloor(t *testing.T) {
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.disk.f == nil || !s.disk.held {
		t.Skip("no disk reserve on this file system")
	}
	var measures, free atomic.Int64
	var now atomic.Int64 // nanoseconds since base
	base := time.Now()
	s.disk.measure = func(string) (int64, int64, bool) {
		measures.Add(1)
		return free.Load(), 1 << 40, true
	}
	s.disk.now = func() time.Time { return base.Add(time.Duration(now.Load())) }
	floor := s.disk.floor()
	push := func(n int) error {
		_, err := s.Push(context.Background(), "", []combtype.PushItem{{Queue: "q", TxnID: fmt.Sprintf("m-%d", n), Payload: []byte(`{"a":1}`)}})
		return err
	}
	n := 0
	// Far above the floor: one measure for many commits.
	free.Store(floor + 10<<30)
	s.disk.forgetMeasure()
	for range 50 {
		if err := push(n); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if got := measures.Load(); got != 1 {
		t.Fatalf("far above the floor, 50 commits in one interval measured %d times, want 1", got)
	}
	now.Add(int64(diskMeasureEvery))
	if err := push(n); err != nil {
		t.Fatal(err)
	}
	n++
	if got := measures.Load(); got != 2 {
		t.Fatalf("a commit after the interval measured %d times in all, want 2", got)
	}
	// Near the floor: what a measure leaves covers one commit, not two.
	measures.Store(0)
	free.Store(floor + commitDiskBound(0) + commitDiskBound(0)/2)
	s.disk.forgetMeasure()
	for range 20 {
		if err := push(n); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if got := measures.Load(); got != 20 {
		t.Fatalf("near the floor, 20 commits measured %d times, want 20", got)
	}
	// Below it, with a fresh measure that had room: refused at once.
	free.Store(floor + 10<<30)
	if err := push(n); err != nil {
		t.Fatal(err)
	}
	n++
	free.Store(floor - 1)
	now.Add(int64(diskMeasureEvery))
	if err := push(n); !errors.Is(err, combtype.ErrFull) {
		t.Fatalf("a push below the floor: %v, want ErrFull", err)
	}
}
