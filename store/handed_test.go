package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// TestParkedPopsAreClaimedByTheWriter: the commit of a push takes every
// pop parked on its queue, and the writer makes their claims itself in the
// commits right after, 64 then four times as many, with no pop queuing a
// claim of its own; each pop is handed its message under its own lease.
// A pop that left before the push is not claimed for; one that leaves once
// its claim is taken still gets the outcome; a change made outside the
// writer (a lease that expired) tells parked pops to look again. A pop
// whose claim finds nothing due is parked again without an answer, and
// the next change takes it again.
func TestParkedPopsAreClaimedByTheWriter(t *testing.T) {
	ctx := context.Background()
	s, commits := openCountingCommits(t)
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "first", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	<-commits

	// Outside the writer: told to look again, nothing claimed.
	changed, stop := s.Watch("", "q")
	p := s.Park("", &combtype.PopRequest{Queue: "q", Group: "outside"}, changed, time.Minute)
	s.Notify("", "q")
	stop()
	if res, claimed, err := p.Result(<-p.Done()); claimed || res != nil || err != nil {
		t.Fatalf("after a change outside the writer: %v, claimed %v, %v", res, claimed, err)
	}
	if s.Park("", &combtype.PopRequest{Queue: "q", Group: "late"}, changed, time.Minute) != nil {
		t.Fatal("parked on a channel already closed")
	}

	const n = 300
	changed, stop = s.Watch("", "q")
	defer stop()
	parked := make([]*ParkedPop, n)
	for i := range parked {
		if parked[i] = s.Park("", &combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g-%d", i), Batch: 10}, changed, time.Minute); parked[i] == nil {
			t.Fatalf("g-%d not parked", i)
		}
	}
	if !parked[7].Leave() {
		t.Fatal("a pop parked and not taken could not leave")
	}
	if got := s.parkedOn("", "q"); got != n-1 {
		t.Fatalf("%d parked after one left, want %d", got, n-1)
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "second", Payload: []byte(`2`)}}); err != nil {
		t.Fatal(err)
	}
	if s.parkedOn("", "q") != 0 {
		t.Fatal("the push's commit left pops parked")
	}
	if parked[9].Leave() {
		t.Fatal("a pop whose claim was taken could leave")
	}
	leases := map[string]bool{}
	for i, p := range parked {
		if i == 7 {
			continue
		}
		res, claimed, err := p.Result(<-p.Done())
		if err != nil || !claimed || len(res.Messages) != 2 || res.LeaseID == "" || leases[res.LeaseID] {
			t.Fatalf("g-%d: %+v, claimed %v, %v", i, res, claimed, err)
		}
		leases[res.LeaseID] = true
	}
	var sizes []int
	for total := 0; total < n-1; {
		ops := <-commits
		sizes = append(sizes, ops)
		if len(sizes) > 1 { // the first is the push
			total += ops
		}
	}
	if want := []int{1, 64, 235}; !slices.Equal(sizes, want) {
		t.Errorf("commits of %v ops, want %v", sizes, want)
	}
	if got := s.Stats().WaveClaims.Load(); got != n-1 {
		t.Errorf("%d claims fused, want %d", got, n-1)
	}
	// The pop that left holds nothing: its group's first pop gets both.
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g-7", Batch: 10})
	if err != nil || len(res.Messages) != 2 {
		t.Fatalf("g-7 after leaving: %+v, %v", res, err)
	}

	// Groups from now: the change after they park has nothing for them.
	// They wait on, unanswered, and the next push is theirs.
	changed, stop = s.Watch("", "q")
	defer stop()
	fresh := make([]*ParkedPop, 5)
	for i := range fresh {
		req := combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("new-%d", i), SubscriptionMode: "new"}
		if fresh[i] = s.Park("", &req, changed, time.Minute); fresh[i] == nil {
			t.Fatalf("new-%d not parked", i)
		}
	}
	if err := s.submit(ctx, &writeOp{apply: func(w *wtx) error { w.touch("", "q"); return nil }}); err != nil {
		t.Fatal(err)
	}
	if err := s.submit(ctx, &writeOp{apply: func(*wtx) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	for i, p := range fresh {
		select {
		case err := <-p.Done():
			t.Fatalf("new-%d answered with nothing due: %v", i, err)
		default:
		}
	}
	if got := s.parkedOn("", "q"); got != len(fresh) {
		t.Fatalf("%d parked again, want %d", got, len(fresh))
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "third", Payload: []byte(`3`)}}); err != nil {
		t.Fatal(err)
	}
	for i, p := range fresh {
		res, claimed, err := p.Result(<-p.Done())
		if err != nil || !claimed || len(res.Messages) != 1 || res.Messages[0].TxnID != "third" {
			t.Fatalf("new-%d: %+v, claimed %v, %v", i, res, claimed, err)
		}
	}
}

// TestAnAckTakesOnlyItsOwnGroupsParkedPops: an ack that ends a lease can
// only make something due for its own group, so the commit takes only
// that group's parked pops for a claim; the pops of other groups stay
// parked, not claimed for. Whoever waits on the queue's channel (a pop
// that has yet to park, or one that parks without Park) still wakes.
func TestAnAckTakesOnlyItsOwnGroupsParkedPops(t *testing.T) {
	ctx := context.Background()
	s, commits := openCountingCommits(t)
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "m", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	leases := map[string]*combtype.PopResult{}
	for _, g := range []string{"a", "b", "c"} {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: g})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("%s: %+v, %v", g, res, err)
		}
		leases[g] = res
	}
	changed, stop := s.Watch("", "q")
	defer stop()
	parked := map[string]*ParkedPop{}
	for _, g := range []string{"a", "b", "c"} {
		if parked[g] = s.Park("", &combtype.PopRequest{Queue: "q", Group: g}, changed, time.Minute); parked[g] == nil {
			t.Fatalf("%s not parked", g)
		}
	}
	plain, stopPlain := s.Watch("", "q")
	defer stopPlain()
	for len(commits) > 0 {
		<-commits
	}
	// a gives its message back: due again for a, and for a only.
	m := leases["a"].Messages[0]
	if _, err := s.Ack(ctx, "", "a", []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID,
		LeaseID: leases["a"].LeaseID, Status: combtype.AckRetry}}); err != nil {
		t.Fatal(err)
	}
	res, claimed, err := parked["a"].Result(<-parked["a"].Done())
	if err != nil || !claimed || len(res.Messages) != 1 {
		t.Fatalf("a after its retry: %+v, claimed %v, %v", res, claimed, err)
	}
	if ack, claim := <-commits, <-commits; ack != 1 || claim != 1 {
		t.Errorf("the ack's commit of %d ops was followed by a claim commit of %d, want 1 and 1 (a's claim alone)", ack, claim)
	}
	select {
	case <-plain:
	default:
		t.Error("the ack did not wake a waiter on the queue's channel")
	}
	if got := s.parkedOn("", "q"); got != 2 {
		t.Errorf("%d pops parked after a's ack, want b's and c's", got)
	}
	for _, g := range []string{"b", "c"} {
		select {
		case err := <-parked[g].Done():
			t.Errorf("%s was answered (%v) by a's ack", g, err)
		default:
		}
	}
	// A push is for everyone: b and c are taken and claimed for.
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "n", Payload: []byte(`2`)}}); err != nil {
		t.Fatal(err)
	}
	// Queued after their claims, this commits with or after them.
	if err := s.submit(ctx, &writeOp{apply: func(*wtx) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"b", "c"} {
		// Their partition is leased by their own earlier pops: nothing is
		// due before those leases expire, later than the pops wait.
		select {
		case err := <-parked[g].Done():
			t.Errorf("%s answered (%v) with nothing due before it stops waiting", g, err)
		default:
		}
	}
	if got := s.parkedOn("", "q"); got != 2 {
		t.Errorf("%d pops parked after the push, want b's and c's again", got)
	}
}

// openCountingCommits opens a store in t's temporary directory that sends
// the number of ops of each commit on the channel it returns.
func openCountingCommits(t *testing.T) (*Store, <-chan int) {
	t.Helper()
	commits := make(chan int, 64)
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "comb.db"),
		OnCommit: func(ops int, _ time.Duration) { commits <- ops }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, commits
}
