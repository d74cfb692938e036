package combtype

import (
	"time"
)

// Message statuses of the read views.
const (
	MessagePending    = "pending"
	MessageProcessing = "processing"
	MessageCompleted  = "completed"
	MessageDeadLetter = "dead_letter"
)

// MessageFilter selects messages for ListMessages. Empty strings match
// everything; zero times are unbounded.
type MessageFilter struct {
	Queue     string // a queue's exact name
	Partition string // a partition's name, in the queues selected
	Namespace string // the queues' namespace
	Task      string // the queues' task
	// Status is "" or one of the Message* statuses; any other value
	// matches nothing.
	Status   string
	From, To time.Time // bounds on createdAt, inclusive
	// Limit is the page size: <= 0 means DefaultMessageLimit, more than
	// broker.MaxMessageLimit means that.
	Limit int
	// Offset is the matching messages skipped first, newest first;
	// negative is 0.
	Offset int
}

// DefaultMessageLimit is the page size of ListMessages.
const DefaultMessageLimit = 200

// MessageInfo is one message as the read views show it.
type MessageInfo struct {
	// ID is the message's id, a UUID derived from the partition's uuid
	// and the offset: stable for the message's life, never reused.
	ID          string
	TxnID       string // its transactionId
	PartitionID string // the partition's uuid
	Partition   string // the partition's name
	Queue       string // the queue's name
	Namespace   string // the queue's namespace, "" if none
	Task        string // the queue's task, "" if none
	Priority    int64  // the queue's priority option
	Offset      int64  // its offset in the partition, from 0
	// Status is one of the Message* statuses, by the status cursor (the
	// queue-mode cursor, else the least advanced named group);
	// MessageDeadLetter when a DLQ row names it, whatever the cursor.
	Status string
	// QueueStatus is the status by the queue-mode cursor, "" without one.
	QueueStatus string
	// ConsumedBy counts the named groups whose cursor passed the message,
	// out of TotalGroups named groups with a cursor on its partition.
	ConsumedBy, TotalGroups int
	TraceID                 string    // as pushed; "" if none
	ProducerSub             string    // who pushed it (PushItem.ProducerSub); "" if unknown
	CreatedAt               time.Time // its segment's commit time
	// LeaseExpiresAt is the expiry of the lease the message is processing
	// under; zero when it is not processing.
	LeaseExpiresAt time.Time
}

// ModeInfo says how the queues of a read are consumed.
type ModeInfo struct {
	// HasQueueMode is set when the queue-mode group has a cursor on the
	// partitions read.
	HasQueueMode bool
	BusGroups    int    // distinct named groups
	Type         string // "queue", "bus", "hybrid" or "none"
}

// GroupPosition is one group's view of a message.
type GroupPosition struct {
	Group string // the group's name; QueueModeGroup for queue mode
	// Consumed is set when the group's committed offset is at or past the
	// message.
	Consumed       bool
	LeaseExpiresAt time.Time // zero unless the message is in the group's live lease
}

// MessageDetail is one message with its payload and every group's view.
type MessageDetail struct {
	MessageInfo // what the list shows of it
	// Payload is the message's JSON value, decrypted.
	Payload []byte
	// IsEncrypted is set when the queue has EncryptionEnabled and the
	// broker has a key: the payload is stored sealed.
	IsEncrypted  bool
	ErrorMessage string // from the newest DLQ copy, "" if none
	// RetryCount is the newest DLQ copy's retry count, or, for a message
	// the status cursor has not completed, the failed rounds of the batch
	// it is (again) part of; 0 otherwise.
	RetryCount   int64
	QueueOptions QueueOptions    // its queue's options
	Mode         ModeInfo        // how its partition is consumed
	Groups       []GroupPosition // every group with a cursor on its partition, by group name
}

// MessageRef names one stored message: its partition's uuid and its
// transactionId.
type MessageRef struct {
	PartitionID string // the partition's uuid (Partition.UUID)
	TxnID       string // the message's transactionId
}

// Page is one page of a listing, in the listing's stable order.
type Page struct {
	Limit  int // at most this many; <= 0 takes the listing's default
	Offset int // skipped first; negative is 0
	// After is PageInfo.Next of the previous page: the page starts right
	// after the row it names, whatever was added or removed meanwhile, and
	// costs no walk over the rows before it, as Offset does. It beats
	// Offset, on the listings that hand out Next.
	After string
}
