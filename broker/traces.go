package broker

import (
	"context"

	"github.com/comb-broker/comb/store"
)

// Traces: events consumers file against the messages they handle.
type (
	TraceInput = store.TraceInput
	Trace      = store.Trace
	TraceName  = store.TraceName
)

// RecordTrace stores a trace event for a message and returns its id; an
// unknown message is store.ErrMessageNotFound.
func (b *Broker) RecordTrace(ctx context.Context, tenant string, in TraceInput) (string, error) {
	if err := checkTrace(in); err != nil {
		return "", err
	}
	return b.st.RecordTrace(ctx, tenant, in)
}

// MessageTraces returns the traces of one message, oldest first.
func (b *Broker) MessageTraces(ctx context.Context, tenant, partitionID, txnID string) ([]Trace, error) {
	return b.st.MessageTraces(ctx, tenant, partitionID, txnID)
}

// Pages of the trace listings: the sizes a caller that names none should
// ask for, and the most one call returns.
const (
	DefaultTraceLimit     = 100
	DefaultTraceNameLimit = 50
	MaxTraceLimit         = 10000
)

// TracesByName returns a page of the traces filed under name and their
// total. limit is held to [0, MaxTraceLimit] and offset to at least 0.
func (b *Broker) TracesByName(ctx context.Context, tenant, name string, limit, offset int) ([]Trace, int64, error) {
	return b.st.TracesByName(ctx, tenant, name, min(max(limit, 0), MaxTraceLimit), max(offset, 0))
}

// TraceNames returns a page of trace names, most recently used first, and
// their total. limit is held to [0, MaxTraceLimit] and offset to at least 0.
func (b *Broker) TraceNames(ctx context.Context, tenant string, limit, offset int) ([]TraceName, int64, error) {
	return b.st.TraceNames(ctx, tenant, min(max(limit, 0), MaxTraceLimit), max(offset, 0))
}
