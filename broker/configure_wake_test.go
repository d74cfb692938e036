package broker_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// A long-poll parked on a message held back by the queue's delay is woken
// when a configure shortens the delay, as a pop without wait would get the
// message then. Before, it waited out its own timeout (20 s by hand).
func TestAConfigureThatShortensTheDelayWakesParkedPops(t *testing.T) {
	ctx := context.Background()
	b := combtest.OpenBrokerAt(t, filepath.Join(t.TempDir(), "comb.db"), combtest.Options{})
	defer combtest.CloseBroker(t, b)
	o := combtype.DefaultQueueOptions()
	o.DelayedProcessing = 600
	if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "d", Options: o}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "d", TxnID: "held", Payload: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	parked := make(chan struct{})
	type result struct {
		res *combtype.PopResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := b.Pop(ctx, combtype.PopRequest{Queue: "d", Batch: 1, Wait: true, Timeout: 5 * time.Minute,
			OnPark: func() { close(parked) }})
		done <- result{res, err}
	}()
	select {
	case <-parked:
	case r := <-done:
		t.Fatalf("the pop did not park: %+v, %v", r.res, r.err)
	}
	o.DelayedProcessing = 0
	if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "d", Options: o}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.res == nil || len(r.res.Messages) != 1 || r.res.Messages[0].TxnID != "held" {
			t.Fatalf("pop = %+v, %v; want the message no longer held", r.res, r.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the parked pop was not woken by the configure")
	}
}
