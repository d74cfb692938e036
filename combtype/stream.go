package combtype

import (
	"time"
)

// StreamQuery is a registered streaming query. Its operators run in the
// client; the store keeps its state and commits its cycles.
type StreamQuery struct {
	// ID is a UUID given at the first registration and kept through
	// re-registrations and resets; cycles and state reads name it.
	ID          string
	Tenant      string // the tenant it belongs to; "" is the default tenant
	Name        string // unique within the tenant
	SourceQueue string // the queue its cycles consume and ack
	SinkQueue   string // "" when the chain ends in foreach
	// ConfigHash is the client's hash of the operator chain; a new hash
	// with the stored state is a conflict unless the registration resets.
	ConfigHash string
	CreatedAt  time.Time // the first registration, by the broker's clock
	UpdatedAt  time.Time // the latest registration that wrote the row
}

// StreamRegistration is the outcome of RegisterStreamQuery.
type StreamRegistration struct {
	Query StreamQuery // the stored query, as it is after the call
	Fresh bool        // the row was created by this call
	Reset bool        // the hash changed and every state row was deleted
	// Conflict is set when the hash changed without reset: nothing was
	// written and Query is the stored row.
	Conflict bool
}

// StreamRegisterRequest registers a streaming query by name.
type StreamRegisterRequest struct {
	Name        string // required
	SourceQueue string // required
	SinkQueue   string // "" when the chain ends in foreach
	ConfigHash  string // required; see StreamQuery.ConfigHash
	// Reset, when the stored hash differs, deletes every state row of the
	// query and stores the new hash (keeping its ID) instead of reporting
	// a conflict.
	Reset bool
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
	Key       string    // as a StateOp wrote it
	Value     []byte    // one JSON value, as the last upsert wrote it
	UpdatedAt time.Time // the cycle that last wrote it, by the broker's clock
}

// State op types.
const (
	StateUpsert = "upsert"
	StateDelete = "delete"
)

// StateOp writes one key of a shard. Value is raw, valid JSON (upsert only).
type StateOp struct {
	Type string // StateUpsert or StateDelete; anything else refuses the cycle (ErrInvalid)
	Key  string // the key in the cycle's shard; deleting a missing key is no error
	// Value is the upserted JSON; empty stores {}. Invalid JSON refuses
	// the cycle (ErrInvalid).
	Value []byte
}

// CycleAck acknowledges the source message a cycle consumed up to.
type CycleAck struct {
	TxnID   string // the source message's transactionId, required
	LeaseID string // checked when not ""
	Status  string // "" = completed
	Count   int64  // messages covered; statistics only
	Error   string // dead-letter text for failed / dlq
}

// CycleRequest is one atomic step of a streaming query on one source
// partition: state writes, sink pushes and the source ack.
type CycleRequest struct {
	QueryID     string     // StreamQuery.ID; unknown is ErrQueryNotFound in CycleResult.Err
	PartitionID string     // the state shard, and the source partition the ack names
	Group       string     // "" = QueueModeGroup
	StateOps    []StateOp  // applied in order to the shard
	Push        []PushItem // appended to their queues (the sink), checked as a push's items
	Ack         *CycleAck  // nil: nothing consumed (idle flush)
	// ReleaseLease ends the group's lease on the partition with the ack;
	// false keeps it for the rest of the batch.
	ReleaseLease bool
}

// CycleAckResult is the outcome of a committed cycle's ack.
type CycleAckResult struct {
	Count         int64 // CycleAck.Count, echoed
	LeaseReleased bool  // the group's lease on the partition ended with this ack
	DLQ           bool  // the source message was dead-lettered
}

// CycleResult is a cycle's outcome. When Err is not nil the cycle was
// refused, nothing of it was written and the other fields are zero: Err is
// ErrQueryNotFound, ErrMessageNotFound, ErrInvalidLease, ErrAlreadyAcked,
// or wraps ErrInvalid with what was wrong in the request. When Skipped is
// not "" nothing was written either, though nothing is wrong with it.
type CycleResult struct {
	Err error // why the cycle was refused; nil when it committed or was skipped
	// Skipped says why a cycle without an ack (an idle flush) was not
	// applied: what it would close is being closed, or has been, by
	// another cycle (see Broker.StreamCycle). One of the Skip* reasons.
	Skipped         string
	SourceQueue     string          // the query's source queue
	StateOpsApplied int             // len(StateOps) when committed
	Pushes          []PushResult    // one per pushed item, in order
	Ack             *CycleAckResult // nil when the request had no ack
}

// StateShard names one state shard: a streaming query's state for one
// source partition.
type StateShard struct {
	QueryID     string // StreamQuery.ID
	PartitionID string // the source partition's uuid
}

// Why a cycle without an ack is skipped (CycleResult.Skipped).
const (
	SkipBatchInFlight = "a batch of this partition is in flight: its cycle closes what is due"
	SkipStateGone     = "a key it deletes is gone: another cycle closed it"
	SkipStateChanged  = "a key it deletes changed after it was read"
)
