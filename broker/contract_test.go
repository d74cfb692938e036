package broker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A backlog request naming no group counts for the queue-mode group, as
// BacklogRequest says and as a pop naming no group consumes: not every
// retained message.
func TestGroupBacklogOfNoGroupIsTheQueueModeGroups(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{})
	var items []combtype.PushItem
	for range 5 {
		items = append(items, combtype.PushItem{Queue: "q", Payload: []byte(`1`)})
	}
	if _, err := b.Push(ctx, items); err != nil {
		t.Fatal(err)
	}
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Batch: 3, AutoAck: true})
	if err != nil || len(res.Messages) != 3 {
		t.Fatalf("pop: %v %d", err, len(res.Messages))
	}
	for _, group := range []string{"", combtype.QueueModeGroup} {
		n, err := b.GroupBacklog(ctx, combtype.BacklogRequest{Queue: "q", Group: group})
		if err != nil || n != 2 {
			t.Errorf("GroupBacklog(group %q) = %d, %v; want 2", group, n, err)
		}
	}
	if n, err := b.GroupBacklog(ctx, combtype.BacklogRequest{Queue: "nope"}); err != nil || n != 0 {
		t.Errorf("backlog of an unknown queue = %d, %v; want 0", n, err)
	}
}

// SetIDPrefix stores only what Put would accept.
func TestForwardersSetIDPrefixRefusesWhatPutRefuses(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{})
	fw := b.Forwarders()
	def := &combtype.Forwarder{Name: "up", Queue: "q", UpstreamURL: "http://127.0.0.1:1"}
	if err := fw.Put(ctx, def, false); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{strings.Repeat("x", combtype.ForwarderMaxIDPrefix+1), "dev\n1"} {
		if err := fw.SetIDPrefix(ctx, "up", bad); !errors.Is(err, combtype.ErrInvalid) {
			t.Errorf("SetIDPrefix(%q) = %v, want combtype.ErrInvalid", bad, err)
		}
		if err := fw.Put(ctx, &combtype.Forwarder{Name: "up", Queue: "q", UpstreamURL: "http://127.0.0.1:1", IDPrefix: bad}, true); !errors.Is(err, combtype.ErrInvalid) {
			t.Errorf("Put with IDPrefix %q = %v, want combtype.ErrInvalid", bad, err)
		}
	}
	got, err := fw.Get(ctx, "up")
	if err != nil || got.IDPrefix != def.IDPrefix {
		t.Fatalf("stored prefix %q (%v), want it unchanged %q", got.IDPrefix, err, def.IDPrefix)
	}
	if err := fw.SetIDPrefix(ctx, "dev-7.", "dev-7."); !errors.Is(err, combtype.ErrForwarderNotFound) {
		t.Errorf("SetIDPrefix of an unknown forwarder = %v, want ErrForwarderNotFound", err)
	}
	if err := fw.SetIDPrefix(ctx, "up", "dev-7."); err != nil {
		t.Fatal(err)
	}
	if got, _ := fw.Get(ctx, "up"); got.IDPrefix != "dev-7." {
		t.Fatalf("prefix %q, want dev-7.", got.IDPrefix)
	}
}

// A DLQ count with no time bounds counts every dead letter, as a listing
// with none lists them all.
func TestDLQCountWithoutTimesCountsEverything(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{})
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "jobs", Payload: []byte(`"boom"`)}}); err != nil {
		t.Fatal(err)
	}
	p, err := b.Pop(ctx, combtype.PopRequest{Queue: "jobs", Group: "w"})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("pop: %v %+v", err, p)
	}
	m := p.Messages[0]
	ar, err := b.Ack(ctx, []combtype.AckItem{{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Group: "w",
		Status: combtype.AckDLQ, Error: "bad"}})
	if err != nil || !ar[0].DLQ {
		t.Fatalf("dlq ack: %v %+v", err, ar)
	}
	_, listed, err := b.DLQList(ctx, combtype.DLQFilter{Queue: "jobs"})
	if err != nil || listed != 1 {
		t.Fatalf("listed %d, %v", listed, err)
	}
	for _, f := range []combtype.DLQCountFilter{{}, {Queues: []string{"jobs"}}, {From: b.Now().Add(-time.Hour)}} {
		if n, err := b.DLQCount(ctx, f); err != nil || n != 1 {
			t.Errorf("DLQCount(%+v) = %d, %v; want 1", f, n, err)
		}
	}
	if n, err := b.DLQCount(ctx, combtype.DLQCountFilter{To: b.Now().Add(-time.Hour)}); err != nil || n != 0 {
		t.Errorf("DLQCount before it failed = %d, %v; want 0", n, err)
	}
}
