package broker

import (
	"context"
	"time"

	"github.com/comb-broker/comb/store"
)

// Operator views: the dead-letter queue, resources, message reads and
// metrics. They read through the store's reader pool; the writes among
// them (re-drive, queue and message deletion) go through its writer.

// Types of the operator views, re-exported from the store.
type (
	DLQFilter      = store.DLQFilter
	DLQEntry       = store.DLQEntry
	RedriveRequest = store.RedriveRequest
	RedriveResult  = store.RedriveResult
)

// Limits of the DLQ views.
const (
	DefaultDLQLimit = store.DefaultDLQLimit
	MaxDLQLimit     = store.MaxDLQLimit
	MaxRedriveLimit = store.MaxRedriveLimit
)

// Metrics are the broker's counters since Open.
func (b *Broker) Metrics() *Metrics { return b.metrics }

// DeadLetters returns one page of dead-lettered messages, newest first, and
// how many match f in all.
func (b *Broker) DeadLetters(ctx context.Context, f DLQFilter) ([]DLQEntry, int64, error) {
	return b.st.ListDLQ(ctx, f)
}

// Redrive appends dead-lettered messages back to their queue as new
// messages and removes their DLQ rows, in one commit.
func (b *Broker) Redrive(ctx context.Context, req RedriveRequest) (*RedriveResult, error) {
	res, err := b.st.RedriveDLQ(ctx, req)
	if err == nil {
		b.metrics.pushed(req.Tenant, res.Queue, int64(res.Redriven))
	}
	return res, err
}

// Types of the resource views, re-exported from the store.
type (
	MessageCounts  = store.MessageCounts
	QueueStats     = store.QueueStats
	PartitionStats = store.PartitionStats
	QueueFilter    = store.QueueFilter
	Overview       = store.Overview
	LagSummary     = store.LagSummary
	GroupedStats   = store.GroupedStats
)

// Overview summarises tenant's queues, messages and lag.
func (b *Broker) Overview(ctx context.Context, tenant string) (*Overview, error) {
	return b.st.Overview(ctx, tenant)
}

// ListQueueStats lists tenant's queues, newest first, with their counts.
func (b *Broker) ListQueueStats(ctx context.Context, f QueueFilter) ([]*QueueStats, error) {
	return b.st.ListQueueStats(ctx, f)
}

// QueueStats returns one queue with per-partition counts, or
// store.ErrQueueNotFound.
func (b *Broker) QueueStats(ctx context.Context, tenant, name string) (*QueueStats, error) {
	return b.st.QueueStats(ctx, tenant, name)
}

// NamespaceStats sums tenant's queues per namespace.
func (b *Broker) NamespaceStats(ctx context.Context, tenant string) ([]GroupedStats, error) {
	return b.st.NamespaceStats(ctx, tenant)
}

// TaskStats sums tenant's queues per task.
func (b *Broker) TaskStats(ctx context.Context, tenant string) ([]GroupedStats, error) {
	return b.st.TaskStats(ctx, tenant)
}

// DeleteQueue removes a queue with all its data, cursors and DLQ rows; a
// queue of that name created afterwards starts empty. It reports whether
// the queue existed.
func (b *Broker) DeleteQueue(ctx context.Context, tenant, name string) (bool, error) {
	existed, err := b.st.DeleteQueue(ctx, tenant, name)
	if existed {
		b.metrics.forget(tenant, name)
	}
	return existed, err
}

// Types of the message reads, re-exported from the store.
type (
	MessageFilter = store.MessageFilter
	MessageInfo   = store.MessageInfo
	MessageDetail = store.MessageDetail
	ModeInfo      = store.ModeInfo
	GroupPosition = store.GroupPosition
)

// Message statuses of the read views.
const (
	MessagePending      = store.MessagePending
	MessageProcessing   = store.MessageProcessing
	MessageCompleted    = store.MessageCompleted
	MessageDeadLetter   = store.MessageDeadLetter
	DefaultMessageLimit = store.DefaultMessageLimit
	// MaxMessageLimit caps one page of ListMessages.
	MaxMessageLimit = 10000
)

// ListMessages returns one page of messages, newest first, decoding only
// the segments the page needs. A Limit <= 0 is DefaultMessageLimit, one
// above MaxMessageLimit is MaxMessageLimit; a negative Offset is 0.
func (b *Broker) ListMessages(ctx context.Context, f MessageFilter) ([]MessageInfo, ModeInfo, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultMessageLimit
	}
	f.Limit, f.Offset = min(f.Limit, MaxMessageLimit), max(f.Offset, 0)
	return b.st.ListMessages(ctx, f)
}

// GetMessage returns one message with its payload, or
// store.ErrMessageNotFound.
func (b *Broker) GetMessage(ctx context.Context, tenant, partitionID, txnID string) (*MessageDetail, error) {
	return b.st.GetMessage(ctx, tenant, partitionID, txnID)
}

// DeleteMessage tombstones one message so it is never delivered again; it
// reports false when no such stored message exists.
func (b *Broker) DeleteMessage(ctx context.Context, tenant, partitionID, txnID string) (bool, error) {
	return b.st.DeleteMessage(ctx, tenant, partitionID, txnID)
}

// Types of the status views, re-exported from the store.
type (
	SeriesFilter  = store.SeriesFilter
	SeriesPoint   = store.SeriesPoint
	QueueDepth    = store.QueueDepth
	DatabaseStats = store.DatabaseStats
)

// IngestSeries counts the messages committed per time bucket.
func (b *Broker) IngestSeries(ctx context.Context, f SeriesFilter) ([]SeriesPoint, error) {
	return b.st.IngestSeries(ctx, f)
}

// CountDLQ counts tenant's dead letters of the named queues (all when nil)
// that failed in [from, to].
func (b *Broker) CountDLQ(ctx context.Context, tenant string, queues []string, from, to time.Time) (int64, error) {
	return b.st.CountDLQ(ctx, tenant, queues, from, to)
}

// QueueDepths returns every queue's backlog and group lags, tenants summed.
func (b *Broker) QueueDepths(ctx context.Context) ([]QueueDepth, error) { return b.st.QueueDepths(ctx) }

// DatabaseStats reads SQLite's page figures.
func (b *Broker) DatabaseStats(ctx context.Context) (DatabaseStats, error) {
	return b.st.DatabaseStats(ctx)
}
