package broker_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

func pushTo(queues ...string) []combtype.PushItem {
	items := make([]combtype.PushItem, len(queues))
	for i, q := range queues {
		items[i] = combtype.PushItem{Queue: q, Payload: []byte(`{"n":1}`)}
	}
	return items
}

// allQueueNames is every queue of the tenants named, as "tenant/name".
func allQueueNames(t *testing.T, b *broker.Broker, tenants ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, tn := range tenants {
		names, err := b.Tenant(tn).QueueNames(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			out[tn+"/"+n] = true
		}
	}
	return out
}

// MaxQueues bounds the queues of every tenant together: a write that
// would create one more is refused whole with ErrQueueLimit, writes to
// existing queues go on, a delete makes room at once, and a reopened
// broker counts what the file holds.
func TestMaxQueuesRefusesTheQueueOneTooMany(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	opts := combtest.Options{Broker: func(o *broker.Options) { o.MaxQueues = 4 }}
	b := combtest.OpenBrokerAt(t, path, opts)
	other := b.Tenant("t2")
	if _, err := b.Push(ctx, pushTo("a", "b")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "c", Options: combtype.DefaultQueueOptions()}); err != nil {
		t.Fatal(err)
	}
	// One new queue fits, two do not: the push is refused whole, the
	// existing queue's item included.
	if _, err := b.Push(ctx, pushTo("a", "d", "e")); !errors.Is(err, combtype.ErrQueueLimit) {
		t.Fatalf("push creating 2 queues past 3 of 4: %v; want ErrQueueLimit", err)
	}
	if st, err := b.QueueStats(ctx, "a"); err != nil || st.Counts.Total != 1 {
		t.Fatalf("queue a after the refused push: %+v, %v; want 1 message", st, err)
	}
	// A transaction whose first push creates a queue and whose second
	// finds no room rolls back whole, its first queue included.
	if _, err := b.Transaction(ctx, []combtype.TxOp{{Type: "push", Items: pushTo("x")}, {Type: "push", Items: pushTo("y")}}); !errors.Is(err, combtype.ErrQueueLimit) {
		t.Fatalf("transaction creating 2 queues past 3 of 4: %v; want ErrQueueLimit", err)
	}
	if _, err := other.Push(ctx, pushTo("d")); err != nil {
		t.Fatalf("the fourth queue: %v", err)
	}
	for name, try := range map[string]func() error{
		"push": func() error { _, err := b.Push(ctx, pushTo("f")); return err },
		"configure": func() error {
			_, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "f", Options: combtype.DefaultQueueOptions()})
			return err
		},
		"transaction": func() error {
			_, err := b.Transaction(ctx, []combtype.TxOp{{Type: "push", Items: pushTo("a")}, {Type: "push", Items: pushTo("f")}})
			return err
		},
	} {
		if err := try(); !errors.Is(err, combtype.ErrQueueLimit) {
			t.Errorf("%s of a fifth queue: %v; want ErrQueueLimit", name, err)
		}
	}
	// Existing queues take pushes and configures at the bound.
	if _, err := b.Push(ctx, pushTo("a", "b")); err != nil {
		t.Fatalf("push to existing queues at the bound: %v", err)
	}
	if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "b", Options: combtype.DefaultQueueOptions()}); err != nil {
		t.Fatalf("configure of an existing queue at the bound: %v", err)
	}
	want := map[string]bool{"/a": true, "/b": true, "t2/c": true, "t2/d": true}
	if got := allQueueNames(t, b, "", "t2"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("queues %v; want %v", got, want)
	}
	if st, _ := b.QueueStats(ctx, "a"); st.Counts.Total != 2 {
		t.Fatalf("queue a holds %d messages; want 2 (the refused transaction wrote nothing)", st.Counts.Total)
	}
	// A delete makes room at once, before its queue is emptied.
	if ok, err := other.QueueDelete(ctx, "c"); err != nil || !ok {
		t.Fatalf("delete: %v, %v", ok, err)
	}
	if _, err := b.Push(ctx, pushTo("f")); err != nil {
		t.Fatalf("push to a new queue after a delete: %v", err)
	}
	if _, err := b.Push(ctx, pushTo("g")); !errors.Is(err, combtype.ErrQueueLimit) {
		t.Fatalf("push to a fifth queue after the delete's room was taken: %v; want ErrQueueLimit", err)
	}
	// And again, right after a successful create.
	if ok, err := b.QueueDelete(ctx, "f"); err != nil || !ok {
		t.Fatalf("delete: %v, %v", ok, err)
	}
	if _, err := b.Push(ctx, pushTo("f2")); err != nil {
		t.Fatalf("push to a new queue after the second delete: %v", err)
	}
	combtest.CloseBroker(t, b)

	// Reopened with the bound, it counts the file's queues.
	b = combtest.OpenBrokerAt(t, path, opts)
	if _, err := b.Push(ctx, pushTo("g")); !errors.Is(err, combtype.ErrQueueLimit) {
		t.Fatalf("after reopening: %v; want ErrQueueLimit", err)
	}
	combtest.CloseBroker(t, b)
	// Reopened with a larger bound, the same file takes more.
	b = combtest.OpenBrokerAt(t, path, combtest.Options{Broker: func(o *broker.Options) { o.MaxQueues = 5 }})
	if _, err := b.Push(ctx, pushTo("g")); err != nil {
		t.Fatalf("after raising the bound: %v", err)
	}
	combtest.CloseBroker(t, b)
}

// Writes racing to create queues share commits (and, when one of them
// fails, the writer rolls back a savepoint or retries each write alone):
// however they are fused, exactly as many queues as the bound are
// created, each write that succeeded has its queues, and each refused
// write has none of its new ones.
func TestMaxQueuesHoldsUnderConcurrentCreates(t *testing.T) {
	ctx := context.Background()
	const max = 40
	b := combtest.MustOpenBroker(t, combtest.Options{Broker: func(o *broker.Options) { o.MaxQueues = max }})
	if _, err := b.Push(ctx, pushTo("base")); err != nil {
		t.Fatal(err)
	}
	const writers = 120
	var wg sync.WaitGroup
	created := make([][]string, writers)
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			// Each writer creates two queues of its own, a third of them
			// in a transaction (its own savepoint), the rest in a push
			// (fused with others; a refused one fails its commit, and
			// the writer retries each write alone).
			qs := []string{fmt.Sprintf("w%03d-a", i), fmt.Sprintf("w%03d-b", i)}
			var err error
			if i%3 == 0 {
				_, err = b.Transaction(ctx, []combtype.TxOp{{Type: "push", Items: pushTo(append(qs, "base")...)}})
			} else {
				_, err = b.Push(ctx, pushTo(append(qs, "base")...))
			}
			if err == nil {
				created[i] = qs
			}
			errs[i] = err
		})
	}
	wg.Wait()
	got := allQueueNames(t, b, "")
	want := map[string]bool{"/base": true}
	for i := range writers {
		if errs[i] != nil && !errors.Is(errs[i], combtype.ErrQueueLimit) {
			t.Errorf("writer %d: %v", i, errs[i])
		}
		for _, q := range created[i] {
			want["/"+q] = true
		}
	}
	// base and 19 pairs: the 20th pair would pass the bound by one.
	if len(got) != len(want) || len(got) != max-1 {
		t.Fatalf("%d queues, %d from writes that succeeded; want %d of each", len(got), len(want), max-1)
	}
	for q := range got {
		if !want[q] {
			t.Errorf("queue %s exists, but its write was refused", q)
		}
	}
	st, err := b.QueueStats(ctx, "base")
	if err != nil {
		t.Fatal(err)
	}
	if n := int(st.Counts.Total); n != 1+(len(got)-1)/2 {
		t.Fatalf("base holds %d messages; want %d: one, and one per write that succeeded", n, 1+(len(got)-1)/2)
	}
}

// MaxForwarders bounds the forwarders of every tenant together: storing
// one more is refused with ErrForwarderLimit, a forwarder's definition
// can still be replaced at the bound, and a delete makes room.
func TestMaxForwardersRefusesTheForwarderOneTooMany(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{Broker: func(o *broker.Options) { o.MaxForwarders = 2 }})
	def := func(name string) *combtype.Forwarder {
		return &combtype.Forwarder{Name: name, Queue: "q", UpstreamURL: "http://127.0.0.1:9"}
	}
	if err := b.Forwarders().Put(ctx, def("f1"), false); err != nil {
		t.Fatal(err)
	}
	if err := b.Tenant("t2").Forwarders().Put(ctx, def("f2"), false); err != nil {
		t.Fatal(err)
	}
	if err := b.Forwarders().Put(ctx, def("f3"), false); !errors.Is(err, combtype.ErrForwarderLimit) {
		t.Fatalf("a third forwarder past 2: %v; want ErrForwarderLimit", err)
	}
	if err := b.Forwarders().Put(ctx, def("f3"), true); !errors.Is(err, combtype.ErrForwarderLimit) {
		t.Fatalf("a third forwarder past 2, declared: %v; want ErrForwarderLimit", err)
	}
	replaced := def("f1")
	replaced.Batch = 7
	if err := b.Forwarders().Put(ctx, replaced, true); err != nil {
		t.Fatalf("replacing a forwarder at the bound: %v", err)
	}
	if got, err := b.Forwarders().Get(ctx, "f1"); err != nil || got.Batch != 7 {
		t.Fatalf("f1 after its replacement: %+v, %v; want batch 7", got, err)
	}
	if err := b.Tenant("t2").Forwarders().Delete(ctx, "f2"); err != nil {
		t.Fatal(err)
	}
	if err := b.Forwarders().Put(ctx, def("f3"), false); err != nil {
		t.Fatalf("a forwarder after a delete: %v", err)
	}
	all, err := b.Forwarders().ListAll(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("forwarders: %d, %v; want 2", len(all), err)
	}
}
