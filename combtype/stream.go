package combtype

import (
	"time"
)

// StreamQuery is a registered streaming query. Its operators run in the
// client; the store keeps its state and commits its cycles.
type StreamQuery struct {
	ID          string
	Tenant      string
	Name        string
	SourceQueue string
	SinkQueue   string // "" when the chain ends in foreach
	ConfigHash  string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// StreamRegistration is the outcome of RegisterStreamQuery.
type StreamRegistration struct {
	Query StreamQuery
	Fresh bool // the row was created by this call
	Reset bool // the hash changed and every state row was deleted
	// Conflict is set when the hash changed without reset: nothing was
	// written and Query is the stored row.
	Conflict bool
}

// StreamRegisterRequest registers a streaming query by name.
type StreamRegisterRequest struct {
	Name        string
	SourceQueue string
	SinkQueue   string
	ConfigHash  string
	Reset       bool
}

// StateFilter narrows a state read; the zero value reads the whole shard.
// The filters are AND-ed.
type StateFilter struct {
	Keys   []string // exact keys; empty = any
	Prefix string   // literal, case-sensitive key prefix; "" = any
	// RipeAtOrBefore, when set, keeps only values that are objects with a
	// numeric windowEnd at or before it (epoch ms).
	RipeAtOrBefore *float64
}

// StateRow is one key of a state shard. Value is raw JSON.
type StateRow struct {
	Key       string
	Value     []byte
	UpdatedAt time.Time
}

// State op types.
const (
	StateUpsert = "upsert"
	StateDelete = "delete"
)

// StateOp writes one key of a shard. Value is raw, valid JSON (upsert only).
type StateOp struct {
	Type  string
	Key   string
	Value []byte
}

// CycleAck acknowledges the source message a cycle consumed up to.
type CycleAck struct {
	TxnID   string
	LeaseID string // checked when not ""
	Status  string // "" = completed
	Count   int64  // messages covered; statistics only
	Error   string // dead-letter text for failed / dlq
}

// CycleRequest is one atomic step of a streaming query on one source
// partition: state writes, sink pushes and the source ack.
type CycleRequest struct {
	QueryID      string
	PartitionID  string // the state shard, and the source partition the ack names
	Group        string // "" = QueueModeGroup
	StateOps     []StateOp
	Push         []PushItem
	Ack          *CycleAck // nil: nothing consumed (idle flush)
	ReleaseLease bool
}

// CycleAckResult is the outcome of a committed cycle's ack.
type CycleAckResult struct {
	Count         int64
	LeaseReleased bool
	DLQ           bool
}

// CycleResult is a cycle's outcome. When Err is not nil the cycle was
// refused, nothing of it was written and the other fields are zero: Err is
// ErrQueryNotFound, ErrMessageNotFound, ErrInvalidLease, ErrAlreadyAcked,
// or wraps ErrInvalid with what was wrong in the request. When Skipped is
// not "" nothing was written either, though nothing is wrong with it.
type CycleResult struct {
	Err error
	// Skipped says why a cycle without an ack (an idle flush) was not
	// applied: what it would close is being closed, or has been, by
	// another cycle (see Broker.StreamCycle). One of the Skip* reasons.
	Skipped         string
	SourceQueue     string
	StateOpsApplied int
	Pushes          []PushResult
	Ack             *CycleAckResult
}

// StateShard names one state shard: a streaming query's state for one
// source partition.
type StateShard struct {
	QueryID     string
	PartitionID string // the source partition's uuid
}

// Why a cycle without an ack is skipped (CycleResult.Skipped).
const (
	SkipBatchInFlight = "a batch of this partition is in flight: its cycle closes what is due"
	SkipStateGone     = "a key it deletes is gone: another cycle closed it"
	SkipStateChanged  = "a key it deletes changed after it was read"
)
