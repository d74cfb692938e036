package broker

import (
	"context"

	"github.com/comb-broker/comb/combtype"
)

// Traces: events consumers file against the messages they handle.

// Pages of the trace listings: the sizes a caller that names none should
// ask for, and the most one call returns.
const (
	DefaultTraceLimit     = 100
	DefaultTraceNameLimit = 50
	MaxTraceLimit         = 10000
)

// TraceRecord stores a trace event for a message and returns its id; an
// unknown message is combtype.ErrMessageNotFound.
func (b *Broker) TraceRecord(ctx context.Context, in combtype.TraceInput) (string, error) {
	if err := checkTrace(in); err != nil {
		return "", err
	}
	return b.st.RecordTrace(ctx, b.tenant, in)
}

// TraceList returns the traces of one message, oldest first, as many as
// 4 MiB of data hold (one at least); empty for an unknown message.
func (b *Broker) TraceList(ctx context.Context, ref combtype.MessageRef) ([]combtype.Trace, error) {
	return b.st.MessageTraces(ctx, b.tenant, ref.PartitionID, ref.TxnID)
}

// TraceListByName returns a page of the traces filed under name and their
// total. A Limit <= 0 is DefaultTraceLimit, one above MaxTraceLimit is
// MaxTraceLimit; a page also ends once 4 MiB of data are in it (one trace
// at least), and the caller pages on with Offset.
func (b *Broker) TraceListByName(ctx context.Context, name string, p combtype.Page) ([]combtype.Trace, int64, error) {
	limit := min(cmpOr(p.Limit, DefaultTraceLimit), MaxTraceLimit)
	return b.st.TracesByName(ctx, b.tenant, name, limit, max(p.Offset, 0))
}

// TraceNames returns a page of trace names, most recently used first, and
// their total. A Limit <= 0 is DefaultTraceNameLimit, one above
// MaxTraceLimit is MaxTraceLimit.
func (b *Broker) TraceNames(ctx context.Context, p combtype.Page) ([]combtype.TraceName, int64, error) {
	limit := min(cmpOr(p.Limit, DefaultTraceNameLimit), MaxTraceLimit)
	return b.st.TraceNames(ctx, b.tenant, limit, max(p.Offset, 0))
}

// cmpOr is v, or def when v is not positive.
func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
