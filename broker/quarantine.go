package broker

import (
	"context"

	"github.com/comb-broker/comb/combtype"
)

// QuarantineList returns one page of the segments pops put aside because
// they failed their checksum or did not decode, the most recent first, and
// how many match f in all.
func (b *Broker) QuarantineList(ctx context.Context, f combtype.QuarantineFilter) ([]combtype.QuarantinedSegment, int64, error) {
	return b.st.ListQuarantine(ctx, b.tenant, f)
}

// QuarantineRestore re-verifies the stored copy of quarantined segment id
// and, if it now reads, dead-letters its messages for every group past it,
// for an operator to inspect and re-drive: not straight back into the log,
// where groups already past it would never see them. It fails with
// combtype.ErrQuarantineNotFound, combtype.ErrStillDamaged or
// combtype.ErrNoGroupPast, changing nothing.
func (b *Broker) QuarantineRestore(ctx context.Context, id int64) (*combtype.RestoreResult, error) {
	return b.st.RestoreQuarantined(ctx, b.tenant, id)
}
