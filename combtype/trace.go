package combtype

import (
	"time"
)

// TraceInput is one trace event.
// Names, WorkerID and the IDs obey broker.MaxNameLength, EventType 100
// characters, Data the payload rules (docs/limits.md).
type TraceInput struct {
	PartitionID string   // the partition's uuid
	TxnID       string   // the message's transactionId; unknown is ErrMessageNotFound
	Group       string   // "" = QueueModeGroup
	Names       []string // names to file the trace under; may be empty
	EventType   string   // "" = "info"
	Data        []byte   // raw JSON
	WorkerID    string   // who handled the message; "" = none
}

// Trace is a stored trace event.
type Trace struct {
	ID          string    // a UUID, what TraceRecord returned
	TxnID       string    // the message's transactionId
	PartitionID string    // the partition's uuid
	Queue       string    // "" when the queue no longer exists
	Partition   string    // the partition's name; "" when it no longer exists
	Group       string    // as recorded; QueueModeGroup when none was named
	EventType   string    // as recorded; "info" when none was named
	Data        []byte    // raw JSON
	WorkerID    string    // as recorded; "" when none
	Names       []string  // the names it is filed under, sorted, without repeats
	CreatedAt   time.Time // when it was recorded, by the broker's clock
}

// TraceName is one trace name with what is filed under it.
type TraceName struct {
	Name     string    // as TraceInput.Names gave it
	Traces   int64     // traces filed under it
	Messages int64     // distinct messages those traces are about
	LastSeen time.Time // the newest of those traces' CreatedAt
}
