package broker

import (
	"context"

	"github.com/comb-broker/comb/combtype"
)

// Streaming queries: the operators run in the client; the broker keeps
// their state per (query, source partition, key) and commits each step as
// one atomic cycle (docs/streams.md).

// StreamRegister registers a streaming query by name. Registering it again
// with the same config hash finds the stored query; with another hash it
// reports a conflict, or with Reset deletes the query's state.
//
// The name and config hash are at most MaxStateKeyBytes bytes (Queen
// keeps the name unique in a PostgreSQL B-tree, which refuses longer
// ones), the queues at most MaxNameLength characters; a longer one is an
// *InputError and nothing is written.
func (b *Broker) StreamRegister(ctx context.Context, req combtype.StreamRegisterRequest) (combtype.StreamRegistration, error) {
	if err := checkRegister(req); err != nil {
		return combtype.StreamRegistration{}, err
	}
	return b.st.RegisterStreamQuery(ctx, b.tenant, req)
}

// StreamQueries lists the tenant's streaming queries by name, page pg
// (Limit 0: all of them), and how many there are.
func (b *Broker) StreamQueries(ctx context.Context, pg combtype.Page) ([]combtype.StreamQuery, combtype.PageInfo, error) {
	return b.st.StreamQueryPage(ctx, b.tenant, pg)
}

// StreamDelete deletes the tenant's streaming query name and all of its
// state, and returns it; an unknown name is combtype.ErrQueryNotFound. A
// worker still running it gets ErrQueryNotFound from its next cycle, and
// registering the name again starts a new query with no state. It makes
// room under Options.MaxStreamQueries without deleting the source queue.
func (b *Broker) StreamDelete(ctx context.Context, name string) (combtype.StreamQuery, error) {
	return b.st.DeleteStreamQuery(ctx, b.tenant, name)
}

// StreamState reads one state shard of the tenant's query, filtered by f,
// in byte order of key; an unknown query or shard reads as empty.
func (b *Broker) StreamState(ctx context.Context, shard combtype.StateShard, f combtype.StateFilter) ([]combtype.StateRow, error) {
	return b.st.StreamState(ctx, b.tenant, shard.QueryID, shard.PartitionID, f)
}

// StreamStateEach is StreamState a row at a time, in the same order and
// from one read snapshot, so that a large shard is never held whole: fn
// gets each row, whose Value is valid only until fn returns, and the read
// stops at fn's first error, which it returns. The snapshot is held until
// it returns, so fn should not wait on anything slow.
func (b *Broker) StreamStateEach(ctx context.Context, shard combtype.StateShard, f combtype.StateFilter, fn func(combtype.StateRow) error) error {
	return b.st.StreamStateEach(ctx, b.tenant, shard.QueryID, shard.PartitionID, f, fn)
}

// StreamCycle commits one step of a streaming query all or nothing: its
// state writes, sink pushes and source ack. A refused cycle is reported in
// the result's Err with nothing written. Its pushes go straight to the
// log: push maintenance does not buffer them, since a buffered sink
// message could not commit with the state and the ack.
func (b *Broker) StreamCycle(ctx context.Context, req combtype.CycleRequest) (combtype.CycleResult, error) {
	if err := checkCycle(req); err != nil {
		return combtype.CycleResult{Err: err}, nil // refused as the store refuses a cycle
	}
	res, err := b.st.Cycle(ctx, b.tenant, req)
	if err == nil && res.Err == nil {
		b.metrics.countPush(b.tenant, res.Pushes)
	}
	return res, err
}
