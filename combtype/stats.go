package combtype

import (
	"time"
)

// MessageCounts are the six counters of the resource views, in messages.
// A partition's status is read from one cursor: its queue-mode cursor if
// it has one, else its least advanced named group; a partition no group
// has met is all pending. Total = Pending + Processing + Completed.
type MessageCounts struct {
	// Total is the messages stored: from the retention watermark to the
	// last offset. Retention lowers it; DLQ copies are not in it.
	Total int64
	// Pending is stored and neither completed nor under a live lease.
	Pending int64
	// Processing is under the status cursor's live lease.
	Processing int64
	// Completed is at or behind the status cursor's committed offset,
	// dead-lettered messages included (the cursor moved past them).
	Completed int64
	// Failed is always 0: a failed batch is pending again until its
	// retries run out, then it is dead-lettered. Kept for Queen's shape.
	Failed int64
	// DeadLetter is the DLQ rows of the partitions, which outlive
	// retention; not part of Total.
	DeadLetter int64
}

// PartitionStats is one partition with its counts and cursor totals.
type PartitionStats struct {
	Partition               // the partition itself: name, uuid, offsets
	Counts    MessageCounts // by the partition's status cursor
	// Oldest and Newest are the commit times of the first and last stored
	// segments; zero when the partition stores nothing.
	Oldest, Newest time.Time
	// TotalConsumed is the messages acked, summed over every group's
	// cursor on the partition (a replayed message counts again).
	TotalConsumed int64
	// BatchesConsumed is the acked batches, summed likewise.
	BatchesConsumed int64
	// LastConsumedAt is the newest ack time of any group's cursor; zero
	// when never consumed.
	LastConsumedAt time.Time
	// HasQueueMode is set when the queue-mode group (QueueModeGroup) has
	// a cursor on the partition.
	HasQueueMode bool
	// BusGroups counts the named groups with a cursor on the partition,
	// stored or implied by a subscription.
	BusGroups int
	// LeaseExpiresAt is the status cursor's live lease expiry, zero if none.
	LeaseExpiresAt time.Time
	// LiveLeases counts the groups holding a live lease on the partition.
	LiveLeases int
}

// QueueStats is a queue with its partitions and summed counts.
type QueueStats struct {
	Queue                       // the queue itself: name, namespace, task, options
	Partitions []PartitionStats // in creation order; a page of them where paged
	// PartitionCount is the number of the queue's partitions, which
	// Partitions may hold a page of.
	PartitionCount int
	// Counts are the partitions' counts summed (all of them, even when
	// Partitions holds a page).
	Counts MessageCounts
	// Evicted is how many messages retention has removed from the
	// queue's partitions (the offsets below each one's log start),
	// summed as Counts are.
	Evicted int64
	// HasQueueMode is set when any partition has a queue-mode cursor.
	HasQueueMode bool
	BusGroups    int // distinct named groups with a cursor on the queue
	// Summarized is set when Counts and PartitionCount of a large queue
	// (more than Options.LiveTotalsPartitions partitions) come from a sum
	// made in the background, StatsAge ago. A StatsAge below zero
	// (NotSummed) says no sum is made yet: Counts and PartitionCount are
	// zero until the background makes the first.
	Summarized bool
	// StatsAge is the age of that sum; 0 when Summarized is false,
	// NotSummed before the first sum.
	StatsAge time.Duration
}

// NotSummed is the StatsAge of a large queue's totals that the background
// has not summed yet; it reads as -1 second.
const NotSummed = -time.Second

// QueueFilter selects queues for ListQueueStats and QueuePage.
type QueueFilter struct {
	Namespace string // "" = any
	Task      string // "" = any
	// Name is one queue's exact name; "" = any.
	Name string
	// Search keeps the queues whose name, namespace or task holds it,
	// ASCII letters matched in either case; "" = any.
	Search string
	// Sort is the order of QueuePage (QueueSorts); "" is newest first.
	Sort string
	// Desc reverses Sort.
	Desc bool
	// Limit is the most queues returned; <= 0 = no limit.
	Limit int
	// Offset is the matching queues skipped first (with Limit > 0);
	// negative is 0.
	Offset int
}

// QueueSorts are the orders QueueFilter.Sort names: by name, namespace or
// task, and by the totals, which sort the tenant's Summary.
var QueueSorts = []string{"name", "namespace", "task", "created", "partitions", "total", "pending", "processing"}

// Overview is the tenant-wide summary of the resources views.
type Overview struct {
	// Queues and Partitions count the tenant's; Namespaces and Tasks the
	// distinct non-empty namespaces and tasks among its queues.
	Queues, Partitions, Namespaces, Tasks int64
	// Counts are every queue's counts summed.
	Counts MessageCounts
	// OffsetLag (messages) and TimeLag (seconds: age of the oldest
	// unconsumed segment) over every cursor.
	OffsetLag, TimeLag LagSummary
	// IngestedLastMinute is the number of messages committed in the minute
	// before Timestamp.
	IngestedLastMinute int64
	// Timestamp is the broker clock's time when the figures were summed.
	Timestamp time.Time
	// Summarized is set when the figures come from a sum made in the
	// background, StatsAge ago: a tenant with more partitions than
	// Options.LiveSummaryPartitions.
	Summarized bool
	// StatsAge is the age of that sum; 0 when Summarized is false,
	// NotSummed before the first sum.
	StatsAge time.Duration
}

// Summary is what the status and overview views say of a whole tenant:
// the Overview, and every queue with its totals (no partitions), newest
// first. Above a size it is summed in the background; Summarized and
// StatsAge then say so, and say it for every queue in Queues too. It is
// shared between readers: a caller must not modify it.
type Summary struct {
	Overview // the tenant-wide figures
	// Queues are the tenant's queues, newest first, each with its totals
	// and PartitionCount; their Partitions are nil.
	Queues []*QueueStats
}

// LeaseCounts are the live leases of a set of queues.
type LeaseCounts struct {
	Active     int64 // (partition, group) leases
	Partitions int64 // partitions holding at least one
}

// GroupedStats sums the queues sharing a namespace or a task.
// Queues without a namespace (or task) are left out; the list is sorted
// by Name.
type GroupedStats struct {
	Name       string        // the namespace or task
	Queues     int64         // queues that have it
	Partitions int64         // their partitions
	Counts     MessageCounts // their counts, summed
}

// LagSummary summarises one lag figure over every cursor; all zero when
// there is no cursor.
type LagSummary struct {
	// Avg is the mean, Median the middle value (the mean of the two
	// middle ones for an even count), Min and Max the extremes, in the
	// figure's unit. Past 65,536 cursors the median is read from
	// logarithmic buckets, within 0.2% of the exact one (exact for
	// offset lags below 512), so summing never holds every figure.
	Avg, Median, Min, Max float64
}

// SeriesFilter selects the queues and time range of IngestSeries.
type SeriesFilter struct {
	Queue     string // "" = any
	Namespace string // "" = any
	Task      string // "" = any
	// From and To bound the commit times counted, both inclusive; To
	// before From is ErrInvalid. The first bucket starts at From.
	From, To time.Time
	// Bucket is each point's width; <= 0 is ErrInvalid. Microseconds
	// below it are ignored.
	Bucket time.Duration
}

// SeriesPoint is the number of messages committed in [At, At+Bucket).
// Messages retention removed are not counted.
type SeriesPoint struct {
	At       time.Time // the bucket's start: From + i×Bucket
	Messages int64     // committed in the bucket; 0 when none
}

// QueueDepth is one queue's backlog, for metrics.
type QueueDepth struct {
	Tenant string // the queue's tenant; "" is the default tenant
	Queue  string // the queue's name
	// Stored is the number of messages stored; Depth the ones the status
	// cursor (queue mode, else the least advanced group) has not completed.
	Stored, Depth int64
	// GroupLag is each group's offset lag summed over the partitions.
	GroupLag map[string]int64
	// Summarized is set for a queue too large to sum on every scrape:
	// the figures come from a sum made in the background StatsAge ago.
	Summarized bool
	// StatsAge is the age of that sum; 0 when Summarized is false,
	// NotSummed before the first sum.
	StatsAge time.Duration
}

// DatabaseStats are SQLite's own page figures.
type DatabaseStats struct {
	// PageSize is bytes per page; PageCount the file's pages, so the
	// file is PageSize×PageCount bytes; FreelistCount the pages in it
	// that hold nothing (reused before the file grows; retention and
	// incremental vacuum return them to the file system).
	PageSize, PageCount, FreelistCount int64
	// JournalMode is SQLite's journal_mode: "wal" for a comb database.
	JournalMode string
}
