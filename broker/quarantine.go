package broker

import (
	"context"

	"github.com/comb-broker/comb/store"
)

// Types of the quarantine view, re-exported from the store.
type (
	QuarantineFilter   = store.QuarantineFilter
	QuarantinedSegment = store.QuarantinedSegment
	RestoreResult      = store.RestoreResult
)

// Errors of Restore.
var (
	ErrQuarantineNotFound = store.ErrQuarantineNotFound
	ErrStillDamaged       = store.ErrStillDamaged
	ErrNoGroupPast        = store.ErrNoGroupPast
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

// RestoreQuarantined re-verifies the stored copy of quarantined segment id
// of tenant and, if it now reads, dead-letters its messages for every group
// past it, for the operator to inspect and re-drive (see
// store.RestoreQuarantined for why not straight back into the log).
func (b *Broker) RestoreQuarantined(ctx context.Context, tenant string, id int64) (*RestoreResult, error) {
	return b.st.RestoreQuarantined(ctx, tenant, id)
}
