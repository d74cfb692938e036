package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
