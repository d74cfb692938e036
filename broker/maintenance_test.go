package broker_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

func TestMaintenanceModeSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	if _, err := b.MaintenanceSetPush(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := b.MaintenanceSetPop(ctx, true); err != nil {
		t.Fatal(err)
	}
	res, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", Payload: []byte(`"parked"`), TxnID: "p1"}})
	if err != nil || res[0].Status != combtype.StatusBuffered {
		t.Fatalf("push: %v %+v", err, res)
	}
	combtest.CloseBroker(t, b)

	b = combtest.OpenBrokerAt(t, path, combtest.Options{})
	defer combtest.CloseBroker(t, b)
	st, err := b.Maintenance(ctx)
	if err != nil || !st.PushMaintenance || !st.PopMaintenance || st.Buffered != 1 {
		t.Fatalf("after restart %+v (%v), want both switches on and 1 buffered", st, err)
	}
	if _, err := b.MaintenanceSetPop(ctx, false); err != nil {
		t.Fatal(err)
	}
	if res, _ := b.Pop(ctx, combtype.PopRequest{Queue: "q", Batch: 10}); len(res.Messages) != 0 {
		t.Fatalf("a buffered push is visible: %+v", res.Messages)
	}
	if st, err = b.MaintenanceSetPush(ctx, false); err != nil || st.PushMaintenance || st.Buffered != 0 {
		t.Fatalf("switch off: %+v %v", st, err)
	}
	res2, _ := b.Pop(ctx, combtype.PopRequest{Queue: "q", Batch: 10})
	if len(res2.Messages) != 1 || string(res2.Messages[0].Payload) != `"parked"` || res2.Messages[0].TxnID != "p1" {
		t.Fatalf("after the drain popped %+v", res2.Messages)
	}
}

// Producers keep pushing while maintenance is switched on and off: every
// message lands in the log exactly once, and each producer's order holds.
func TestMaintenanceDrainIsExactlyOnceUnderConcurrentPushes(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{})
	const producers = 4
	var stop atomic.Bool
	var wg sync.WaitGroup
	sent := make([]atomic.Int64, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				items := []combtype.PushItem{{Queue: "q", Partition: fmt.Sprint("p", p), TxnID: fmt.Sprintf("p%d-%d", p, i),
					Payload: []byte(fmt.Sprint(i))}}
				if i%7 == 0 {
					items = append(items, items[0]) // a duplicate in the same request
				}
				if _, err := b.Push(ctx, items); err != nil {
					t.Errorf("push: %v", err)
					return
				}
				sent[p].Store(int64(i + 1))
			}
		}()
	}
	for round := range 3 {
		if _, err := b.MaintenanceSetPush(ctx, true); err != nil {
			t.Fatal(err)
		}
		buffered := int64(0)
		combtest.CheckFor(t, 10*time.Second, func() error {
			st, err := b.Maintenance(ctx)
			if err != nil {
				return err
			}
			if buffered = st.Buffered; buffered < 200 {
				return fmt.Errorf("round %d: %d buffered", round, buffered)
			}
			return nil
		})
		if _, err := b.MaintenanceSetPush(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if st, _ := b.Maintenance(ctx); st.Buffered != 0 || st.PushMaintenance {
		t.Fatalf("after the last switch %+v", st)
	}
	for p := range producers {
		res, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Partition: fmt.Sprint("p", p), Group: "check", Batch: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(res.Messages)) != sent[p].Load() {
			t.Fatalf("producer %d: %d messages in the log, %d sent", p, len(res.Messages), sent[p].Load())
		}
		for i, m := range res.Messages {
			if m.TxnID != fmt.Sprintf("p%d-%d", p, i) {
				t.Fatalf("producer %d: message %d is %s", p, i, m.TxnID)
			}
		}
	}
}

// Pushes parked under maintenance are answered "buffered", so each is
// acknowledged: they must all land. A push that would take the database
// past Options.MaxQueues is refused as it is parked (as it would be were
// maintenance off), not answered "buffered" and then refused by the drain,
// which failed every switch-off (409) and kept every parked push, those
// of existing queues too, out of the log. A parked push whose queue is
// deleted and its room taken while it waits still lands: the drain does
// not refuse what was acknowledged.
func TestMaintenanceParksNoPushItCannotDrain(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{Broker: func(o *broker.Options) { o.MaxQueues = 3 }})
	push := func(queue, txn string) ([]combtype.PushResult, error) {
		return b.Push(ctx, []combtype.PushItem{{Queue: queue, TxnID: txn, Payload: []byte(`"` + txn + `"`)}})
	}
	if _, err := push("old", "before"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.MaintenanceSetPush(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{"old", "during"}, {"new1", "n1"}, {"new2", "n2"}} {
		if res, err := push(p[0], p[1]); err != nil || res[0].Status != combtype.StatusBuffered {
			t.Fatalf("push to %s under maintenance: %v %+v", p[0], err, res)
		}
	}
	if res, err := push("new3", "n3"); !errors.Is(err, combtype.ErrQueueLimit) {
		t.Fatalf("a parked push past MaxQueues: %v %+v; want ErrQueueLimit", err, res)
	}
	// new2's queue goes and another takes its room while n2 waits.
	if _, err := b.QueueDelete(ctx, "new2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "other"}); err != nil {
		t.Fatal(err)
	}
	if st, err := b.MaintenanceSetPush(ctx, false); err != nil || st.PushMaintenance || st.Buffered != 0 {
		t.Fatalf("switch off: %+v %v", st, err)
	}
	for queue, want := range map[string][]string{"old": {"before", "during"}, "new1": {"n1"}, "new2": {"n2"}} {
		res, err := b.Pop(ctx, combtype.PopRequest{Queue: queue, Batch: 10})
		if err != nil || len(res.Messages) != len(want) {
			t.Fatalf("pop %s after the drain: %v, %d messages; want %v", queue, err, len(res.Messages), want)
		}
		for i, m := range res.Messages {
			if m.TxnID != want[i] {
				t.Errorf("pop %s: message %d is %s; want %s", queue, i, m.TxnID, want[i])
			}
		}
	}
}
