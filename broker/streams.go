package broker

import (
	"context"

	"github.com/comb-broker/comb/store"
)

// Streaming queries: the operators run in the client; the broker keeps
// their state per (query, source partition, key) and commits each step as
// one atomic cycle (docs/streams.md).
type (
	StreamQuery           = store.StreamQuery
	StreamRegisterRequest = store.StreamRegisterRequest
	StreamRegistration    = store.StreamRegistration
	StateFilter           = store.StateFilter
	StateRow              = store.StateRow
	StateOp               = store.StateOp
	CycleAck              = store.CycleAck
	CycleRequest          = store.CycleRequest
	CycleResult           = store.CycleResult
	CycleAckResult        = store.CycleAckResult
)

// State op types and ack statuses a cycle accepts.
const (
	StateUpsert  = store.StateUpsert
	StateDelete  = store.StateDelete
	AckCompleted = store.AckCompleted
	AckSuccess   = store.AckSuccess
	AckFailed    = store.AckFailed
	AckDLQ       = store.AckDLQ
)

// RegisterStreamQuery registers a query by name; see store.RegisterStreamQuery.
func (b *Broker) RegisterStreamQuery(ctx context.Context, req StreamRegisterRequest) (StreamRegistration, error) {
	return b.st.RegisterStreamQuery(ctx, req)
}

// StreamState reads one state shard of tenant's query, filtered by f.
func (b *Broker) StreamState(ctx context.Context, tenant, queryID, partitionID string, f StateFilter) ([]StateRow, error) {
	return b.st.StreamState(ctx, tenant, queryID, partitionID, f)
}

// Cycle commits one step of a streaming query all or nothing. Its pushes
// go straight to the log: push maintenance does not buffer them, since a
// buffered sink message could not commit with the state and the ack.
func (b *Broker) Cycle(ctx context.Context, req CycleRequest) (CycleResult, error) {
	if err := checkCycle(req); err != nil {
		return CycleResult{Error: err.Error()}, nil // refused as the store refuses a cycle
	}
	res, err := b.st.Cycle(ctx, req)
	if err == nil && res.Error == "" {
		b.metrics.countPush(req.Tenant, res.Pushes)
	}
	return res, err
}
