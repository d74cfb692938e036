package combtype

import (
	"time"
)

// MessageCounts are the six counters of the resource views.
type MessageCounts struct {
	Total      int64
	Pending    int64
	Processing int64
	Completed  int64
	Failed     int64
	DeadLetter int64
}

// PartitionStats is one partition with its counts and cursor totals.
type PartitionStats struct {
	Partition
	Counts MessageCounts
	// Oldest and Newest are the commit times of the first and last stored
	// segments; zero when the partition stores nothing.
	Oldest, Newest time.Time
	// Summed over every group's cursor on the partition.
	TotalConsumed   int64
	BatchesConsumed int64
	LastConsumedAt  time.Time // zero when never consumed
	HasQueueMode    bool
	BusGroups       int
	// LeaseExpiresAt is the status cursor's live lease expiry, zero if none.
	LeaseExpiresAt time.Time
	// LiveLeases counts the groups holding a live lease on the partition.
	LiveLeases int
}

// QueueStats is a queue with its partitions and summed counts.
type QueueStats struct {
	Queue
	Partitions []PartitionStats // in creation order; a page of them where paged
	// PartitionCount is the number of the queue's partitions, which
	// Partitions may hold a page of.
	PartitionCount int
	Counts         MessageCounts
	HasQueueMode   bool
	BusGroups      int // distinct named groups with a cursor on the queue
	// Summarized is set when Counts and PartitionCount of a large queue
	// come from a sum made in the background, StatsAge ago. A StatsAge
	// below zero (NotSummed) says no sum is made yet: Counts and
	// PartitionCount are zero until the background makes the first.
	Summarized bool
	StatsAge   time.Duration
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
	Desc   bool
	Limit  int // <= 0 = no limit
	Offset int
}

// QueueSorts are the orders QueueFilter.Sort names: by name, namespace or
// task, and by the totals, which sort the tenant's Summary.
var QueueSorts = []string{"name", "namespace", "task", "created", "partitions", "total", "pending", "processing"}

// Overview is the tenant-wide summary of the resources views.
type Overview struct {
	Queues, Partitions, Namespaces, Tasks int64
	Counts                                MessageCounts
	// OffsetLag (messages) and TimeLag (seconds: age of the oldest
	// unconsumed segment) over every cursor.
	OffsetLag, TimeLag LagSummary
	// IngestedLastMinute is the number of messages committed in the minute
	// before Timestamp.
	IngestedLastMinute int64
	Timestamp          time.Time
	// Summarized is set when the figures come from a sum made in the
	// background, StatsAge ago: a tenant too large to sum on every read.
	Summarized bool
	StatsAge   time.Duration
}

// Summary is what the status and overview views say of a whole tenant:
// the Overview, and every queue with its totals (no partitions), newest
// first. Above a size it is summed in the background; Summarized and
// StatsAge then say so, and say it for every queue in Queues too. It is
// shared between readers: a caller must not modify it.
type Summary struct {
	Overview
	Queues []*QueueStats
}

// LeaseCounts are the live leases of a set of queues.
type LeaseCounts struct {
	Active     int64 // (partition, group) leases
	Partitions int64 // partitions holding at least one
}

// GroupedStats sums the queues sharing a namespace or a task.
type GroupedStats struct {
	Name       string
	Queues     int64
	Partitions int64
	Counts     MessageCounts
}

// LagSummary summarises one lag figure over every cursor.
type LagSummary struct {
	Avg, Median, Min, Max float64
}

// SeriesFilter selects the queues and time range of IngestSeries.
type SeriesFilter struct {
	Queue     string // "" = any
	Namespace string // "" = any
	Task      string // "" = any
	From, To  time.Time
	Bucket    time.Duration // > 0
}

// SeriesPoint is the number of messages committed in [At, At+Bucket).
type SeriesPoint struct {
	At       time.Time
	Messages int64
}

// QueueDepth is one queue's backlog, for metrics.
type QueueDepth struct {
	Tenant string
	Queue  string
	// Stored is the number of messages stored; Depth the ones the status
	// cursor (queue mode, else the least advanced group) has not completed.
	Stored, Depth int64
	// GroupLag is each group's offset lag summed over the partitions.
	GroupLag map[string]int64
	// Summarized is set for a queue too large to sum on every scrape:
	// the figures come from a sum made in the background StatsAge ago.
	Summarized bool
	StatsAge   time.Duration
}

// DatabaseStats are SQLite's own page figures.
type DatabaseStats struct {
	PageSize, PageCount, FreelistCount int64
	JournalMode                        string
}
