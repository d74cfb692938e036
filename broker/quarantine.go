package broker

import (
	"context"

	"github.com/comb-broker/comb/store"
)

// Types of the quarantine view, re-exported from the store.
type (
	QuarantineFilter   = store.QuarantineFilter
	QuarantinedSegment = store.QuarantinedSegment
)

// Limits of the quarantine listing.
const (
	DefaultQuarantineLimit = store.DefaultQuarantineLimit
	MaxQuarantineLimit     = store.MaxQuarantineLimit
)

// Quarantined returns one page of the segments claims put aside because
// they failed their checksum or did not decode, the most recent first, and
// how many match f in all.
func (b *Broker) Quarantined(ctx context.Context, f QuarantineFilter) ([]QuarantinedSegment, int64, error) {
	return b.st.ListQuarantine(ctx, f)
}
