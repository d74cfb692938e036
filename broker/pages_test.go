package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// TestListMessagesHoldsItsPageToTheBounds: an embedder calling the broker
// directly gets the same page bounds HTTP clients do, without httpd.
func TestListMessagesHoldsItsPageToTheBounds(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC)
	b := combtest.MustOpenBroker(t, combtest.Options{Clock: clock.NewManual(t0)})
	n := broker.MaxMessageLimit + 1
	for first := 0; first < n; first += 1000 {
		items := make([]combtype.PushItem, 0, 1000)
		for i := first; i < min(first+1000, n); i++ {
			items = append(items, combtype.PushItem{Queue: "q", Payload: []byte(`{}`), TxnID: fmt.Sprintf("m-%05d", i)})
		}
		if _, err := b.Push(ctx, items); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name          string
		limit, offset int
		want          int
	}{
		{"no limit", 0, 0, combtype.DefaultMessageLimit},
		{"a negative limit", -1, 0, combtype.DefaultMessageLimit},
		{"a limit past the cap", 1 << 30, 0, broker.MaxMessageLimit},
		{"a negative offset", 5, -10, 5},
	} {
		msgs, _, err := b.MessageList(ctx, combtype.MessageFilter{Queue: "q", From: t0.Add(-time.Hour), To: t0.Add(time.Hour),
			Limit: c.limit, Offset: c.offset})
		if err != nil || len(msgs) != c.want {
			t.Errorf("%s: %d messages, %v; want %d", c.name, len(msgs), err, c.want)
		}
	}
}
