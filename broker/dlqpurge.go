package broker

import (
	"context"

	"github.com/comb-broker/comb/store"
)

// Types of a DLQ purge, re-exported from the store.
type (
	PurgeRequest = store.PurgeRequest
	PurgeResult  = store.PurgeResult
)

// Bounds of one DLQ purge.
const (
	DefaultPurgeLimit = store.DefaultPurgeLimit
	MaxPurgeLimit     = store.MaxPurgeLimit
)

// PurgeDLQ deletes dead-lettered rows matching req for good, in one
// bounded commit. A request with no filter is refused unless req.All is
// set.
func (b *Broker) PurgeDLQ(ctx context.Context, req PurgeRequest) (*PurgeResult, error) {
	return b.st.PurgeDLQ(ctx, req)
}
