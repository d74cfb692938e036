package combtype

import (
	"time"
)

// Push statuses.
const (
	StatusQueued    = "queued"
	StatusDuplicate = "duplicate"
)

// PushItem is one message to append. Payload is raw JSON.
type PushItem struct {
	Queue       string
	Partition   string // "" means DefaultPartition
	Payload     []byte
	TxnID       string // "" gets a generated id
	TraceID     string
	ProducerSub string
}

// PushResult is the outcome of one PushItem, in request order.
type PushResult struct {
	TxnID       string
	Status      string // StatusQueued or StatusDuplicate
	MessageID   string
	PartitionID string
	TraceID     string
	Queue       string
	Offset      int64
}

// StatusBuffered is the push status of an item parked by push maintenance.
const StatusBuffered = "buffered"

// Bounds on one pop, so that a single request cannot pull a whole log into
// memory; a client asking for more gets this much and pops again.
const (
	MaxPopBatch      = 10000
	MaxPopPartitions = 1000
	// MaxPopBytes bounds the payload bytes of one pop; a pop always
	// delivers at least one message, however large.
	MaxPopBytes = 4 << 20
)

// QueueModeGroup is the cursor every pop without a consumer group shares;
// an ack naming no group acks on it.
const QueueModeGroup = "__QUEUE_MODE__"

// PopRequest asks for up to Batch messages of one queue, or of the queues
// matching Namespace/Task when Queue is "".
type PopRequest struct {
	Queue     string
	Partition string // "" = any partition
	Namespace string // with Queue "", pop from the queues of this namespace
	Task      string // with Queue "", pop from the queues of this task
	Group     string // consumer group; "" = QueueModeGroup
	// Batch is the most messages delivered; <= 0 means 1, and more than
	// MaxPopBatch means MaxPopBatch.
	Batch int
	// Partitions is the most partitions claimed under one lease; <= 0
	// means 1.
	Partitions int
	// AutoAck consumes what is delivered at once, with no lease to ack.
	AutoAck bool
	// SubscriptionMode and SubscriptionFrom decide where a group starts on
	// its first contact with the queue; later values are ignored. Mode is
	// "all" (every retained message), "new" (only messages pushed after
	// the first pop); From is "now" or a time (RFC 3339 or YYYY-MM-DD),
	// which beats the mode. Both empty is Options.DefaultSubscriptionMode.
	SubscriptionMode string
	SubscriptionFrom string
	// Wait parks the pop until something is deliverable or Timeout passes.
	Wait    bool
	Timeout time.Duration // 0 = answer at once; at most an hour
}

// Message is one delivered message.
type Message struct {
	ID          string
	TxnID       string
	PartitionID string
	Partition   string
	Queue       string
	LeaseID     string // "" with autoAck
	Group       string
	Payload     []byte
	CreatedAt   time.Time
	TraceID     string
	ProducerSub string
	RetryCount  int64
	Offset      int64
}

// PopResult is a delivered batch; Messages is empty when nothing was due.
type PopResult struct {
	Queue             string
	Partition         string
	PartitionID       string
	LeaseID           string
	Group             string
	PartitionsClaimed int
	Messages          []Message
	// FramesEvicted counts frames retention removed before this group
	// consumed them, skipped by this claim.
	FramesEvicted int64
	// WakeAt, when not zero and nothing was delivered, is the earliest time
	// something held back (a live lease, a delay, a window) becomes due.
	WakeAt time.Time
}

// Ack statuses.
const (
	AckCompleted = "completed"
	AckSuccess   = "success" // alias of completed
	AckFailed    = "failed"
	AckDLQ       = "dlq"
	AckRetry     = "retry"
)

// AckItem acknowledges one delivered message.
type AckItem struct {
	TxnID       string
	PartitionID string // the partition's uuid
	LeaseID     string // checked only when not ""
	Status      string // "" means completed
	Error       string // reason for failed / dlq
	Group       string // "" = QueueModeGroup
	// HeldLeases are the leases the caller holds (a transaction's
	// requiredLeases). In a transaction, an item without LeaseID may touch
	// a cursor under a live lease only when that lease is among them.
	HeldLeases []string
}

// AckResult is the outcome of one AckItem, in request order.
type AckResult struct {
	TxnID   string
	Success bool
	// Err says why an ack was refused: ErrInvalidLease or
	// ErrMessageNotFound; nil when it applied, or when its status was
	// unknown and it was ignored (Success false).
	Err           error
	Queue         string
	Partition     string
	LeaseReleased bool
	DLQ           bool
}

// TxOp is one operation of an atomic transaction: an ack or a push.
type TxOp struct {
	Type  string // "ack" or "push"
	Ack   AckItem
	Items []PushItem
}

// TxOpResult is the outcome of one TxOp.
type TxOpResult struct {
	Type   string
	Ack    *AckResult
	Pushes []PushResult
}

// TxError is a transaction refused as a whole; nothing of it was written.
type TxError struct {
	// Op is the type of the operation that failed: "ack", "push", or the
	// unknown type given.
	Op string
	// Err is why: the failed ack's AckResult.Err (nil for an ack whose
	// status is unknown), a push's error wrapping ErrInvalid, or ErrInvalid
	// for an unknown operation type.
	Err error
}

func (e *TxError) Error() string {
	if e.Err == nil {
		return e.Op + " operation failed"
	}
	return e.Op + " operation failed: " + e.Err.Error()
}

// Unwrap returns Err.
func (e *TxError) Unwrap() error { return e.Err }

// LeaseExtension is the outcome of extending one lease.
type LeaseExtension struct {
	LeaseID string
	Success bool
	// Err is ErrLeaseNotFound or ErrLeaseExpired when nothing was
	// extended; nil on success.
	Err       error
	ExpiresAt time.Time
}
