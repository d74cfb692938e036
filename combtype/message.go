package combtype

import (
	"time"
)

// Push statuses, in PushResult.Status.
const (
	StatusQueued    = "queued"    // appended to the log
	StatusDuplicate = "duplicate" // its transactionId is already stored in the partition
)

// PushItem is one message to append.
type PushItem struct {
	// Queue is the queue's name, required; the queue is created, with
	// DefaultQueueOptions, by its first push.
	Queue string
	// Partition is the partition's name; "" means DefaultPartition. Order
	// is kept within a partition, and a partition is leased to one
	// consumer of a group at a time.
	Partition string
	// Payload is the message: one JSON value, stored and delivered as
	// these bytes.
	Payload []byte
	// TxnID is the transactionId: a message whose id is already stored in
	// its partition is not stored again. "" gets a generated UUID.
	TxnID string
	// TraceID is carried with the message for the caller's tracing; ""
	// when none.
	TraceID string
	// ProducerSub names who pushed (a token's subject over HTTP); "" when
	// unknown.
	ProducerSub string
}

// PushResult is the outcome of one PushItem, in request order.
type PushResult struct {
	TxnID  string // as given, or generated
	Status string // StatusQueued, StatusDuplicate or StatusBuffered
	// MessageID is the message's id, derived from the database, the
	// partition and the offset (a duplicate answers the original's).
	MessageID   string
	PartitionID string // the partition's uuid
	TraceID     string // as given; "" if none
	Queue       string // the item's queue
	Offset      int64  // the message's offset in its partition; 0 when buffered
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
	// Queue is the queue's name; "" pops by Namespace/Task instead. An
	// unknown queue is nothing to deliver, not an error.
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
	// MaxBytes is the most payload bytes delivered; <= 0, or more than
	// MaxPopBytes, means MaxPopBytes. The first message is delivered
	// whatever its size. A server lowers it when many large replies are
	// being written at once (httpd/replybound.go).
	MaxBytes int64
	// AutoAck consumes what is delivered at once, with no lease to ack.
	AutoAck bool
	// SubscriptionMode and SubscriptionFrom decide where a group starts on
	// its first contact with the queue; later values are ignored. Mode is
	// "all" (every retained message), "new" (only messages pushed after
	// the first pop); From is "now" or a time (RFC 3339 or YYYY-MM-DD),
	// which beats the mode. Both empty is Options.DefaultSubscriptionMode.
	SubscriptionMode string
	SubscriptionFrom string // "now", RFC 3339 or YYYY-MM-DD; see SubscriptionMode
	// Wait parks the pop until something is deliverable or Timeout passes.
	Wait    bool
	Timeout time.Duration // 0 = answer at once; at most an hour
	// OnPark, when set, is called once, just before the pop first waits:
	// never for a pop that answers from its first look. A server uses it
	// to take the connection of a long-poll out of its HTTP stack while
	// it waits (httpd/parking.go).
	OnPark func()
}

// Message is one delivered message.
type Message struct {
	ID          string    // see PushResult.MessageID
	TxnID       string    // the transactionId an ack names
	PartitionID string    // the partition's uuid, which an ack names
	Partition   string    // the partition's name
	Queue       string    // the queue's name
	LeaseID     string    // the lease to ack under; "" with autoAck
	Group       string    // the consumer group it was delivered to
	Payload     []byte    // as pushed
	CreatedAt   time.Time // when its push committed
	TraceID     string    // as pushed; "" if none
	ProducerSub string    // as pushed (PushItem.ProducerSub); "" if unknown
	RetryCount  int64     // failed acks of its batch before this delivery; an expired lease is not one
	Offset      int64     // its offset in its partition
}

// PopResult is a delivered batch; Messages is empty when nothing was due.
type PopResult struct {
	Queue       string // the queue popped (with Namespace/Task: the first delivering)
	Partition   string // the first partition claimed
	PartitionID string // its uuid
	// LeaseID holds every message delivered until acked, extended
	// (LeaseExtend) or expired (the queue's LeaseTime); "" with autoAck.
	LeaseID           string
	Group             string    // the group popped for; QueueModeGroup when none was named
	PartitionsClaimed int       // partitions whose messages were delivered
	Messages          []Message // in offset order within each partition
	// FramesEvicted counts frames retention removed before this group
	// consumed them, skipped by this claim.
	FramesEvicted int64
	// WakeAt, when not zero and nothing was delivered, is the earliest time
	// something held back (a live lease, a delay, a window) becomes due.
	WakeAt time.Time
}

// Ack statuses.
const (
	AckCompleted = "completed" // done: the group's cursor moves past it
	AckSuccess   = "success"   // alias of completed
	// AckFailed gives the batch back for redelivery, counting a retry;
	// past the queue's RetryLimit it dead-letters the message instead.
	AckFailed = "failed"
	AckDLQ    = "dlq"   // dead-letters the message at once
	AckRetry  = "retry" // gives the batch back for redelivery without counting a retry
)

// AckItem acknowledges one delivered message.
type AckItem struct {
	TxnID       string // the message's transactionId (Message.TxnID)
	PartitionID string // the partition's uuid (Message.PartitionID)
	LeaseID     string // checked only when not ""
	Status      string // an Ack* status; "" means completed
	Error       string // reason for failed / dlq
	Group       string // "" = QueueModeGroup
}

// AckResult is the outcome of one AckItem, in request order.
type AckResult struct {
	TxnID   string // as in the AckItem
	Success bool   // the ack applied
	// Err says why an ack was refused: ErrInvalidLease or
	// ErrMessageNotFound; nil when it applied, or when its status was
	// unknown and it was ignored (Success false).
	Err           error
	Queue         string // the message's queue, when it was found
	Partition     string // and its partition's name
	LeaseReleased bool   // the group's lease on the partition ended with this ack
	DLQ           bool   // the message was dead-lettered
}

// TxOp is one operation of an atomic transaction: an ack or a push.
type TxOp struct {
	Type  string     // "ack" or "push"
	Ack   AckItem    // the ack of an "ack" op
	Items []PushItem // the items of a "push" op
}

// TxOpResult is the outcome of one TxOp.
type TxOpResult struct {
	Type   string       // the op's Type: "ack" or "push"
	Ack    *AckResult   // an ack op's result
	Pushes []PushResult // a push op's results, one per item
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
	LeaseID string // as asked
	Success bool   // the lease was live and now expires at ExpiresAt
	// Err is ErrLeaseNotFound or ErrLeaseExpired when nothing was
	// extended; nil on success.
	Err error
	// ExpiresAt is the lease's new expiry: the later of now+d and the
	// latest expiry it already had; zero unless Success.
	ExpiresAt time.Time
}
