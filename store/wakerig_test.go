package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// WakeRig is what the wake benchmarks (BenchmarkWakeManyGroups,
// BenchmarkWakeHeld) share: one queue, "parked", whose groups are the same
// every round when they are "subscribed" and new ones otherwise; the pops
// that subscribe or park them; the push that wakes them; and the check
// that each woken pop took the one new message. The benchmarks differ
// only in how the woken pops reach the writer and what they measure.
type WakeRig struct {
	s       *Store
	contact string // subscribed, first or parked
	groups  int
	payload []byte
	round   int
}

// NewWakeRig stores the queue's first message and, for "subscribed",
// subscribes the groups at the end, so nothing is due until a round's push.
func NewWakeRig(tb testing.TB, s *Store, contact string, groups int, payload []byte) *WakeRig {
	tb.Helper()
	r := &WakeRig{s: s, contact: contact, groups: groups, payload: payload}
	r.push(tb)
	if contact == "subscribed" {
		r.park(tb, r.names())
	}
	return r
}

// Next starts a round: its groups, parked first when the rig's contact is
// "parked", and the push that wakes them.
func (r *WakeRig) Next(tb testing.TB) []string {
	tb.Helper()
	r.round++
	gs := r.names()
	if r.contact == "parked" {
		r.park(tb, gs)
	}
	r.push(tb)
	return gs
}

// PopAll makes each group's woken pop in a goroutine of its own, each
// waiting for gate before it asks; results[i] is gs[i]'s answer once wg is
// done.
func (r *WakeRig) PopAll(tb testing.TB, gs []string, gate func()) (results []*combtype.PopResult, wg *sync.WaitGroup) {
	results = make([]*combtype.PopResult, len(gs))
	wg = &sync.WaitGroup{}
	for i, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gate()
			res, err := r.s.PopWoken(context.Background(), "", combtype.PopRequest{Queue: "parked", Group: g, Batch: 1})
			if err != nil {
				tb.Error(err)
				return
			}
			results[i] = res
		}()
	}
	return results, wg
}

// Check fails the benchmark unless every group took the one new message;
// subscribed groups then acknowledge it, so that the next push is due for
// every one of them again.
func (r *WakeRig) Check(tb testing.TB, gs []string, results []*combtype.PopResult) {
	tb.Helper()
	for i, res := range results {
		if res == nil || len(res.Messages) != 1 {
			tb.Fatalf("%s: %v, want one message", gs[i], res)
		}
		if r.contact != "subscribed" {
			continue
		}
		m := res.Messages[0]
		ack := combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: res.LeaseID, Group: gs[i]}
		if _, err := r.s.Ack(context.Background(), "", gs[i], []combtype.AckItem{ack}); err != nil {
			tb.Fatal(err)
		}
	}
}

func (r *WakeRig) names() []string {
	out := make([]string, r.groups)
	for i := range out {
		out[i] = fmt.Sprintf("g-%d", i)
		if r.contact != "subscribed" {
			out[i] = fmt.Sprintf("g-%d-%d", r.round, i)
		}
	}
	return out
}

func (r *WakeRig) park(tb testing.TB, gs []string) {
	tb.Helper()
	for _, g := range gs {
		if _, err := r.s.Pop(context.Background(), "", combtype.PopRequest{Queue: "parked", Group: g, SubscriptionMode: "new"}); err != nil {
			tb.Fatal(err)
		}
	}
}

func (r *WakeRig) push(tb testing.TB) {
	tb.Helper()
	if _, err := r.s.Push(context.Background(), "", []combtype.PushItem{{Queue: "parked", Payload: r.payload}}); err != nil {
		tb.Fatal(err)
	}
}
