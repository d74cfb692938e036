package broker

import (
	"context"

	"github.com/comb-broker/comb/store"
)

// Operator views: the dead-letter queue, resources, message reads and
// metrics. They read through the store's reader pool; the writes among
// them (re-drive, queue and message deletion) go through its writer.

// Types of the operator views, re-exported from the store.
type (
	DLQFilter      = store.DLQFilter
	DLQEntry       = store.DLQEntry
	RedriveRequest = store.RedriveRequest
	RedriveResult  = store.RedriveResult
)

// Limits of the DLQ views.
const (
	DefaultDLQLimit = store.DefaultDLQLimit
	MaxDLQLimit     = store.MaxDLQLimit
	MaxRedriveLimit = store.MaxRedriveLimit
)

// Metrics are the broker's counters since Open.
func (b *Broker) Metrics() *Metrics { return b.metrics }

// DeadLetters returns one page of dead-lettered messages, newest first, and
// how many match f in all.
func (b *Broker) DeadLetters(ctx context.Context, f DLQFilter) ([]DLQEntry, int64, error) {
	return b.st.ListDLQ(ctx, f)
}

// Redrive appends dead-lettered messages back to their queue as new
// messages and removes their DLQ rows, in one commit.
func (b *Broker) Redrive(ctx context.Context, req RedriveRequest) (*RedriveResult, error) {
	res, err := b.st.RedriveDLQ(ctx, req)
	if err == nil {
		b.metrics.pushed(res.Queue, int64(res.Redriven))
	}
	return res, err
}
