package broker_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/store"
)

func TestAQueueDeleteInterruptedByACrashIsFinishedWhenTheBrokerOpens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	b := openBrokerAt(t, path)
	if _, err := b.Push(ctx, "", []broker.PushItem{{Queue: "gone", Payload: []byte("1")}, {Queue: "kept", Payload: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	closeBroker(t, b)
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

	b = openBrokerAt(t, path)
	defer closeBroker(t, b)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var queues, segments int
		if err := b.Store().ReadDB().QueryRow(`SELECT (SELECT COUNT(*) FROM queues), (SELECT COUNT(*) FROM segments)`).
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
	b := openBrokerAt(t, filepath.Join(t.TempDir(), "comb.db"))
	defer closeBroker(t, b)
	o := store.DefaultQueueOptions()
	o.RetentionSeconds = 1e13
	_, _, err := b.Configure(ctx, broker.ConfigureRequest{Queue: "q", Options: o})
	var re *broker.RangeError
	if !errors.As(err, &re) || re.Name != "options.retentionSeconds" || !errors.Is(err, broker.ErrOutOfRange) ||
		!errors.Is(err, store.ErrInvalid) {
		t.Fatalf("configure = %v", err)
	}
	if _, err := b.Store().Queue(ctx, "", "q"); !errors.Is(err, store.ErrQueueNotFound) {
		t.Fatalf("refused configure wrote the queue: %v", err)
	}
	if _, err := b.ExtendLease(ctx, "", "l", 400*24*time.Hour); !errors.As(err, &re) {
		t.Fatalf("extend = %v", err)
	}
}
