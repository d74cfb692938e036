package broker_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// TestOpenOverADamagedQueuesPageServesTheRest: a damaged page under the
// queues table made Open fail on the count of encrypted queues it makes
// for a warning, so nothing of the file was served. Open now succeeds; a
// read through the page fails with combtype.ErrDamaged, which a program
// embedding the broker can test for as the server does, and a read that
// does not go through it still answers.
func TestOpenOverADamagedQueuesPageServesTheRest(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	items := make([]combtype.PushItem, 200)
	for i := range items {
		items[i] = combtype.PushItem{Queue: fmt.Sprintf("queue-%03d", i), TxnID: "m", Payload: []byte(`{}`)}
	}
	if _, err := b.Push(ctx, items); err != nil {
		t.Fatal(err)
	}
	combtest.CloseBroker(t, b)
	combtest.DamagePage(t, path, "queues")

	b, err := broker.Open(ctx, broker.Options{Path: path, RetentionInterval: -1})
	if err != nil {
		t.Fatalf("open over a damaged queues page: %v", err)
	}
	defer b.Close()
	if _, err := b.QueueList(ctx, combtype.QueueFilter{}); !errors.Is(err, combtype.ErrDamaged) {
		t.Errorf("queue listing through the damaged page: %v, want ErrDamaged", err)
	}
	if _, _, err := b.DLQList(ctx, combtype.DLQFilter{}); err != nil {
		t.Errorf("dead letters, not under the damaged page: %v", err)
	}
}
