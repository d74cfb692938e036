package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// TestAClaimHandedToAPopThatLeftIsReleased: the writer claims for a
// parked pop when a push commits; if the pop's caller has left by then,
// the lease it was handed is given back at once (not left to expire), so
// the group's next pop gets the message, and no retry is charged for it.
func TestAClaimHandedToAPopThatLeftIsReleased(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	push := func(txn string) {
		t.Helper()
		if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", TxnID: txn, Payload: []byte(`1`)}}); err != nil {
			t.Fatal(err)
		}
	}
	push("created")
	next := func(group string) *combtype.PopResult {
		t.Helper()
		res, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Group: group, Batch: 10, SubscriptionMode: "new"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	next("g") // subscribes g from now

	// The claim is taken by the push's commit, and the caller leaves
	// before it reads it.
	req := combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, Wait: true, Timeout: time.Minute}
	changed, stop := b.st.Watch(b.tenant, "q")
	p := b.st.Park(b.tenant, &req, changed, time.Minute)
	if p == nil {
		t.Fatal("not parked")
	}
	push("m1")
	stop()
	if p.Leave() {
		t.Fatal("the push's commit did not take the parked pop")
	}
	left, cancel := context.WithCancel(ctx)
	cancel()
	if res, again, err := b.parkHanded(left, p, time.Minute); res != nil || again || err != nil {
		t.Fatalf("a pop that left got %+v, again %v, %v", res, again, err)
	}
	res := next("g")
	if len(res.Messages) != 1 || res.Messages[0].TxnID != "m1" || res.Messages[0].RetryCount != 0 {
		t.Fatalf("after the pop left, the group's next pop got %+v", res)
	}

	// The same through Pop, for many pops leaving as the push commits:
	// whatever each was handed, no group is left holding a lease.
	const n = 200
	for i := range n {
		next(fmt.Sprintf("h-%d", i))
	}
	pctx, leave := context.WithCancel(ctx)
	var wg sync.WaitGroup
	got := make([]*combtype.PopResult, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := req
			r.Group = fmt.Sprintf("h-%d", i)
			res, err := b.Pop(pctx, r)
			if err != nil {
				t.Errorf("h-%d: %v", i, err)
			}
			got[i] = res
		}()
	}
	for b.parked.Load() < n {
		time.Sleep(time.Millisecond)
	}
	push("m2")
	leave()
	wg.Wait()
	handed := 0
	for i := range n {
		if got[i] != nil && len(got[i].Messages) > 0 {
			handed++ // delivered before the caller left: it holds the lease
			continue
		}
		if res := next(fmt.Sprintf("h-%d", i)); len(res.Messages) != 1 || res.Messages[0].TxnID != "m2" {
			t.Fatalf("h-%d left empty-handed, then its group got %+v", i, res)
		}
	}
	t.Logf("%d of %d pops were answered before their callers left", handed, n)

	// Pops whose claims find nothing (their partition gets nothing) are
	// parked again by the writer, unless their callers left: every one
	// of those must be answered, not parked again for nobody.
	for i := range n {
		next(fmt.Sprintf("p-%d", i))
	}
	pctx, leave = context.WithCancel(ctx)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := req
			r.Group, r.Partition = fmt.Sprintf("p-%d", i), "a"
			if res, err := b.Pop(pctx, r); err != nil || len(res.Messages) != 0 {
				t.Errorf("p-%d: %+v, %v", i, res, err)
			}
		}()
	}
	for b.parked.Load() < n {
		time.Sleep(time.Millisecond)
	}
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", Partition: "b", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	leave()
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d pops that left are still parked", b.parked.Load())
	}
}
