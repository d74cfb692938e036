package broker

import (
	"context"

	"github.com/comb-broker/comb/store"
)

// CursorOffsets is where one group's cursor stands on one partition.
type CursorOffsets = store.CursorOffsets

// GroupOffsets returns the committed offset, last offset and log start of
// every cursor of group, keyed by partition uuid. It only reads.
func (b *Broker) GroupOffsets(ctx context.Context, tenant, group string) (map[string]CursorOffsets, error) {
	return b.st.GroupOffsets(ctx, tenant, group)
}
