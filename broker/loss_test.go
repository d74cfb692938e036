package broker_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

func TestAQueueDeleteInterruptedByACrashIsFinishedWhenTheBrokerOpens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	if _, err := b.Push(ctx, []combtype.PushItem{{Queue: "gone", Payload: []byte("1")}, {Queue: "kept", Payload: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	combtest.CloseBroker(t, b)
	// What a crash right after a delete's first commit leaves: the queue
	// detached (under a tenant no request can name) but not emptied.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE queues SET tenant = char(0) || 'deleted' || char(0) || uuid, name = uuid WHERE name = 'gone'`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	b = combtest.OpenBrokerAt(t, path, combtest.Options{})
	defer combtest.CloseBroker(t, b)
	rdb := combtest.ReadDB(t, b.DatabasePath())
	for deadline := time.Now().Add(10 * time.Second); ; {
		var queues, segments int
		if err := rdb.QueryRow(`SELECT (SELECT COUNT(*) FROM queues), (SELECT COUNT(*) FROM segments)`).
			Scan(&queues, &segments); err != nil {
			t.Fatal(err)
		}
		if queues == 1 && segments == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d queues and %d segments left: the interrupted delete was not finished", queues, segments)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOutOfRangeOptionsAreRefusedByTheBroker(t *testing.T) {
	ctx := context.Background()
	b := combtest.OpenBrokerAt(t, filepath.Join(t.TempDir(), "comb.db"), combtest.Options{})
	defer combtest.CloseBroker(t, b)
	o := combtype.DefaultQueueOptions()
	o.RetentionSeconds = 1e13
	_, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "q", Options: o})
	var re *broker.RangeError
	if !errors.As(err, &re) || re.Name != "options.retentionSeconds" || !errors.Is(err, combtype.ErrOutOfRange) ||
		!errors.Is(err, combtype.ErrInvalid) {
		t.Fatalf("configure = %v", err)
	}
	if _, err := b.QueueStats(ctx, "q"); !errors.Is(err, combtype.ErrQueueNotFound) {
		t.Fatalf("refused configure wrote the queue: %v", err)
	}
	if _, err := b.LeaseExtend(ctx, "l", 400*24*time.Hour); !errors.As(err, &re) {
		t.Fatalf("extend = %v", err)
	}
}

func TestPushesPastTheInFlightBoundAreRefusedAsBusy(t *testing.T) {
	ctx := context.Background()
	b, err := broker.Open(ctx, broker.Options{Path: filepath.Join(t.TempDir(), "comb.db"), RetentionInterval: -1,
		MaxPushBytesInFlight: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer combtest.CloseBroker(t, b)
	payload := []byte(`"` + strings.Repeat("x", 512<<10-2) + `"`) // a JSON string of 512 KiB
	errs := make(chan error, 32)
	for range cap(errs) {
		go func() {
			_, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", Payload: payload}})
			errs <- err
		}()
	}
	var busy, ok int
	for range cap(errs) {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, combtype.ErrBusy):
			busy++
		default:
			t.Fatal(err)
		}
	}
	var stored int
	if err := combtest.ReadDB(t, b.DatabasePath()).QueryRow(`SELECT COALESCE(SUM(frame_count), 0) FROM segments`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if busy == 0 || ok == 0 || stored != ok {
		t.Fatalf("%d accepted, %d busy, %d stored: 32 concurrent pushes of 512 KiB under a 1 MiB bound", ok, busy, stored)
	}
}

func TestAnAckBatchPastItsBoundIsRefused(t *testing.T) {
	ctx := context.Background()
	b := combtest.OpenBrokerAt(t, filepath.Join(t.TempDir(), "comb.db"), combtest.Options{})
	defer combtest.CloseBroker(t, b)
	items := make([]combtype.AckItem, broker.MaxAckItems+1)
	var re *broker.RangeError
	if _, err := b.Ack(ctx, items); !errors.As(err, &re) || re.Name != "acknowledgments" {
		t.Fatalf("ack of %d items = %v", len(items), err)
	}
	ops := []combtype.TxOp{{Type: "push", Items: make([]combtype.PushItem, broker.MaxTransactionOps+1)}}
	if _, err := b.Transaction(ctx, ops); !errors.As(err, &re) || re.Name != "operations" {
		t.Fatalf("transaction of %d items = %v", len(ops[0].Items), err)
	}
}
