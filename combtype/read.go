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
	Queue     string
	Partition string
	Namespace string
	Task      string
	Status    string    // "" or one of the Message* statuses
	From, To  time.Time // bounds on createdAt, inclusive
	Limit     int       // <= 0 means DefaultMessageLimit
	Offset    int
}

// DefaultMessageLimit is the page size of ListMessages.
const DefaultMessageLimit = 200

// MessageInfo is one message as the read views show it.
type MessageInfo struct {
	ID          string
	TxnID       string
	PartitionID string // the partition's uuid
	Partition   string
	Queue       string
	Namespace   string
	Task        string
	Priority    int64
	Offset      int64
	Status      string
	// QueueStatus is the status by the queue-mode cursor, "" without one.
	QueueStatus string
	// ConsumedBy counts the named groups whose cursor passed the message,
	// out of TotalGroups named groups with a cursor on its partition.
	ConsumedBy, TotalGroups int
	TraceID                 string
	ProducerSub             string
	CreatedAt               time.Time
	// LeaseExpiresAt is the expiry of the lease the message is processing
	// under; zero when it is not processing.
	LeaseExpiresAt time.Time
}

// ModeInfo says how the queues of a read are consumed.
type ModeInfo struct {
	HasQueueMode bool
	BusGroups    int    // distinct named groups
	Type         string // "queue", "bus", "hybrid" or "none"
}

// GroupPosition is one group's view of a message.
type GroupPosition struct {
	Group          string
	Consumed       bool
	LeaseExpiresAt time.Time // zero unless the message is in the group's live lease
}

// MessageDetail is one message with its payload and every group's view.
type MessageDetail struct {
	MessageInfo
	Payload      []byte
	IsEncrypted  bool
	ErrorMessage string // from the newest DLQ copy, "" if none
	RetryCount   int64
	QueueOptions QueueOptions
	Mode         ModeInfo
	Groups       []GroupPosition // by group name
}

// MessageRef names one stored message: its partition's uuid and its
// transactionId.
type MessageRef struct {
	PartitionID string
	TxnID       string
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
