package combtype

import (
	"time"
)

// Defaults for DLQ reads and re-drives.
const (
	// DefaultDLQLimit is the page size of a DLQ listing that names none.
	DefaultDLQLimit = 100
	// MaxDLQLimit caps one page of the DLQ listing.
	MaxDLQLimit = 10000
	// DefaultRedriveLimit caps how many dead-lettered messages one re-drive
	// takes, so one call is one bounded commit; call again while Remaining > 0.
	DefaultRedriveLimit = 1000
	// MaxRedriveLimit is the most messages one re-drive may take.
	MaxRedriveLimit = 10000
	// MaxRedriveIDs is the most message ids one re-drive may name: as
	// many as it may take.
	MaxRedriveIDs = MaxRedriveLimit
)

// DLQFilter selects dead-lettered messages. Empty strings and nil times
// match everything.
type DLQFilter struct {
	Queue     string     // the queue's exact name; unknown matches nothing
	Group     string     // the group whose ack dead-lettered the message
	Partition string     // the partition's name
	From, To  *time.Time // bounds on the time the message failed, inclusive
	// Limit is the page size: <= 0 means DefaultDLQLimit, capped at
	// MaxDLQLimit. A page also stops after 4 MiB of payloads (always
	// holding at least one entry); page on with Offset.
	Limit int
	// Offset is the matching rows skipped first, newest failure first;
	// negative is 0.
	Offset int
}

// DLQEntry is one dead-lettered copy of a message.
type DLQEntry struct {
	RowID        int64     // the DLQ row's id
	ID           string    // the original message's id; what RedriveRequest.IDs names
	TxnID        string    // the original message's transactionId
	PartitionID  string    // the partition's uuid
	Queue        string    // the queue's name
	Partition    string    // the partition's name
	Group        string    // the group whose ack dead-lettered it
	ErrorMessage string    // the ack's error text
	RetryCount   int64     // failed rounds before it was dead-lettered
	Payload      []byte    // as pushed, decrypted
	TraceID      string    // as pushed; "" if none
	ProducerSub  string    // as pushed (PushItem.ProducerSub); "" if unknown
	Offset       int64     // its offset in its partition
	CreatedAt    time.Time // commit time of the original message
	FailedAt     time.Time // when it was dead-lettered
}

// RedriveRequest selects dead-lettered messages of one queue to append
// back to it.
type RedriveRequest struct {
	Queue     string   // required
	Group     string   // "" = rows of every group
	Partition string   // "" = every partition
	IDs       []string // message ids as ListDLQ reports them; nil = every matching row, empty = none
	Limit     int      // messages taken; <= 0 means DefaultRedriveLimit, capped at MaxRedriveLimit
}

// RedriveResult counts what a re-drive did.
type RedriveResult struct {
	Queue string // as in the request
	// Redriven is the number of new messages appended.
	Redriven int
	// Duplicates is the number of messages whose re-drive key already
	// existed: an earlier re-drive of the same DLQ row got through.
	Duplicates int
	// Deleted is the number of DLQ rows removed.
	Deleted int
	// Remaining is the number of DLQ rows still matching the request.
	Remaining int64
}

// Bounds of one DLQ purge.
const (
	// DefaultPurgeLimit caps how many DLQ rows one purge deletes, so one
	// call is one bounded commit; call again while Remaining > 0.
	DefaultPurgeLimit = 10000
	// MaxPurgeLimit is the most rows one purge may delete.
	MaxPurgeLimit = 100000
)

// PurgeRequest selects dead-lettered rows to delete for good.
type PurgeRequest struct {
	Queue     string     // the queue's exact name; "" = any
	Group     string     // the group whose ack dead-lettered the message; "" = any
	Partition string     // the partition's name; "" = any
	From, To  *time.Time // bounds on the time the message failed, inclusive
	IDs       []string   // message ids as ListDLQ reports them; nil = every matching row, empty = none
	// All must be set to purge with no filter at all: an empty request
	// would otherwise wipe the tenant's whole DLQ.
	All   bool
	Limit int // rows deleted; <= 0 means DefaultPurgeLimit, capped at MaxPurgeLimit
}

// PurgeResult counts what a purge did.
type PurgeResult struct {
	// Deleted is the number of DLQ rows removed.
	Deleted int64
	// Remaining is the number of rows still matching the request.
	Remaining int64
}

// Filtered reports whether req narrows the purge by anything.
func (req *PurgeRequest) Filtered() bool {
	return req.Queue != "" || req.Group != "" || req.Partition != "" || req.From != nil || req.To != nil || req.IDs != nil
}

// DLQCountFilter selects dead letters to count.
type DLQCountFilter struct {
	Queues   []string  // nil = every queue; empty = none
	From, To time.Time // bounds on the time the message failed, inclusive; zero = unbounded
}
