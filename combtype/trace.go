package combtype

import (
	"time"
)

// TraceInput is one trace event.
type TraceInput struct {
	PartitionID string // the partition's uuid
	TxnID       string
	Group       string   // "" = QueueModeGroup
	Names       []string // names to file the trace under; may be empty
	EventType   string   // "" = "info"
	Data        []byte   // raw JSON
	WorkerID    string
}

// Trace is a stored trace event.
type Trace struct {
	ID          string
	TxnID       string
	PartitionID string // the partition's uuid
	Queue       string // "" when the queue no longer exists
	Partition   string
	Group       string
	EventType   string
	Data        []byte // raw JSON
	WorkerID    string
	Names       []string
	CreatedAt   time.Time
}

// TraceName is one trace name with what is filed under it.
type TraceName struct {
	Name     string
	Traces   int64
	Messages int64
	LastSeen time.Time
}
