package store

import (
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

func TestTheRefresherSkipsRoundsOnlyWhileNothingChanges(t *testing.T) {
	for _, c := range []struct {
		name           string
		seq, summedSeq int64
		since          time.Duration
		settled, skips bool
	}{
		{"nothing committed", 8, 8, 5 * time.Second, true, true},
		{"a commit since", 10, 8, 5 * time.Second, true, false},
		{"a commit under way", 9, 9, 5 * time.Second, true, false},
		{"a sum asked for and not made", 8, 8, 5 * time.Second, false, false},
		{"the last round a minute old", 8, 8, quietRefreshEvery, true, false},
		{"no round yet", 0, -1, 0, true, false},
	} {
		if got := quietRound(c.seq, c.summedSeq, c.since, c.settled); got != c.skips {
			t.Errorf("%s: quietRound = %v, want %v", c.name, got, c.skips)
		}
	}
}

func TestTotalsAreSettledOnceEverySumAskedForIsMade(t *testing.T) {
	s := openTestStore(t, clock.NewManual(t0))
	if !s.totalsSettled() {
		t.Fatal("a store no read asked anything of is not settled")
	}
	s.tot.mu.Lock()
	if s.tot.entries == nil {
		s.tot.entries = map[int64]*totalsEntry{}
	}
	s.tot.entries[-1] = &totalsEntry{q: combtype.Queue{Name: "gone"}, askedAt: time.Now()}
	s.tot.mu.Unlock()
	if s.totalsSettled() {
		t.Fatal("settled with a queue's totals asked for and not summed")
	}
	s.tot.mu.Lock()
	s.tot.entries[-1].summed = true
	s.tot.unsummed = map[string]bool{"t": true}
	s.tot.mu.Unlock()
	if s.totalsSettled() {
		t.Fatal("settled with a tenant waiting for its first sum")
	}
	s.tot.mu.Lock()
	s.tot.unsummed = nil
	s.tot.mu.Unlock()
	if !s.totalsSettled() {
		t.Fatal("not settled with every sum made")
	}
}
