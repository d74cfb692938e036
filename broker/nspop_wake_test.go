package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// parkNamespacePop starts a long-poll pop of namespace ns for group and
// returns once it has parked, with where its answer will come.
func parkNamespacePop(ctx context.Context, t *testing.T, b *broker.Broker, ns, group string, autoAck bool) <-chan *combtype.PopResult {
	t.Helper()
	parked := make(chan struct{})
	done := make(chan *combtype.PopResult, 1)
	go func() {
		res, err := b.Pop(ctx, combtype.PopRequest{Namespace: ns, Group: group, Batch: 1, AutoAck: autoAck, Wait: true,
			Timeout: 5 * time.Minute, OnPark: func() { close(parked) }})
		if err != nil {
			t.Errorf("namespace pop: %v", err)
		}
		done <- res
	}()
	select {
	case <-parked:
	case res := <-done:
		t.Fatalf("the namespace pop did not park: %+v", res)
	}
	return done
}

// A parked pop of a namespace woken by a push looks at the queue pushed
// to, not at every queue of its namespace again: before, each commit
// anywhere made every parked namespace pop read all its queues, and 100
// such pops over 2,000 queues took 34 s of both processors to deliver ten
// pushes.
func TestAParkedNamespacePopLooksAtWhatChangedNotAtEveryQueue(t *testing.T) {
	ctx := context.Background()
	b := combtest.OpenBrokerAt(t, filepath.Join(t.TempDir(), "comb.db"), combtest.Options{})
	defer combtest.CloseBroker(t, b)
	const n = 300
	for i := range n {
		if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: fmt.Sprintf("q%03d", i), Namespace: "ns"}); err != nil {
			t.Fatal(err)
		}
	}
	done := parkNamespacePop(ctx, t, b, "ns", "g", true)
	before := b.EngineStats().QueueLooks
	// A push to a queue of another namespace wakes it too, to look at that
	// queue alone and find it is not one of its own; then one to its
	// namespace's last queue.
	last := fmt.Sprintf("q%03d", n-1)
	for _, q := range []string{"elsewhere", last} {
		if _, err := b.Push(ctx, []combtype.PushItem{{Queue: q, Payload: []byte(`"` + q + `"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case res := <-done:
		if res == nil || len(res.Messages) != 1 || res.Messages[0].Queue != last {
			t.Fatalf("pop = %+v; want the message pushed to %s", res, last)
		}
	case <-time.After(time.Minute):
		t.Fatal("the parked namespace pop was not woken by the push")
	}
	if looks := b.EngineStats().QueueLooks - before; looks != 1 {
		t.Errorf("the woken pop looked at %d queues, want 1, the one of its namespace pushed to (of %d)", looks, n)
	}
}

// A namespace pop woken by a change looks at what changed, but what its
// last look at every queue found held back by time (a lease over
// messages, here) still wakes it when due: the pop is not left parked
// until its timeout by a wake that looked elsewhere.
func TestAWokenNamespacePopStillWakesForALeaseItsLastFullLookFound(t *testing.T) {
	ctx := context.Background()
	b := combtest.OpenBrokerAt(t, filepath.Join(t.TempDir(), "comb.db"), combtest.Options{})
	defer combtest.CloseBroker(t, b)
	o := combtype.DefaultQueueOptions()
	o.LeaseTime = 1
	if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "a", Namespace: "ns", Options: o}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "a", TxnID: "held", Payload: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	// Leased and never acknowledged: due again in a second.
	if res, err := b.Pop(ctx, combtype.PopRequest{Namespace: "ns", Group: "g", Batch: 1}); err != nil || len(res.Messages) != 1 {
		t.Fatalf("pop = %+v, %v; want the message under a lease", res, err)
	}
	done := parkNamespacePop(ctx, t, b, "ns", "g", false)
	// A change elsewhere wakes it to look there alone.
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "elsewhere", Payload: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res == nil || len(res.Messages) != 1 || res.Messages[0].TxnID != "held" {
			t.Fatalf("pop = %+v; want the message whose lease expired", res)
		}
	case <-time.After(time.Minute):
		t.Fatal("the namespace pop was not woken when the lease it had seen expired")
	}
}

// A new group's first pop of a namespace subscribes it to the queues it
// has not met in one commit a page of queues: each was a durable claim of
// its own through the writer, 300 commits for 300 queues here, and 100
// new groups over 2,000 queues took 29-44 s to park. A group subscribed
// to new messages gets what is pushed to any queue of the namespace after
// that first pop, the last queue of its walk included.
func TestANewGroupsFirstNamespacePopSubscribesItInACommitAPage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	defer combtest.CloseBroker(t, b)
	const n = 300
	for i := range n {
		if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: fmt.Sprintf("q%03d", i), Namespace: "ns"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "q000", Payload: []byte(`"old"`)}}); err != nil {
		t.Fatal(err)
	}
	before := b.EngineStats().Commits
	res, err := b.Pop(ctx, combtype.PopRequest{Namespace: "ns", Group: "g", Batch: 1, SubscriptionMode: "new"})
	if err != nil || len(res.Messages) != 0 {
		t.Fatalf("first pop of the namespace, new messages only: %+v, %v", res, err)
	}
	if commits := b.EngineStats().Commits - before; commits > 2 {
		t.Errorf("the first pop of %d queues took %d commits, want one a page of 256", n, commits)
	}
	if got := combtest.SQLite3Exec(t, path, `SELECT count(*) FROM subscriptions WHERE group_name = 'g'`); got != "300" {
		t.Errorf("%s subscriptions of the group, want 300", got)
	}
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "q299", Payload: []byte(`"new"`)}}); err != nil {
		t.Fatal(err)
	}
	res, err = b.Pop(ctx, combtype.PopRequest{Namespace: "ns", Group: "g", Batch: 1, SubscriptionMode: "new", AutoAck: true})
	if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Payload) != `"new"` {
		t.Errorf("pop after a push to the namespace's last queue: %+v, %v", res, err)
	}
}
