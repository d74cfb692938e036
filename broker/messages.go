package broker

import (
	"context"

	"github.com/comb-broker/comb/combtype"
)

// MaxMessageLimit caps one page of MessageList.
const MaxMessageLimit = 10000

// MessageList returns one page of the tenant's messages matching f, newest
// first, decoding only the segments the page needs. A Limit <= 0 is
// combtype.DefaultMessageLimit, one above MaxMessageLimit is
// MaxMessageLimit; a negative Offset is 0.
func (b *Broker) MessageList(ctx context.Context, f combtype.MessageFilter) ([]combtype.MessageInfo, combtype.ModeInfo, error) {
	if f.Limit <= 0 {
		f.Limit = combtype.DefaultMessageLimit
	}
	f.Limit, f.Offset = min(f.Limit, MaxMessageLimit), max(f.Offset, 0)
	return b.st.ListMessages(ctx, b.tenant, f)
}

// MessageGet returns one message with its payload and every group's view
// of it, or combtype.ErrMessageNotFound.
func (b *Broker) MessageGet(ctx context.Context, ref combtype.MessageRef) (*combtype.MessageDetail, error) {
	return b.st.GetMessage(ctx, b.tenant, ref.PartitionID, ref.TxnID)
}

// MessageDelete tombstones one message so it is never delivered again, to
// any group; it reports false, with no error, when no such stored message
// exists. It is durable when it returns true.
func (b *Broker) MessageDelete(ctx context.Context, ref combtype.MessageRef) (bool, error) {
	return b.st.DeleteMessage(ctx, b.tenant, ref.PartitionID, ref.TxnID)
}
